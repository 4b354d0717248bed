"""mx.mod.Module with kvstore='dist_sync' over 2 processes trains like one process on the global batch (MXNet's
Module semantics: gradients summed over workers, rescaled by 1 / (batch_size * num_workers)), and every rank
starts from rank 0's parameters."""
import numpy as np

from ._mpirun import run

JOB = """
import sys
import numpy as np
import mixnet as mx

out = sys.argv[1]
kv = mx.kv.create("dist_sync")
rank, n = kv.rank, kv.num_workers
rng = np.random.default_rng(0)
x_all = rng.standard_normal((8 * n, 5)).astype(np.float32)
y_all = rng.integers(0, 3, 8 * n).astype(np.float32)

def net():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")

def train(store, x, y, seed):
    mx.random.seed(seed)                  # ranks start from different values: init must broadcast rank 0's
    mod = mx.mod.Module(net(), data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(kvstore=store, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    for _ in range(3):
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    return mod.get_params()[0]

mine = slice(8 * rank, 8 * (rank + 1))
params = train(kv, x_all[mine], y_all[mine], seed=rank)
np.savez(f"{out}/rank{rank}.npz", **{k: v.asnumpy() for k, v in params.items()})
if rank == 0:
    mx.random.seed(0)
    ref = train("local", x_all, y_all, seed=0)
    np.savez(f"{out}/reference.npz", **{k: v.asnumpy() for k, v in ref.items()})
"""


def test_module_dist_sync_matches_one_process_on_the_global_batch(tmp_path):
    run(JOB, 2, args=[tmp_path], timeout=90, check=True)
    with np.load(tmp_path / "reference.npz") as f:
        reference = dict(f)
    for rank in range(2):
        with np.load(tmp_path / f"rank{rank}.npz") as f:
            got = dict(f)
        assert sorted(got) == sorted(reference)
        for name in reference:
            np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-6,
                                       err_msg=f"rank {rank}: {name} differs from one-process training")
