"""Hand-written Numba loops for the hot eager CPU kernels: the data movement around the convolution GEMMs, max
pooling's backward, ReLU's backward and the SGD update.

numpy does these as many strided passes (one per kernel offset, each with short inner runs and a fresh temporary);
one explicit loop nest reads and writes each element once. Only `mixnet/ops/_fastpath.py` imports this module, on
first use, so `import mixnet` does not pay for importing Numba. `cache=True` keeps the machine code on disk
(`__pycache__` beside this file, or `$NUMBA_CACHE_DIR`), so a later process loads it instead of compiling.

Conventions: arrays are C-contiguous (N, C, H, W) (1-D ops pass H = 1) and are indexed through flat views with
`np.uintp` indices: a signed index makes Numba test it for Python's negative wraparound on every access, which
kept these loops from vectorizing (im2col ran 2.5x slower). Geometry arguments are plain ints; outputs are
preallocated by the caller. No transcendental functions (this Numba has no SVML, performance.md §4.1).
"""
import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher


@njit(cache=True)
def _valid_range(start, step, size, count):
    """[lo, hi): the t in [0, count) with 0 <= start + t * step < size (step > 0)."""
    lo = 0
    if start < 0:
        lo = (-start + step - 1) // step
    last = size - 1 - start
    hi = 0 if last < 0 else last // step + 1
    if hi > count:
        hi = count
    if hi < lo:
        hi = lo
    return lo, hi


@njit(cache=True)
def im2col(x, n0, kh, kw, sh, sw, dh, dw, ph, pw, cols):
    """cols[c, i, j, m, y, t] = x[n0 + m, c, y*sh - ph + i*dh, t*sw - pw + j*dw], 0 outside x.

    cols is the (C, kh, kw, M, OH, OW) array for the M samples from n0; reshaped to (C*kh*kw, M*OH*OW) it is
    the right-hand side of the forward GEMM. cols is written once, in memory order.
    """
    c_, h_, w_ = x.shape[1], x.shape[2], x.shape[3]
    m_, oh, ow = cols.shape[3], cols.shape[4], cols.shape[5]
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    o = 0
    for c in range(c_):
        for i in range(kh):
            for j in range(kw):
                a = j * dw - pw
                lo, hi = _valid_range(a, sw, w_, ow)
                for m in range(m_):
                    base = ((n0 + m) * c_ + c) * h_
                    for y in range(oh):
                        r = y * sh - ph + i * dh
                        if r < 0 or r >= h_:
                            for t in range(ow):
                                cf[np.uintp(o + t)] = 0
                        else:
                            src = (base + r) * w_ + a
                            for t in range(lo):
                                cf[np.uintp(o + t)] = 0
                            for t in range(lo, hi):
                                cf[np.uintp(o + t)] = xf[np.uintp(src + t * sw)]
                            for t in range(hi, ow):
                                cf[np.uintp(o + t)] = 0
                        o += ow


@njit(cache=True)
def col2im(cols, n0, sh, sw, dh, dw, ph, pw, out):
    """The adjoint of im2col: out[n0 + m, c, r, q] = the sum of cols[c, i, j, m, y, t] over the (i, j, y, t)
    that im2col reads from (r, q). Samples n0 .. n0 + M of out (N, C, H, W) are overwritten. cols is read once,
    in memory order; the writes go to the M planes of one channel at a time, which stay in cache."""
    c_, kh, kw, m_, oh, ow = cols.shape
    call, h_, w_ = out.shape[1], out.shape[2], out.shape[3]
    of = out.reshape(-1)
    cf = cols.reshape(-1)
    plane = h_ * w_
    o = 0
    for c in range(c_):
        for m in range(m_):
            base = ((n0 + m) * call + c) * plane
            for k in range(plane):
                of[np.uintp(base + k)] = 0
        for i in range(kh):
            for j in range(kw):
                a = j * dw - pw
                lo, hi = _valid_range(a, sw, w_, ow)
                for m in range(m_):
                    base = ((n0 + m) * call + c) * h_
                    for y in range(oh):
                        r = y * sh - ph + i * dh
                        if r >= 0 and r < h_:
                            dst = (base + r) * w_ + a
                            for t in range(lo, hi):
                                of[np.uintp(dst + t * sw)] += cf[np.uintp(o + t)]
                        o += ow


@njit(cache=True)
def _window_max_general(xf, base, h_, w_, r0, q0, kh, kw, fill):
    """(value, flat index or -1) of the first maximum in row-major order of the kh x kw window at (r0, q0) of the
    plane at `base`. Positions outside the plane count as `fill` (index -1). A NaN beats every number and the
    first NaN wins, as in numpy's argmax (and np.maximum propagates it)."""
    best = fill
    where = -1
    for i in range(kh):
        r = r0 + i
        for j in range(kw):
            q = q0 + j
            inside = r >= 0 and r < h_ and q >= 0 and q < w_
            k = base + r * w_ + q
            v = xf[np.uintp(k)] if inside else fill
            if (i == 0 and j == 0) or v > best or (v != v and best == best):
                best = v
                where = k if inside else -1
    return best, where


