"""Numba loops of the fused RNN op's fast path (mixnet/ops/_rnn_fast.py): one per time step, forward and backward,
for LSTM and GRU. Each reads the step's GEMM result and writes the activations and states in one pass over the
(N, H) elements; `_rnn_fast` has the same steps as numpy code (used for cupy, other dtypes, and when Numba's
loops are not compiled yet) and tests compare the two.

Only `_fastpath` loads this module (with `_numba_kernels`, as one of codegen/precompile.py's EAGER_MODULES: compiled
in the background child, cached on disk). Transcendentals: float32 uses codegen/approx.py's vectorizable
sigmoid_f32 / tanh_f32 (a few ulp; llvmlite here has no SVML, so libm calls would keep the loops scalar), float64
libm (sigmoid as approx.sigmoid_libm64).
Arrays are C-contiguous 2-D; rows are the batch, columns the gates [i, f, g, o] (LSTM) or [r, z, n] (GRU).
"""
import math

import numpy as np
from numba import njit, types
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from ..codegen import approx

_JIT = dict(cache=True, error_model="numpy", fastmath={"contract"})


def _sig(v):
    return approx.sigmoid_libm64(v)


@overload(_sig, inline="always", jit_options=dict(error_model="numpy", fastmath={"contract"}))
def _sig_typed(v):
    if v == types.float32:
        return lambda v: approx.sigmoid_f32(v)
    return lambda v: approx.sigmoid_libm64(v)


def _const(v, arr):
    return v


@overload(_const, jit_options=dict(error_model="numpy"))
def _const_typed(v, arr):
    """v as the element type of arr (a Python int or float constant would promote float32 steps to float64)."""
    if arr.dtype == types.float32:
        return lambda v, arr: np.float32(v)
    return lambda v, arr: np.float64(v)


def _tanh(v):
    return math.tanh(v)


@overload(_tanh, inline="always", jit_options=dict(error_model="numpy", fastmath={"contract"}))
def _tanh_typed(v):
    if v == types.float32:
        return lambda v: approx.tanh_f32(v)
    return lambda v: math.tanh(v)


@njit(**_JIT)
def lstm_step(a, hw, b, c, cnew, tc, hnew, craw, has_clip, lo, hi, nan):
    """a (N, 4H) += hw + b (the biases), activated in place [i, f, g, o]; cnew = f c + i g (clipped to [lo, hi] when has_clip, NaN
    -> lo when nan; the unclipped value into craw); tc = tanh(cnew); hnew = o tc.

    Each row runs as short loops of one kind each over slices indexed from 0 (an index such as `h + j` makes
    Numba test it for negative wraparound, and the loop does not vectorize)."""
    n_, h_ = c.shape
    lo_ = _const(lo, c)
    hi_ = _const(hi, c)
    for n in range(n_):
        ar = a[n]
        wr = hw[n]
        ifr, ifw, ifb = ar[:2 * h_], wr[:2 * h_], b[:2 * h_]
        for j in range(2 * h_):
            ifr[j] = _sig(ifr[j] + ifw[j] + ifb[j])
        gr, gw, gb = ar[2 * h_:3 * h_], wr[2 * h_:3 * h_], b[2 * h_:3 * h_]
        for j in range(h_):
            gr[j] = _tanh(gr[j] + gw[j] + gb[j])
        orr, ow, ob = ar[3 * h_:], wr[3 * h_:], b[3 * h_:]
        for j in range(h_):
            orr[j] = _sig(orr[j] + ow[j] + ob[j])
        ir, fr = ar[:h_], ar[h_:2 * h_]
        cr = c[n]
        cn = cnew[n]
        for j in range(h_):
            cn[j] = fr[j] * cr[j] + ir[j] * gr[j]
        if has_clip:
            rr = craw[n]
            for j in range(h_):
                v = cn[j]
                rr[j] = v
                if nan and v != v:
                    v = lo_
                if v > hi_:
                    v = hi_
                elif v < lo_:
                    v = lo_
                cn[j] = v
        tr = tc[n]
        hr = hnew[n]
        for j in range(h_):
            t = _tanh(cn[j])
            tr[j] = t
            hr[j] = orr[j] * t


