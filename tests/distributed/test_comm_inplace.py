"""Comm.allreduce_inplace_: arrays back to back in one buffer are summed where they lie (in bucket-sized slices),
others through the buckets and copied back; non-finite sums are reported by index."""
import json

import numpy as np

from mixnet.distributed import comm
from ._mpirun import run


def test_adjacent_span_finds_back_to_back_views_only():
    flat = np.arange(10, dtype=np.float32)
    a, b, c = flat[0:4].reshape(2, 2), flat[4:7], flat[7:10]
    span = comm._adjacent_span([a, b, c])
    assert span is not None and np.shares_memory(span, flat) and span.size == 10
    assert comm._adjacent_span([b, c]).tolist() == flat[4:10].tolist()
    assert comm._adjacent_span([a, c]) is None                      # a gap
    assert comm._adjacent_span([b, a]) is None                      # out of order
    assert comm._adjacent_span([a, np.zeros(3, np.float32)]) is None     # another buffer
    assert comm._adjacent_span([flat[0:4], flat.astype(np.float64)[4:6]]) is None


JOB = """
import json, sys
import numpy as np
from mixnet.distributed import world
w = world()
out = {}
flat = np.arange(12, dtype=np.float32) * (w.rank + 1)
views = [flat[0:5], flat[5:6], flat[6:12].reshape(2, 3)]
w.allreduce_inplace_(views, bucket_bytes=8)                # slices of 2 values
out["span"] = flat.tolist()
apart = [np.full(3, w.rank + 1.0), np.full((2, 2), 10.0 * (w.rank + 1))]
w.allreduce_inplace_(apart, bucket_bytes=16)
out["apart"] = [a.tolist() for a in apart]
bad = np.ones(6, dtype=np.float32)
if w.rank == 1:
    bad[4] = np.nan
out["nonfinite"] = w.allreduce_inplace_([bad[0:3], bad[3:6]], check_finite=True)
with open(f"{sys.argv[1]}/rank{w.rank}.json", "w") as f:
    json.dump(out, f)
"""


def test_allreduce_inplace_sums_spans_and_separate_arrays(tmp_path):
    run(JOB, 2, args=[tmp_path], timeout=60, check=True)
    expected = (np.arange(12) * 3).tolist()
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert got["span"] == expected
        assert got["apart"] == [[3.0] * 3, [[30.0, 30.0], [30.0, 30.0]]]
        assert got["nonfinite"] == [1]
