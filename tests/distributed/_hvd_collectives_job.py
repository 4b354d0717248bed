"""Rank program for test_horovod.py: Horovod's collectives and broadcast_parameters on N ranks. Each rank checks
its own results (the expected values follow from the rank numbers) and prints 'OK rank R' at the end."""
import sys

import numpy as np

import mixnet as mx
import mixnet.horovod as hvd
from mixnet.distributed import buckets
from mixnet.gluon import nn

try:
    hvd.size()
    raise AssertionError("size() before init() must raise")
except hvd.NotInitializedError as err:
    assert "hvd.init()" in str(err)

hvd.init()
n, r = hvd.size(), hvd.rank()
assert hvd.is_initialized() and n == int(sys.argv[1])
assert hvd.local_size() == n and hvd.local_rank() == r          # one host
assert hvd.cross_size() == 1 and hvd.cross_rank() == 0
assert hvd.mpi_enabled() and hvd.mpi_built() and not hvd.gloo_enabled() and not hvd.nccl_built()
ranks = np.arange(n, dtype=np.float64)
close = np.testing.assert_allclose

# allreduce: Average by default, Sum, the deprecated average= flag, Min/Max/Product, pre/postscale, in place or not
x = mx.nd.array(np.arange(6).reshape(2, 3) + r, dtype="float32")
before = x.asnumpy()
close(hvd.allreduce(x).asnumpy(), np.arange(6).reshape(2, 3) + ranks.mean())
close(x.asnumpy(), before)                                       # allreduce leaves its input alone
close(hvd.allreduce(x, op=hvd.Sum, name="s").asnumpy(), n * np.arange(6).reshape(2, 3) + ranks.sum())
close(hvd.allreduce(x, average=False).asnumpy(), n * np.arange(6).reshape(2, 3) + ranks.sum())
close(hvd.allreduce(x, op=hvd.Max).asnumpy(), np.arange(6).reshape(2, 3) + n - 1)
close(hvd.allreduce(x, op=hvd.Min).asnumpy(), np.arange(6).reshape(2, 3))
close(hvd.allreduce(mx.nd.array([r + 1.0]), op=hvd.Product).asnumpy(), [np.prod(ranks + 1)])
close(hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5).asnumpy(),
      n * np.arange(6).reshape(2, 3) + ranks.sum(), rtol=1e-6)
y = hvd.allreduce_(x, op=hvd.Average, priority=3)
assert y is x
close(x.asnumpy(), np.arange(6).reshape(2, 3) + ranks.mean())
for bad, message in [(dict(op=hvd.Adasum), "not supported"), (dict(op=hvd.Sum, average=True), "supersedes")]:
    try:
        hvd.allreduce(x, **bad)
        raise AssertionError(bad)
    except (ValueError, mx.base.MXNetError) as err:
        assert message in str(err), err
try:
    hvd.allreduce(mx.nd.array([r], dtype="int32"))
    raise AssertionError("integer average must raise")
except mx.base.MXNetError as err:
    assert "op=hvd.Sum" in str(err)
assert hvd.allreduce(mx.nd.array([r], dtype="int64"), op=hvd.Sum).asnumpy().tolist() == [ranks.sum()]

# grouped allreduce (one bucket per dtype at the default cap); then the bucketing itself with a tiny cap: many
# arrays packed into several buckets, one larger than the cap reduced where it lies, two dtypes
tensors = [mx.nd.full((k + 1,), r + k, dtype="float32") for k in range(40)]
tensors.append(mx.nd.full((3000,), float(r), dtype="float64"))
out = hvd.grouped_allreduce(tensors, op=hvd.Sum)
bufs = [np.full(k + 1, r + k, dtype=np.float32 if k % 3 else np.float64) for k in range(40)]
bufs.append(np.full(100, float(r)))
assert buckets.allreduce_many_(bufs, bucket_bytes=64) is bufs
for k in range(40):
    close(bufs[k], np.full(k + 1, ranks.sum() + n * k))
close(bufs[40], np.full(100, ranks.sum()))
for k in range(40):
    close(out[k].asnumpy(), np.full(k + 1, ranks.sum() + n * k))
    close(tensors[k].asnumpy(), np.full(k + 1, r + k))
close(out[40].asnumpy(), np.full(3000, ranks.sum()))
assert hvd.grouped_allreduce_(tensors)[0] is tensors[0]
close(tensors[5].asnumpy(), np.full(6, ranks.mean() + 5))

# allgather: first dimensions differ between ranks
g = hvd.allgather(mx.nd.array(np.full((r + 1, 2), r, dtype=np.float32)))
assert g.shape == (n * (n + 1) // 2, 2)
close(g.asnumpy()[:, 0], np.concatenate([np.full(k + 1, k) for k in range(n)]))
if n > 1:
    try:
        hvd.allgather(mx.nd.zeros((1, 2 + r)))
        raise AssertionError("mismatched trailing dims must raise")
    except mx.base.MXNetError as err:
        assert "only the first dimension may differ" in str(err)

# broadcast from the last rank, in place and not
root = n - 1
b = mx.nd.array([r, r * 10.0])
close(hvd.broadcast(b, root_rank=root).asnumpy(), [root, root * 10.0])
close(b.asnumpy(), [r, r * 10.0])
assert hvd.broadcast_(b, root, name="b") is b
close(b.asnumpy(), [root, root * 10.0])
assert hvd.broadcast_object({"from": r, "list": [1, 2]}, root_rank=root) == {"from": root, "list": [1, 2]}
assert hvd.allgather_object(r * 2) == [2 * k for k in range(n)]
try:
    hvd.broadcast_object(object(), root_rank=r)
    raise AssertionError("a non-JSON object must raise")
except mx.base.MXNetError as err:
    assert "not pickles" in str(err)

# broadcast_parameters: rank-dependent initial values become rank 0's; deferred-init parameters get rank 0's at
# their first forward; a dict of NDArrays (Module.get_params() style)
mx.random.seed(100 + r)
net = nn.HybridSequential()
net.add(nn.Dense(4, in_units=3), nn.Dense(2))                   # the second layer's shape is inferred
net.initialize(mx.init.Uniform(1.0))
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
net(mx.nd.ones((1, 3)))
values = {name: p.data().asnumpy() for name, p in net.collect_params().items()}
for name, v in values.items():
    everyone = hvd.allgather(mx.nd.array(v[None]))
    for k in range(n):
        close(everyone.asnumpy()[k], v, err_msg=name)
arg = {"w": mx.nd.full((2, 2), r), "b": mx.nd.full((3,), r)}
hvd.broadcast_parameters(arg, root_rank=root)
close(arg["w"].asnumpy(), np.full((2, 2), root))
close(arg["b"].asnumpy(), np.full(3, root))

# a model that differs between ranks is refused before any parameter moves
if n > 1:
    odd = nn.Dense(3 + r, in_units=2)
    odd.initialize()
    try:
        hvd.broadcast_parameters(odd.collect_params())
        raise AssertionError("different shapes must raise")
    except mx.base.MXNetError as err:
        assert "differ at entry" in str(err) and "same model" in str(err), err

hvd.shutdown()
assert not hvd.is_initialized()
print(f"OK rank {r}", flush=True)