@njit(**_JIT)
def lstm_step_bwd(a, c, tc, craw, dh, dc, dg, has_clip, lo, hi, nan):
    """a = [i, f, g, o], c = the previous cell state, tc = tanh(new cell state); dh / dc the gradients at the new
    h and carried c. dg = the pre-activation gradients; dc becomes the gradient at the previous cell state."""
    n_, h_ = c.shape
    lo_ = _const(lo, c)
    hi_ = _const(hi, c)
    one = _const(1.0, c)
    zero = _const(0.0, c)
    for n in range(n_):
        ar = a[n]
        gr = dg[n]
        ir, fr, g_, orr = ar[:h_], ar[h_:2 * h_], ar[2 * h_:3 * h_], ar[3 * h_:]
        di, df, dgg, do = gr[:h_], gr[h_:2 * h_], gr[2 * h_:3 * h_], gr[3 * h_:]
        tr = tc[n]
        dhr = dh[n]
        dcr = dc[n]
        cr = c[n]
        for j in range(h_):
            o = orr[j]
            t = tr[j]
            do[j] = dhr[j] * t * o * (one - o)
            dcr[j] = dhr[j] * o * (one - t * t) + dcr[j]       # now the gradient at the new cell state
        if has_clip:
            rr = craw[n]
            for j in range(h_):
                v = rr[j]
                if not (v >= lo_ and v <= hi_):
                    dcr[j] = zero
        for j in range(h_):
            i = ir[j]
            f = fr[j]
            g = g_[j]
            d = dcr[j]
            di[j] = d * g * i * (one - i)
            df[j] = d * cr[j] * f * (one - f)
            dgg[j] = d * i * (one - g * g)
            dcr[j] = d * f


@njit(**_JIT)
def gru_step(a, hw, b, bhn, h, hn, hnew):
    """a (N, 3H): x-side pre-activations, b their biases (b_x, plus b_h for r and z); hw = h W_h^T. In place
    a = [r, z, n];
    hn = hw_n + b_hn; hnew = (1 - z) n + z h."""
    n_, h_ = h.shape
    for n in range(n_):
        ar = a[n]
        wr = hw[n]
        rzr, rzw, rzb = ar[:2 * h_], wr[:2 * h_], b[:2 * h_]
        for j in range(2 * h_):
            rzr[j] = _sig(rzr[j] + rzw[j] + rzb[j])
        rr, zr, nr, nw, nb = ar[:h_], ar[h_:2 * h_], ar[2 * h_:], wr[2 * h_:], b[2 * h_:]
        qr = hn[n]
        hr = h[n]
        out = hnew[n]
        for j in range(h_):
            q = nw[j] + bhn[j]
            qr[j] = q
            nr[j] = _tanh(nr[j] + nb[j] + rr[j] * q)
        for j in range(h_):
            m = nr[j]
            out[j] = (hr[j] - m) * zr[j] + m


@njit(**_JIT)
def gru_step_bwd(a, hn, h, dh, dgx, dgh):
    """a = [r, z, n], hn = W_hn h + b_hn, h = the previous state, dh at the new state: the x-side pre-activation
    gradients dgx and the h-side ones dgh (equal but for the n gate, r d a_n)."""
    n_, h_ = h.shape
    one = _const(1.0, h)
    for n in range(n_):
        ar = a[n]
        rr, zr, nr = ar[:h_], ar[h_:2 * h_], ar[2 * h_:]
        gx, gh = dgx[n], dgh[n]
        xr, xz, xn = gx[:h_], gx[h_:2 * h_], gx[2 * h_:]
        hr_, hz, hn_ = gh[:h_], gh[h_:2 * h_], gh[2 * h_:]
        qr = hn[n]
        hr = h[n]
        dr_ = dh[n]
        for j in range(h_):
            r = rr[j]
            z = zr[j]
            m = nr[j]
            d = dr_[j]
            dan = d * (one - z) * (one - m * m)
            dr = dan * qr[j] * r * (one - r)
            dz = (hr[j] - m) * d * z * (one - z)
            xr[j] = dr
            xz[j] = dz
            xn[j] = dan
            hr_[j] = dr
            hz[j] = dz
            hn_[j] = dan * r


def loops():
    """Every loop of this module (Numba dispatchers)."""
    return [v for v in globals().values() if isinstance(v, Dispatcher)]


def warm_up(dtype):
    """Compiles (or loads from the cache) every loop for `dtype` with the argument types _rnn_fast passes:
    C-contiguous 2-D arrays (1-D for b_hn), a bool and Python floats / bool for the clip arguments."""
    dt = np.dtype(dtype)
    n, h = 2, 3
    a4, hw4 = np.ones((n, 4 * h), dt), np.ones((n, 4 * h), dt)
    m = np.ones((n, h), dt)
    for clip in (False, True):
        lstm_step(a4, hw4, np.ones(4 * h, dt), m, np.empty_like(m), np.empty_like(m), np.empty_like(m), np.empty_like(m), clip,
                  -1.0, 1.0, False)
        lstm_step_bwd(a4, m, m, m, m, m.copy(), np.empty_like(a4), clip, -1.0, 1.0, False)
    a3 = np.ones((n, 3 * h), dt)
    gru_step(a3, np.ones_like(a3), np.ones(3 * h, dt), np.ones(h, dt), m, np.empty_like(m), np.empty_like(m))
    gru_step_bwd(a3, m, m, m, np.empty_like(a3), np.empty_like(a3))
