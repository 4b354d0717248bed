"""The numpy fast paths of the convolution kernels (1-D and 2-D, float32/float64) and of max pooling's backward,
built on the Numba loops of `_numba_kernels`; `nn_conv` calls them when `_fastpath.numba_kernels` allows (numpy
arrays of one float dtype) and keeps its generic xp code for everything else.

The convolution uses the generic path's layouts (columns (C*K, N*P), gradient (F, N*P)) but works a block of
samples at a time: a block's columns stay in cache between the Numba im2col / col2im loop that writes or reads
them and the block's GEMM. Blocks hold about _BLOCK_COLUMNS GEMM columns (output positions) and at most _BLOCK
column elements (2 MiB of float32). Measured interleaved on LeNet's two convolutions, this beat both 128K-element
blocks and whole-batch GEMMs in all six kernels (conv2 forward 9.6 ms against 11.4 and 11.3; conv1 weight
gradient 3.1 against 4.5 and 4.5). The temporaries live in per-thread workspaces (`_fastpath.workspace`: no page
faults), and the forward's NCHW transpose adds the bias in the same pass. 1-D convolutions and pooling run as 2-D
with a unit height.

Each function takes `dest`: an out= buffer (writes_out: a planned buffer under static_alloc, or a parameter's
gradient buffer) that `nn_conv` has checked is C-contiguous, of the result's shape and dtype and apart from the
inputs; the result is written straight into it (the transposing pass, col2im, the weight-gradient GEMM or its
transpose, the pooling loop) instead of into a fresh array. Without one the functions allocate the result.
"""
import numpy as np

from . import _fastpath

_BLOCK = 1 << 19
_BLOCK_COLUMNS = 4096


def _as_2d(shape, kernel, stride, dilate, pad):
    """1-D geometry as 2-D with a unit height."""
    if len(kernel) == 1:
        return (1,) + tuple(shape), (1,) + kernel, (1,) + stride, (1,) + dilate, (0,) + pad
    return tuple(shape), kernel, stride, dilate, pad


def _unit_height(spatial):
    return (1,) + tuple(spatial) if len(spatial) == 1 else tuple(spatial)


