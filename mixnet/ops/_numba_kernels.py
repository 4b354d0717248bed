"""Hand-written Numba loops for the hot eager CPU kernels: the data movement around the convolution GEMMs, max
pooling's backward, ReLU's backward, the SGD update, and the normalizations (softmax / log_softmax, LayerNorm,
BatchNorm: forward and fused backward, see the section at the end).

numpy does these as many strided passes (one per kernel offset, each with short inner runs and a fresh temporary);
one explicit loop nest reads and writes each element once. Only `mixnet/ops/_fastpath.py` imports this module, on
first use, so `import mixnet` does not pay for importing Numba. `cache=True` keeps the machine code on disk
(`__pycache__` beside this file, or `$NUMBA_CACHE_DIR`), so a later process loads it instead of compiling.

Conventions: arrays are C-contiguous (N, C, H, W) (1-D ops pass H = 1) and are indexed through flat views with
`np.uintp` indices: a signed index makes Numba test it for Python's negative wraparound on every access, which
kept these loops from vectorizing (im2col ran 2.5x slower). Geometry arguments are plain ints; outputs are
preallocated by the caller. No libm transcendental functions in float32 loops (llvmlite here is built
without SVML, so a libm call inside a loop stays a scalar call and keeps the loop from vectorizing): softmax
uses codegen/approx.py's vectorizable exp_f32 there, libm in float64.
"""
import math

import numpy as np
from numba import njit, types
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from ..codegen import approx


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
def all_close(a, b, rtol, atol):
    """test_utils' `|a - b| <= |b| * rtol + atol` everywhere, in the arrays' dtype (rtol, atol dtype scalars), as
    numpy's in-place steps compute it, in one pass that stops at the first failure. NaN fails, as there."""
    for k in range(a.shape[0]):
        if not abs(a[k] - b[k]) <= abs(b[k]) * rtol + atol:
            return False
    return True


@njit(cache=True, error_model="numpy")
def lamb_direction(w, g, m, v, upd, rescale, clip, has_clip, c_b1, b1, c_b2, b2, bc1, bc2, bias_correction, eps,
                   has_wd, wd):
    """LAMB's moments (m, v in place) and direction upd = m_hat/(sqrt(v_hat)+eps) + wd*w in one pass over flat
    buffers, with the numpy path's operations in its order (the scalars come as the arrays' dtype), so the same
    result: clip is numpy's (NaN stays NaN)."""
    for k in range(w.shape[0]):
        x = g[k] * rescale
        if has_clip:
            if x < -clip:
                x = -clip
            elif x > clip:
                x = clip
        mk = m[k] * b1 + c_b1 * x
        vk = v[k] * b2 + (x * x) * c_b2
        m[k] = mk
        v[k] = vk
        if bias_correction:
            u = np.sqrt(vk / bc2) + eps
            u = (mk / bc1) / u
        else:
            u = np.sqrt(vk) + eps
            u = mk / u
        if has_wd:
            u = u + wd * w[k]
        upd[k] = u


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


# ---------------------------------------------------------------------------------------------------------
# Normalizations. Softmax and LayerNorm work on (A, D) rows (the caller moves the axis last); BatchNorm on
# (A, C, B) with the channel axis in the middle (no copy for any axis). Reductions accumulate in float64.
# The row reductions of softmax and LayerNorm are small helpers compiled with the `reassoc` flag (_ROW_JIT), which
# lets LLVM split each sum into SIMD partial sums: under IEEE order one accumulator is a serial chain of 4-cycle
# adds, 5x slower on a (128, 1000) softmax (the flags stay on the helpers' own instructions when they are
# inlined, so every other step keeps IEEE order). BatchNorm's channel sums keep explicit partial sums: float32
# accumulation over a 3e6-element channel set would lose digits, and they are memory-bound anyway.
# Elementwise steps run in float64 too (the loops are memory-bound) and round once when stored.
_NORM_JIT = dict(cache=True, error_model="numpy", fastmath={"contract"})
_ROW_JIT = dict(cache=True, error_model="numpy", fastmath={"contract", "reassoc"})


