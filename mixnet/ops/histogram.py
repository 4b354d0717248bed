"""_histogram (mx.nd.histogram / mx.sym.histogram): counts of the data in bins, numpy's rule (each bin
half-open but the last, values outside ignored). Bins are either `bin_cnt` equal bins over `range` (over the
data's min..max when range is not given, as MXNet's Python wrapper then does with numpy) or the edges given as
the array input `bins`. Outputs: the counts (int64) and the edges (the data's dtype, or the edges' own)."""
import numpy as np

from .attrs import Attr, optional, parse_float_tuple, parse_int
from .registry import OpDef, OpTest, register
from ..base import OpError


def _inputs(attrs):
    return ("data",) if attrs["bin_cnt"] is not None else ("data", "bins")


def _check(bin_cnt, bins_shape, range_):
    if bin_cnt is not None:
        if bin_cnt < 1:
            raise ValueError(f"bin_cnt must be positive, got {bin_cnt}")
        if range_ is not None and (len(range_) != 2 or not range_[0] < range_[1]):
            raise ValueError(f"range must be (low, high) with low < high, got {range_}")
        return bin_cnt
    if len(bins_shape) != 1 or bins_shape[0] < 2:
        raise ValueError(f"bins must be a 1-d array of at least 2 edges, got shape {tuple(bins_shape)}")
    return bins_shape[0] - 1


def _infer(shapes, dtypes, bin_cnt, range):
    n = _check(bin_cnt, None if bin_cnt is not None else shapes[1], range)
    return [(n,), (n + 1,)], [np.dtype(np.int64), dtypes[0] if bin_cnt is not None else dtypes[1]]


def _k_histogram(xp, data, bins=None, *, bin_cnt, range):
    _check(bin_cnt, None if bins is None else bins.shape, range)
    if bins is None:
        counts, edges = xp.histogram(data, bins=bin_cnt, range=range)
        return counts.astype(np.int64), edges.astype(data.dtype)
    if bool((bins[1:] < bins[:-1]).any()):
        raise ValueError("bins must increase monotonically")
    counts, _ = xp.histogram(data, bins=bins)
    return counts.astype(np.int64), bins.copy()


def _ref(data, bins=None, bin_cnt=None, range=None):
    if bins is None:
        counts, edges = np.histogram(data, bins=bin_cnt, range=range)
        return counts, edges.astype(data.dtype)
    return np.histogram(data, bins=bins)[0], bins


register(OpDef(
    name="_histogram", kernel=_k_histogram, inputs=_inputs, num_outputs=2, differentiable=False,
    attrs={"bin_cnt": Attr(optional(parse_int), None), "range": Attr(optional(parse_float_tuple), None)},
    infer=_infer,
    test=OpTest(ref=_ref, grad=False, grad2=False, cases=(
        (((20,),), {"bin_cnt": 4, "range": (-1.0, 1.0)}), (((3, 5),), {"bin_cnt": 3}),
    )),
    doc="Histogram of the data: bin_cnt bins over range (default: the data's min..max), or the edges `bins`; "
        "returns (counts as int64, edges)."))


def histogram_function(array_type, histogram_op):
    """MXNet's `histogram(a, bins=10, range=None)` for mx.nd (array_type NDArray) or mx.sym (Symbol): `bins` is
    a bin count or an array of edges."""

    def histogram(a, bins=10, range=None):
        if isinstance(bins, array_type):
            return histogram_op(a, bins)
        if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
            return histogram_op(a, bin_cnt=int(bins), range=range)
        raise OpError(f"histogram: bins must be an integer or an {array_type.__name__} of edges, got "
                      f"{type(bins).__name__}")
    return histogram