class _Blocked:
    """The 2-D geometry of one convolution and its sample blocks."""

    def __init__(self, n, c, spatial, out, kernel, stride, dilate, pad, group):
        self.spatial, self.k, self.s, self.d, self.p = _as_2d(spatial, kernel, stride, dilate, pad)
        self.o = _unit_height(out)
        self.c, self.group = c, group
        self.npos = self.o[0] * self.o[1]
        per_sample = c * self.k[0] * self.k[1] * self.npos
        step = -(-_BLOCK_COLUMNS // max(self.npos, 1))                 # enough columns for an efficient GEMM
        step = max(1, min(n, step, _BLOCK // max(per_sample, 1)))      # within the cache budget
        self.blocks = [(n0, min(n, n0 + step)) for n0 in range(0, n, step)]

    def im2col(self, nk, x4, n0, n1):
        """(group, Cg*K, M*P) columns of samples n0..n1 in the 'cols' workspace."""
        k, s, d, p = self.k, self.s, self.d, self.p
        cols = _fastpath.workspace("cols", (self.c,) + k + (n1 - n0,) + self.o, x4.dtype)
        nk.im2col(x4, n0, k[0], k[1], s[0], s[1], d[0], d[1], p[0], p[1], cols)
        return cols.reshape(self.group, -1, (n1 - n0) * self.npos)

    def grad_cols(self, g3, n0, n1):
        """(group, Fg, M*P) copy of g3[n0:n1] (N, F, P) transposed, in the 'grad' workspace."""
        f = g3.shape[1]
        gm = _fastpath.workspace("grad", (f, n1 - n0, self.npos), g3.dtype)
        np.copyto(gm, g3[n0:n1].transpose(1, 0, 2))
        return gm.reshape(self.group, f // self.group, -1)


def _gemm_into(a, b, out):
    """out[i] = a[i] @ b[i] for each group i, written in place (a[i], b[i] may be transposed views)."""
    for i in range(a.shape[0]):
        np.matmul(a[i], b[i], out=out[i])
    return out


# Measured with this machine's OpenBLAS on LeNet's conv2 blocks (Cg*K = 500, F = 50, 1024 columns): the forward
# and weight-gradient GEMMs ran 20-35% faster when F is the fast (last) axis of their output, cols.T @ w.T and
# cols @ grad.T, than as w @ cols and grad @ cols.T; with a short contraction (conv1, Cg*K = 25) the first
# form was as fast or faster. The data-gradient GEMM is faster as w.T @ grad.
_F_LAST_MIN_K = 64


def _result(dest, shape, dtype):
    return np.empty(shape, dtype=dtype) if dest is None else dest


def conv_forward_fast(nk, x, w, bias, out, kernel, stride, dilate, pad, group, dest=None):
    (n, c), f = x.shape[:2], w.shape[0]
    fg = f // group
    geo = _Blocked(n, c, x.shape[2:], out, kernel, stride, dilate, pad, group)
    x4 = np.ascontiguousarray(x).reshape((n, c) + geo.spatial)
    wm = w.reshape(group, fg, -1)
    f_last = wm.shape[2] >= _F_LAST_MIN_K
    res = _result(dest, (n, f) + tuple(out), x.dtype)
    res4 = res.reshape(n, group, fg, geo.npos)
    b = None if bias is None else bias.astype(x.dtype, copy=False).reshape(group, fg, 1)
    for n0, n1 in geo.blocks:
        m = n1 - n0
        cols = geo.im2col(nk, x4, n0, n1)                                      # g, Cg*K, M*P
        if m == 1 and not f_last:                 # one sample: the GEMM's (g, Fg, P) is the result's layout
            _gemm_into(wm, cols, res4[n0])
            if b is not None:
                res4[n0] += b
            continue
        if f_last:
            y = _fastpath.workspace("gemm", (group, m * geo.npos, fg), x.dtype)
            _gemm_into(cols.transpose(0, 2, 1), wm.transpose(0, 2, 1), y)     # g, M*P, Fg
            y4 = y.reshape(group, m, geo.npos, fg).transpose(1, 0, 3, 2)
        else:
            y = _fastpath.workspace("gemm", (group, fg, m * geo.npos), x.dtype)
            _gemm_into(wm, cols, y)                                            # g, Fg, M*P
            y4 = y.reshape(group, fg, m, geo.npos).transpose(2, 0, 1, 3)
        if b is None:                                                          # the NCHW transpose (+ bias)
            np.copyto(res4[n0:n1], y4)
        else:
            np.add(y4, b, out=res4[n0:n1])
    return res


def conv_data_grad_fast(nk, g, w, shape, kernel, stride, dilate, pad, group, dest=None):
    n, f = g.shape[:2]
    c = w.shape[1] * group
    geo = _Blocked(n, c, shape, g.shape[2:], kernel, stride, dilate, pad, group)
    g3 = g.reshape(n, f, geo.npos)
    wt = w.reshape(group, f // group, -1).transpose(0, 2, 1)                  # g, Cg*K, Fg
    res = _result(dest, (n, c) + tuple(shape), g.dtype)                        # col2im overwrites every sample
    res4 = res.reshape((n, c) + geo.spatial)
    k, s, d, p = geo.k, geo.s, geo.d, geo.p
    for n0, n1 in geo.blocks:
        gm = geo.grad_cols(g3, n0, n1)                                         # g, Fg, M*P
        cols = _fastpath.workspace("cols", (c,) + k + (n1 - n0,) + geo.o, g.dtype)
        _gemm_into(wt, gm, cols.reshape(group, -1, gm.shape[2]))
        nk.col2im(cols, n0, s[0], s[1], d[0], d[1], p[0], p[1], res4)
    return res


def conv_weight_grad_fast(nk, x, g, kernel, stride, dilate, pad, group, dest=None):
    """The weight gradient; the F-last orientation sums the blocks' GEMMs in a workspace and writes the result
    once, transposed, into dest; the other sums straight into dest."""
    (n, c), f = x.shape[:2], g.shape[1]
    fg, cgk = f // group, (c // group) * int(np.prod(kernel))
    geo = _Blocked(n, c, x.shape[2:], g.shape[2:], kernel, stride, dilate, pad, group)
    x4 = np.ascontiguousarray(x).reshape((n, c) + geo.spatial)
    g3 = g.reshape(n, f, geo.npos)
    f_last = cgk >= _F_LAST_MIN_K
    res = _result(dest, (f, c // group) + tuple(kernel), x.dtype)
    acc = _fastpath.workspace("dw", (group, cgk, fg), x.dtype) if f_last else res.reshape(group, fg, cgk)
    part = _fastpath.workspace("dw-part", acc.shape, x.dtype) if len(geo.blocks) > 1 else None
    if not geo.blocks:                                                         # an empty batch
        acc[...] = 0
    for n0, n1 in geo.blocks:
        cols = geo.im2col(nk, x4, n0, n1)                                      # g, Cg*K, M*P
        gm = geo.grad_cols(g3, n0, n1)                                         # g, Fg, M*P
        a, b = (cols, gm.transpose(0, 2, 1)) if f_last else (gm, cols.transpose(0, 2, 1))
        if n0 == 0:
            _gemm_into(a, b, acc)
        else:
            acc += _gemm_into(a, b, part)
    if f_last:
        np.copyto(res.reshape(group, fg, cgk), acc.transpose(0, 2, 1))
    return res


def max_pool_backward_fast(nk, x, g, kernel, stride, pad, out, dest=None):
    """The gradient g of max pooling x with the Numba loop (1-D as 2-D with unit height): one pass over x with
    the generic path's rules (first maximum in row-major order, NaN wins, padding never gets a gradient), instead
    of one mask per kernel offset, overwriting every element of the result. (A Numba forward measured no faster
    than the running np.maximum.)"""
    spatial, k, s, _, p = _as_2d(x.shape[2:], kernel, stride, (1,) * len(kernel), pad)
    x4 = np.ascontiguousarray(x).reshape(x.shape[:2] + spatial)
    g4 = np.ascontiguousarray(g).reshape(x.shape[:2] + _unit_height(out))
    res = _result(dest, x.shape, x.dtype)
    nk.max_pool_backward(g4, x4, k[0], k[1], s[0], s[1], p[0], p[1], x.dtype.type(-np.inf), res.reshape(x4.shape))
    return res