def _exp(v):
    return math.exp(v)


@overload(_exp, jit_options=dict(error_model="numpy", fastmath={"contract"}))
def _exp_typed(v):
    """exp in the precision of its argument: approx.exp_f32 (vectorizable, 0.99 ulp) for float32, libm else."""
    if v == types.float32:
        return lambda v: approx.exp_f32(v)
    return lambda v: math.exp(v)


def _narrow(v, arr):
    return v


@overload(_narrow, jit_options=dict(error_model="numpy"))
def _narrow_typed(v, arr):
    """v (a float64 row constant: a sum, its inverse, a scale) rounded to the element type of arr. Elementwise
    steps on float32 rows then run in float32, as numpy's generic path does: float64 steps cost a conversion each
    way and half the SIMD width (the softmax backward ran 3x slower)."""
    if arr.dtype == types.float32:
        return lambda v, arr: np.float32(v)
    return lambda v, arr: v


@njit(**_ROW_JIT)
def _sum(r):
    """sum(r) of a 1-D array in float64."""
    s = 0.0
    for i in range(r.shape[0]):
        s += r[i]
    return s


@njit(**_ROW_JIT)
def _dot(r, q):
    """sum(r * q) in float64 (the product in the arrays' dtype, as the generic paths compute it)."""
    s = 0.0
    for i in range(r.shape[0]):
        s += r[i] * q[i]
    return s


@njit(**_ROW_JIT)
def _sum_sq_dev(r, mu):
    """sum((r - mu) ** 2) in float64 (mu a float64)."""
    s = 0.0
    for i in range(r.shape[0]):
        d = r[i] - mu
        s += d * d
    return s


@njit(**_ROW_JIT)
def _ln_row_sums(x, g, gamma, mu):
    """(sum(g * gamma), sum(g * gamma * (x - mu))) in float64: LayerNorm's backward reductions of one row."""
    s = 0.0
    q = 0.0
    for i in range(x.shape[0]):
        h = g[i] * gamma[i]
        s += h
        q += h * (x[i] - mu)
    return s, q


@njit(**_ROW_JIT)
def _exp_sum(z, m, out):
    """out = exp(z - m) (out may be z itself) and its float64 sum; exp in z's precision."""
    s = 0.0
    for i in range(z.shape[0]):
        e = _exp(z[i] - m)
        out[i] = e
        s += e
    return s


@njit(**_ROW_JIT)
def _exp_sum_only(z, m):
    """sum(exp(z - m)) in float64 (log_softmax needs only the sum)."""
    s = 0.0
    for i in range(z.shape[0]):
        s += _exp(z[i] - m)
    return s


@njit(**_NORM_JIT)
def _exp_inplace(f):
    """f = exp(f) over a 1-D array (exp in f's precision)."""
    for i in range(f.shape[0]):
        f[i] = _exp(f[i])


@njit(**_NORM_JIT)
def _exp_into(src, dst):
    """dst = exp(src) over 1-D arrays."""
    for i in range(src.shape[0]):
        dst[i] = _exp(src[i])


