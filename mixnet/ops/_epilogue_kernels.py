"""Numba loops for the GEMM epilogues of compiled graphs (ops/nn_epilogue.py, placed by symbol/epilogue.py): a
FullyConnected's bias and ReLU applied in one pass over the GEMM's result, and an activation's backward together
with the bias gradient (the column sums of its result) in one pass.

numpy needs a pass per op (bias add, then maximum; backward product, then the sum over rows) and each pass streams
the whole (rows, N) array through memory again; these loops touch each element once. Conventions as in
`_numba_kernels.py`: flat C-contiguous arrays indexed with `np.uintp`, outputs allocated by the caller, dtype
scalars passed in (a Python literal would promote float32 arithmetic to float64), and no transcendental functions
(no SVML here): sigmoid/tanh forwards stay numpy ufuncs. The float operations and their order are the eager
ops' (bias add then activation; the backward rules' products; the row sums row after row, as numpy reduces the
leading axis of a C-contiguous array), so results are the same; the feature-major loops (arrays kept as the
transpose of a C-contiguous one: symbol/epilogue.py) compute the same products, and sum the bias gradient in SIMD
partial sums (_row_sums), within float rounding of that order. `_fastpath.numba_kernels` says when they are
compiled: codegen/precompile.py compiles this module in its child together with `_numba_kernels`.
"""
import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher


@njit(cache=True)
def bias_relu(y, b, zero):
    """In place over y (rows * N,) with b (N,): y = max(y + b, 0), NaN staying NaN as with np.maximum."""
    n = b.shape[0]
    for i in range(y.shape[0] // n):
        base = i * n
        for j in range(n):
            v = y[np.uintp(base + j)] + b[np.uintp(j)]
            y[np.uintp(base + j)] = zero if v <= zero else v


@njit(cache=True)
def bias_relu_feature_major(y, b, zero):
    """bias_relu over a feature-major result: y flat (N * rows,), the C-contiguous transpose of the (rows, N)
    value, so the bias is one number per run of y."""
    rows = y.shape[0] // b.shape[0]
    for j in range(b.shape[0]):
        base, bj = j * rows, b[np.uintp(j)]
        for i in range(rows):
            v = y[np.uintp(base + i)] + bj
            y[np.uintp(base + i)] = zero if v <= zero else v


# The activations act_backward_bias covers, by the index it takes (a literal of the caller's: LLVM unswitches the
# loop on it, so each activation runs a branch-free loop of its own, as fast as a loop written for it alone).
BACKWARD_KINDS = ("relu", "sigmoid", "tanh")


@njit(cache=True)
def act_backward_bias(kind, g, d, one, dz, db):
    """dz = the activation's backward over flat (rows * N,) arrays, db (N,) = the sum of dz's rows. kind indexes
    BACKWARD_KINDS; d is the activation's output: dz = g * (d > 0) for relu, g * d * (1 - d) for sigmoid,
    g * (1 - d * d) for tanh (the products of the registry ops' gradient rules, in their order)."""
    n = db.shape[0]
    db[:] = 0
    for i in range(g.shape[0] // n):
        base = i * n
        for j in range(n):
            k = np.uintp(base + j)
            if kind == 0:
                v = g[k] * (d[k] > 0)
            elif kind == 1:
                v = (g[k] * d[k]) * (one - d[k])
            else:
                v = g[k] * (one - d[k] * d[k])
            dz[k] = v
            db[np.uintp(j)] += v


@njit(cache=True)
def act_backward_bias_feature_major(kind, g, d, one, dz, db):
    """act_backward_bias over feature-major arrays: g, d and dz flat (N * rows,), the C-contiguous transposes of
    the (rows, N) values; dz's products are act_backward_bias's, db[j] the sum of dz's run j (_row_sums)."""
    for i in range(g.shape[0]):
        k = np.uintp(i)
        if kind == 0:
            dz[k] = g[k] * (d[k] > 0)
        elif kind == 1:
            dz[k] = (g[k] * d[k]) * (one - d[k])
        else:
            dz[k] = g[k] * (one - d[k] * d[k])
    _row_sums(dz, one - one, db)


@njit(cache=True, fastmath={"reassoc"})
def _row_sums(x, zero, out):
    """out[j] = the sum of x's j-th run of x.shape[0] // out.shape[0] elements, in SIMD partial sums (reassoc:
    in row order, a run's one chain of dependent additions takes 5x as long): the order differs from a row-major
    column sum's, as numpy's pairwise sum does, within float rounding of it."""
    rows = x.shape[0] // out.shape[0]
    for j in range(out.shape[0]):
        total = zero
        for i in range(j * rows, (j + 1) * rows):
            total += x[np.uintp(i)]
        out[np.uintp(j)] = total


def loops():
    """Every loop of this module (Numba dispatchers), the helper the others call (_row_sums) included."""
    return [v for v in globals().values() if isinstance(v, Dispatcher)]


def warm_up(dtype):
    """Compiles (or loads from the cache) every loop for `dtype` with the argument types nn_epilogue.py passes:
    flat C-contiguous arrays of the dtype and dtype scalars. The background child of codegen/precompile.py runs
    it."""
    dt = np.dtype(dtype)
    flat, bias = np.ones(4, dt), np.ones(2, dt)
    bias_relu(flat.copy(), bias, dt.type(0))
    act_backward_bias(0, flat, flat, dt.type(1), np.empty_like(flat), np.empty_like(bias))
    bias_relu_feature_major(flat.copy(), bias, dt.type(0))
    act_backward_bias_feature_major(0, flat, flat, dt.type(1), np.empty_like(flat), np.empty_like(bias))