# The backward scans the common window (inside the plane, no NaN) inline and branch-free, and hands the others
# to _window_max_general: calling a (value, index) helper for every window was 4x slower here.
@njit(cache=True)
def max_pool_backward(g, x, kh, kw, sh, sw, ph, pw, fill, dx):
    """The gradient of max_pool: each g[n, c, y, t] goes to its window's first maximum (nowhere when that is a
    position outside x). dx (N, C, H, W) is overwritten, one plane at a time (zeroed, then filled while in cache)."""
    h_, w_ = x.shape[2], x.shape[3]
    oh, ow = g.shape[2], g.shape[3]
    xf = x.reshape(-1)
    gf = g.reshape(-1)
    df = dx.reshape(-1)
    o = 0
    for p in range(x.shape[0] * x.shape[1]):
        base = p * h_ * w_
        for k in range(base, base + h_ * w_):
            df[np.uintp(k)] = 0
        for y in range(oh):
            r0 = y * sh - ph
            for t in range(ow):
                q0 = t * sw - pw
                where = -1
                done = False
                if r0 >= 0 and q0 >= 0 and r0 + kh <= h_ and q0 + kw <= w_:
                    start = base + r0 * w_ + q0
                    best = xf[np.uintp(start)]
                    where = start
                    nan = False
                    for i in range(kh):
                        for j in range(kw):
                            k = start + i * w_ + j
                            v = xf[np.uintp(k)]
                            nan |= v != v
                            later = v > best             # strict: ties keep the first maximum
                            best = v if later else best
                            where = k if later else where
                    done = not nan
                if not done:
                    where = _window_max_general(xf, base, h_, w_, r0, q0, kh, kw, fill)[1]
                if where >= 0:
                    df[np.uintp(where)] += gf[np.uintp(o)]
                o += 1


@njit(cache=True)
def relu_backward(g, x, out):
    """out = g * (x > 0) over flat arrays, with the product's NaN/inf behaviour (inf * 0 is NaN)."""
    for k in range(out.shape[0]):
        out[k] = g[k] * (x[k] > 0)                   # float * bool stays float32 / float64


@njit(cache=True)
def sgd_update(w, g, lr_rescale, decay):
    """MXNet's sgd_update in one pass over flat buffers: w = w * decay - (lr * rescale) * g with decay = 1 - lr*wd
    (1 without weight decay: w * 1 is w exactly). The same float operations in the same order as the numpy path
    and MXNet 1.9.1, so the same result; the scalars come as np.float32, as there."""
    for k in range(w.shape[0]):
        w[k] = w[k] * decay - g[k] * lr_rescale


@njit(cache=True)
def sgd_mom_update(w, g, mom, has_wd, lr_wd, lr_rescale, momentum):
    """MXNet's sgd_mom_update in one pass: m = momentum*m - (lr*wd)*w - (lr*rescale)*g; w += m. Without weight
    decay the (lr*wd)*w term is skipped, not multiplied by 0, as in the numpy path (0 * inf would be NaN)."""
    for k in range(w.shape[0]):
        m = mom[k] * momentum
        if has_wd:
            m = m - lr_wd * w[k]
        m = m - g[k] * lr_rescale
        mom[k] = m
        w[k] = w[k] + m


def loops():
    """Every loop of this module (Numba dispatchers), the helpers the others call included."""
    return [v for v in globals().values() if isinstance(v, Dispatcher)]


def warm_up(dtype):
    """Compiles (or loads from the cache) every loop for `dtype` ('float32' or 'float64') by running it on tiny
    arrays with the argument types the fast paths pass: C-contiguous arrays of the dtype, Python ints for the
    geometry, the pooling fill as a dtype scalar, the SGD scalars as np.float32 and its weight-decay flag as a bool
    (tests/ops/test_fastpath_background.py checks that real calls compile nothing more). The background child of
    codegen/precompile.py runs it."""
    dt = np.dtype(dtype)
    x = np.ones((1, 1, 2, 2), dt)
    cols = np.empty((1, 1, 1, 1, 2, 2), dt)
    im2col(x, 0, 1, 1, 1, 1, 1, 1, 0, 0, cols)
    col2im(cols, 0, 1, 1, 1, 1, 0, 0, np.empty_like(x))
    max_pool_backward(np.ones((1, 1, 1, 1), dt), x, 2, 2, 2, 2, 0, 0, dt.type(-np.inf), np.empty_like(x))
    flat = np.ones(4, dt)
    relu_backward(flat, flat, np.empty_like(flat))
    f32 = np.float32(0.5)
    sgd_update(flat.copy(), flat, f32, f32)
    sgd_mom_update(flat.copy(), flat, flat.copy(), True, f32, f32, f32)