@njit(**_NORM_JIT)
def _row_max(r):
    """The largest number of r, NaNs ignored (they make the whole softmax row NaN anyway, whatever the maximum).
    Eight independent running maxima: one select chain is latency-bound (3x slower)."""
    n = r.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = r[0]
    n8 = n - n % 8
    for i in range(0, n8, 8):
        v0, v1, v2, v3 = r[i], r[i + 1], r[i + 2], r[i + 3]
        v4, v5, v6, v7 = r[i + 4], r[i + 5], r[i + 6], r[i + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
    for i in range(n8, n):
        v0 = r[i]
        m0 = v0 if v0 > m0 else m0
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@njit(**_NORM_JIT)
def _shift_by_max(z, out, zero):
    """out = z - m (out may be z) for m = the maximum of z, `zero` if that is not finite; returns m."""
    m = _row_max(z)
    if not np.isfinite(m):
        m = zero
    for i in range(z.shape[0]):
        out[i] = z[i] - m
    return m


@njit(**_NORM_JIT)
def _log_shift(x, t, sign, plain, m, ls, out):
    """out = (z - m) - ls with z = x / t * sign (x itself when plain): log_softmax's last step, z recomputed as
    the first step computed it."""
    if plain:
        for i in range(x.shape[0]):
            out[i] = (x[i] - m) - ls
    else:
        for i in range(x.shape[0]):
            out[i] = (x[i] / t * sign - m) - ls


@njit(**_NORM_JIT)
def _scale(f, c):
    """f *= c over a 1-D array."""
    for i in range(f.shape[0]):
        f[i] = f[i] * c


@njit(**_NORM_JIT)
def _softmax_row(z, x, t, sign, plain, log, zero, out):
    """One long row of softmax_forward: z is the row's z (x itself when plain, else staged in out)."""
    m = _row_max(z)
    if not np.isfinite(m):
        m = zero
    if log:
        _log_shift(x, t, sign, plain, m, _narrow(math.log(_exp_sum_only(z, m)), x), out)
    else:
        _scale(out, _narrow(1.0 / _exp_sum(z, m, out), x))


# Long rows run row by row, three passes each (maximum; exp with its sum; scaling or shift), in L1 cache. Short
# rows (fewer than _LONG_ROW, a classifier's 10 classes) never reach the SIMD body of a row loop, so they are
# processed in blocks of about _BLOCK elements: the maxima and shifts row by row, then exp over the whole block
# as one flat loop, then the sums and scaling row by row (the (128, 10) log_softmax loop: ~17 us row by row,
# ~13 us in blocks; the blocks were slower on (128, 1000) rows, 430 vs 340 us, for their extra pass).
_LONG_ROW = 64
_BLOCK = 2048


@njit(**_NORM_JIT)
def softmax_forward(x, t, sign, log, out):
    """out[a] = softmax(sign * x[a] / t) over each row of the (A, D) arrays (log_softmax with log=True); out must
    not overlap x. t and sign (+-1) are scalars of x's dtype, so z is computed as in the generic path (no
    arithmetic when t = sign = 1). A non-finite row maximum is replaced by 0, as there; a row with a NaN is all
    NaN whatever the maximum. exp is the vectorizable exp_f32 for float32; the sums are float64, the scaling and
    shift in x's dtype (the row constants rounded to it)."""
    a_, d_ = x.shape
    zero = sign - sign
    plain = t == 1 and sign == 1
    if d_ >= _LONG_ROW:
        for a in range(a_):
            orow = out[a]
            if plain:
                _softmax_row(x[a], x[a], t, sign, True, log, zero, orow)
            else:
                xr = x[a]
                for i in range(d_):
                    orow[i] = xr[i] / t * sign
                _softmax_row(orow, xr, t, sign, False, log, zero, orow)
        return
    of = out.reshape(-1)
    step = max(1, _BLOCK // d_)
    maxima = np.empty(step, x.dtype)
    for a0 in range(0, a_, step):
        a1 = min(a0 + step, a_)
        for a in range(a0, a1):
            orow = out[a]
            if plain:
                maxima[a - a0] = _shift_by_max(x[a], orow, zero)
            else:
                xr = x[a]
                for i in range(d_):
                    orow[i] = xr[i] / t * sign
                maxima[a - a0] = _shift_by_max(orow, orow, zero)
        _exp_inplace(of[a0 * d_:a1 * d_])
        if log:
            for a in range(a0, a1):
                orow = out[a]
                _log_shift(x[a], t, sign, plain, maxima[a - a0], _narrow(math.log(_sum(orow)), orow), orow)
        else:
            for a in range(a0, a1):
                orow = out[a]
                _scale(orow, _narrow(1.0 / _sum(orow), orow))


@njit(**_NORM_JIT)
def softmax_backward(y, g, scale, log, dx):
    """The gradient of softmax / log_softmax (log=True) along the rows of (A, D) arrays, given the output y:
    softmax: dx = y * (g - sum(g * y)) * scale; log_softmax: dx = (g - exp(y) * sum(g)) * scale, with
    scale = 1/t (-1/t for softmin), a float; the sums in float64, the elementwise steps in y's dtype. dx must not
    overlap g (log_softmax stages exp(y) in dx, in blocks as the forward)."""
    a_, d_ = y.shape
    sc = _narrow(scale, y)
    if log:
        yf = y.reshape(-1)
        df = dx.reshape(-1)
        step = max(1, _BLOCK // d_)
        for a0 in range(0, a_, step):
            a1 = min(a0 + step, a_)
            _exp_into(yf[a0 * d_:a1 * d_], df[a0 * d_:a1 * d_])
            for a in range(a0, a1):
                gr, dr = g[a], dx[a]
                s = _narrow(_sum(gr), y)
                for i in range(d_):
                    dr[i] = (gr[i] - dr[i] * s) * sc
    else:
        for a in range(a_):
            yr, gr, dr = y[a], g[a], dx[a]
            s = _narrow(_dot(gr, yr), y)
            for i in range(d_):
                dr[i] = yr[i] * (gr[i] - s) * sc


_INT64_LOW = -9223372036854775808


@njit(**_NORM_JIT)
def _class_position(v, n, clip):
    """The class a label value names in a row of n, as pick's index does: truncated toward zero (a label that no
    int64 holds, NaN included, becomes the lowest int64, as numpy's astype gives on this CPU), then clipped into
    [0, n) or wrapped (Python's modulo, as np.mod)."""
    w = np.float64(v)
    k = _INT64_LOW if not (-9.223372036854775808e18 <= w < 9.223372036854775808e18) else np.int64(w)
    if clip:
        return min(max(k, 0), n - 1)
    return k % n


@njit(**_NORM_JIT)
def log_softmax_pick(x, label, one, clip, logp, picked):
    """A classifier's loss in one call: logp = log_softmax of each row of the (A, D) x (softmax_forward's own
    loop, so the same values) and picked[a] = logp[a, class of label[a]] (_class_position)."""
    softmax_forward(x, one, one, True, logp)
    d_ = x.shape[1]
    for a in range(x.shape[0]):
        picked[a] = logp[a, _class_position(label[a], d_, clip)]


@njit(**_NORM_JIT)
def log_softmax_pick_backward(y, label, g, clip, dx):
    """The gradient of log_softmax_pick's picked value: pick's gradient scattered (g[a] at each row's class, zero
    elsewhere: one small array, written here rather than by a separate op) and then log_softmax's backward
    (softmax_backward itself, scale 1), so the same float operations as the two ops' kernels."""
    scattered = np.zeros_like(y)
    d_ = y.shape[1]
    for a in range(y.shape[0]):
        scattered[a, _class_position(label[a], d_, clip)] = g[a]
    softmax_backward(y, scattered, 1.0, True, dx)


@njit(**_NORM_JIT)
def layernorm_forward(x, gamma, beta, eps, out, mean, std):
    """LayerNorm over the rows of the (A, D) arrays: out = (x - mean) / std * gamma + beta, std = sqrt(var +
    eps); mean and std (A,) are outputs too. Two-pass float64 statistics (cancellation-free variance); the
    normalization in x's dtype with the row's mean and 1/std rounded to it (float64 steps made the loop 1.7x
    slower on float32 rows)."""
    a_, d_ = x.shape
    for a in range(a_):
        xr, orow = x[a], out[a]
        mu = _sum(xr) / d_
        sd = np.sqrt(_sum_sq_dev(xr, mu) / d_ + eps)
        mean[a] = mu
        std[a] = sd
        m = _narrow(mu, xr)
        r = _narrow(1.0 / sd, xr)
        for i in range(d_):
            orow[i] = (xr[i] - m) * r * gamma[i] + beta[i]


@njit(**_NORM_JIT)
def layernorm_backward(x, g, gamma, gmean, gstd, eps, dx, dgamma, dbeta):
    """The gradient of LayerNorm over the rows of (A, D) arrays in one call: the statistics are recomputed from
    x; gmean, gstd (A,) are the gradients arriving at the mean and std outputs. With xhat = (x - mean) / std and
    dxhat = g * gamma: dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / std + gmean / D + gstd * xhat / D;
    dgamma = sum over rows of g * xhat, dbeta = sum of g (accumulated in float64 per column). The row
    statistics and sums are float64; dx and xhat are computed in x's dtype from the row constants rounded to it."""
    a_, d_ = x.shape
    accg = np.zeros(d_)
    accb = np.zeros(d_)
    for a in range(a_):
        xr, gr, dr = x[a], g[a], dx[a]
        mu = _sum(xr) / d_
        r64 = 1.0 / np.sqrt(_sum_sq_dev(xr, mu) / d_ + eps)
        s, q = _ln_row_sums(xr, gr, gamma, mu)
        c1 = _narrow(s / d_, xr)
        c2 = _narrow(q * r64 / d_, xr)
        cm = _narrow(gmean[a] / d_, xr)
        cs = _narrow(gstd[a] / d_, xr)
        m = _narrow(mu, xr)
        r = _narrow(r64, xr)
        for i in range(d_):
            gi = gr[i]
            xh = (xr[i] - m) * r
            dr[i] = (gi * gamma[i] - c1 - xh * c2) * r + cm + cs * xh
            accg[i] += gi * xh
            accb[i] += gi
    for i in range(d_):
        dgamma[i] = accg[i]
        dbeta[i] = accb[i]


@njit(**_NORM_JIT)
def batchnorm_sums(x, g, shift, sums):
    """Per channel c of the (A, C, B) arrays, with u = x - shift[c] in float64: sums[0, c] = sum(u),
    sums[1, c] = sum(u * u) and, when g has x's shape (it is (0, 0, 0) in the forward), sums[2, c] = sum(g),
    sums[3, c] = sum(g * u). One pass over x (and g). Shifting by a value near the channel's mean (its first
    element) keeps the one-pass variance sum(u*u)/n - (sum(u)/n)^2 accurate."""
    a_, c_, b_ = x.shape
    xf = x.reshape(-1)
    gf = g.reshape(-1)
    grads = g.shape[0] == a_ and g.size == x.size
    b2 = b_ - b_ % 2
    for c in range(c_):
        for j in range(4):
            sums[j, c] = 0.0
    for a in range(a_):
        for c in range(c_):
            base = (a * c_ + c) * b_
            k0 = shift[c]
            u0 = u1 = w0 = w1 = 0.0
            if grads:
                s0 = s1 = p0 = p1 = 0.0
                for i in range(0, b2, 2):
                    k = np.uintp(base + i)
                    v0 = xf[k] - k0
                    v1 = xf[k + 1] - k0
                    u0 += v0
                    u1 += v1
                    w0 += v0 * v0
                    w1 += v1 * v1
                    s0 += gf[k]
                    s1 += gf[k + 1]
                    p0 += gf[k] * v0
                    p1 += gf[k + 1] * v1
                for i in range(b2, b_):
                    k = np.uintp(base + i)
                    v0 = xf[k] - k0
                    u0 += v0
                    w0 += v0 * v0
                    s0 += gf[k]
                    p0 += gf[k] * v0
                sums[2, c] += s0 + s1
                sums[3, c] += p0 + p1
            else:
                for i in range(0, b2, 2):
                    k = np.uintp(base + i)
                    v0 = xf[k] - k0
                    v1 = xf[k + 1] - k0
                    u0 += v0
                    u1 += v1
                    w0 += v0 * v0
                    w1 += v1 * v1
                for i in range(b2, b_):
                    v0 = xf[np.uintp(base + i)] - k0
                    u0 += v0
                    w0 += v0 * v0
            sums[0, c] += u0 + u1
            sums[1, c] += w0 + w1


@njit(**_NORM_JIT)
def channel_affine(x, g, center, cx, cg, bias, out):
    """out = (x - center[c]) * cx[c] + g * cg[c] + bias[c] over the (A, C, B) arrays, per channel c (float64
    coefficients); the g term is skipped when g is not x's shape (the forward passes a (0, 0, 0) array), so an
    infinite x never meets a zero coefficient of the other operand."""
    a_, c_, b_ = x.shape
    xf = x.reshape(-1)
    gf = g.reshape(-1)
    of = out.reshape(-1)
    grads = g.shape[0] == a_ and g.size == x.size
    for a in range(a_):
        for c in range(c_):
            base = (a * c_ + c) * b_
            m = center[c]
            sx = cx[c]
            sg = cg[c]
            b0 = bias[c]
            if grads:
                for i in range(b_):
                    k = np.uintp(base + i)
                    of[k] = (xf[k] - m) * sx + gf[k] * sg + b0
            else:
                for i in range(b_):
                    k = np.uintp(base + i)
                    of[k] = (xf[k] - m) * sx + b0


def loops():
    """Every loop of this module (Numba dispatchers), the helpers the others call included."""
    return [v for v in globals().values() if isinstance(v, Dispatcher)]


def warm_up(dtype):
    """Compiles (or loads from the cache) every loop for `dtype` ('float32' or 'float64') by running it on tiny
    arrays with the argument types the fast paths pass: C-contiguous arrays of the dtype (all_close's read-only),
    Python ints for the geometry, the pooling fill and all_close's tolerances as dtype scalars, the SGD scalars as
    np.float32 and its weight-decay flag as a bool, the normalizations' eps / scale as Python floats, softmax's
    temperature and sign as dtype scalars (tests/ops/test_fastpath_background.py checks that real calls compile
    nothing more). The background child of codegen/precompile.py runs it."""
    dt = np.dtype(dtype)
    x = np.ones((1, 1, 2, 2), dt)
    cols = np.empty((1, 1, 1, 1, 2, 2), dt)
    im2col(x, 0, 1, 1, 1, 1, 1, 1, 0, 0, cols)
    col2im(cols, 0, 1, 1, 1, 1, 0, 0, np.empty_like(x))
    max_pool_backward(np.ones((1, 1, 1, 1), dt), x, 2, 2, 2, 2, 0, 0, dt.type(-np.inf), np.empty_like(x))
    flat = np.ones(4, dt)
    relu_backward(flat, flat, np.empty_like(flat))
    frozen = flat.copy()
    frozen.flags.writeable = False
    all_close(frozen, frozen, dt.type(0), dt.type(0))
    one = dt.type(1)
    lamb_direction(flat.copy(), flat, flat.copy(), flat.copy(), np.empty_like(flat), one, one, True, one, one, one,
                   one, one, one, True, one, True, one)
    f32 = np.float32(0.5)
    sgd_update(flat.copy(), flat, f32, f32)
    sgd_mom_update(flat.copy(), flat, flat.copy(), True, f32, f32, f32)
    rows = np.ones((2, 3), dt)
    for log in (False, True):
        softmax_forward(rows, dt.type(1), dt.type(1), log, np.empty_like(rows))
        softmax_backward(rows, rows, 1.0, log, np.empty_like(rows))
    labels = np.zeros(2, dt)
    for clip in (True, False):
        log_softmax_pick(rows, labels, dt.type(1), clip, np.empty_like(rows), np.empty(2, dt))
        log_softmax_pick_backward(rows, labels, labels, clip, np.empty_like(rows))
    vec = np.ones(3, dt)
    layernorm_forward(rows, vec, vec, 1e-5, np.empty_like(rows), np.empty(2, dt), np.empty(2, dt))
    layernorm_backward(rows, rows, vec, vec[:2], vec[:2], 1e-5, np.empty_like(rows), np.empty_like(vec),
                       np.empty_like(vec))
    x3 = np.ones((2, 3, 2), dt)
    none = np.zeros((0, 0, 0), dt)
    coef = np.ones(3)
    for g3 in (none, x3):
        batchnorm_sums(x3, g3, coef, np.empty((4, 3)))
        channel_affine(x3, g3, coef, coef, coef, coef, np.empty_like(x3))
