"""One rank of test_dist_kvstore.py: calls every method of a 'dist_sync' KVStore and writes what it saw (values,
error types and messages) to OUT_DIR/rankR.json; the test checks them.

    mpiexec -n N python kv_job.py OUT_DIR
"""
import json
import sys

import numpy as np

import mixnet as mx
from mixnet.base import MXNetError


def main(out):
    seen = {}

    def error(name, fn):
        try:
            fn()
        except MXNetError as err:
            seen[name] = [type(err).__name__, str(err)]
        else:
            seen[name] = None

    kv = mx.kv.create("dist_sync_device")
    r, n = kv.rank, kv.num_workers
    seen["props"] = [kv.type, r, n, kv.num_dead_node(0), kv.is_capable("optimizer")]

    # init: rank 0's value everywhere (one call with several keys)
    kv.init(["a", "w"], [mx.nd.ones((2, 3)) * (r + 1), mx.nd.arange(4) * (r + 5)])
    a, b = mx.nd.zeros((2, 3)), mx.nd.zeros(4)
    kv.pull(["a", "w"], out=[a, b])
    seen["init"] = [a.asnumpy().tolist(), b.asnumpy().tolist()]

    # push: summed over the list (devices) and over the workers; the pushed arrays are unchanged
    pushed = [mx.nd.ones((2, 3)) * (r + 1), mx.nd.ones((2, 3), ctx=mx.cpu(1))]
    kv.push("a", pushed)
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    kv.pull("a", out=outs)
    seen["push"] = [o.asnumpy().tolist() for o in outs] + [pushed[0].asnumpy().tolist()]

    # pushpull into the values, and into out
    vals = [mx.nd.full(4, r), mx.nd.full(4, 10 * r)]
    kv.pushpull("w", vals)
    c = mx.nd.zeros((2, 3))
    kv.pushpull("a", mx.nd.ones((2, 3)), out=c)
    seen["pushpull"] = [v.asnumpy().tolist() for v in vals] + [c.asnumpy().tolist()]

    # broadcast: rank 0's value into out
    d = mx.nd.zeros(2)
    kv.broadcast("b", mx.nd.array([r, r + 1]), out=d)
    seen["broadcast"] = d.asnumpy().tolist()

    # many keys of mixed dtypes in tiny buckets: the sums are still right
    mx.config.DIST_BUCKET_MB = 1e-4       # ~100 bytes: several buckets per dtype, bigger arrays alone
    keys = [f"m{i}" for i in range(7)]
    values = [mx.nd.ones((i + 1, 5), dtype="float64" if i % 3 == 0 else "float32") * (r + i) for i in range(7)]
    kv.init(keys, [v.zeros_like() for v in values])
    kv.pushpull(keys, values)
    seen["buckets"] = [[np.dtype(v.dtype).name, float(v.asnumpy().sum())] for v in values]
    del mx.config.DIST_BUCKET_MB

    # set_optimizer: every worker runs the same update on its copy; states saved and loaded
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    kv.push("w", mx.nd.ones(4) * (r + 1))
    kv.push("w", mx.nd.ones(4))
    kv.pull("w", out=b)
    seen["optimizer"] = b.asnumpy().tolist()
    kv.save_optimizer_states(f"{out}/states{r}")
    kv.load_optimizer_states(f"{out}/states{r}")
    kv.push("w", mx.nd.ones(4))
    kv.pull("w", out=b)
    seen["optimizer_after_load"] = b.asnumpy().tolist()
    kv.barrier()

    # errors, each raised on every rank alike so the job goes on
    kv.set_gradient_compression({"type": "none"})
    error("compression", lambda: kv.set_gradient_compression({"type": "2bit", "threshold": 0.5}))
    error("async", lambda: mx.kv.create("dist_async"))
    error("sparse", lambda: kv.init("s", mx.nd.ones((4, 2)).tostype("row_sparse")))
    error("init_shape", lambda: kv.init("z", mx.nd.zeros((2, 2 + (r == 1)))))
    error("init_again", lambda: kv.init("a", mx.nd.zeros((2, 3))))
    error("push_keys", lambda: kv.push(["m1", "m2"] if r != 2 else ["m2", "m1"],
                                       [mx.nd.ones((2, 5)), mx.nd.ones((3, 5))] if r != 2 else
                                       [mx.nd.ones((3, 5)), mx.nd.ones((2, 5))]))
    nan = mx.nd.ones(4)
    if r == 1:
        nan[2] = np.nan
    error("nan", lambda: kv.push("w", nan))
    kv.pull("w", out=b)
    seen["after_nan"] = b.asnumpy().tolist()
    seen["props_end"] = [kv.num_dead_node(0)]
    with open(f"{out}/rank{r}.json", "w") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main(sys.argv[1])
