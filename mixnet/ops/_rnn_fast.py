"""The fast array path of the fused `RNN` op (mixnet/ops/rnn.py): a forward that keeps what the backward needs
(the "reserve": each step's gate activations and states) and a hand-derived backpropagation through time over it.

Layout of the work, per layer and direction (T steps, batch N, G gates of size H, recurrent size R):
* the input projection of all steps is one GEMM (T*N, I) x (I, G*H), its biases added once;
* per step one recurrent GEMM h_{t-1} (N, R) x (R, G*H) into a preallocated buffer, then one fused step that
  adds it, applies the gate nonlinearities and writes the new states (`_rnn_kernels`: a Numba loop per step for
  numpy float32/float64 arrays; the numpy code below for any other case, same formulas);
* the backward runs the steps in reverse: one fused step gives the pre-activation gradients dG_t (N, G*H) from the
  saved activations, then one GEMM dG_t x W_h gives the gradient reaching h_{t-1};
* after the sweep the weight gradients come from one GEMM each over all steps (dG^T x inputs, dG^T x states),
  the input gradient from one GEMM dG x W_x.

Sequence lengths: steps t >= length[n] keep the state (the carried state is `where(valid, new, old)`), give zero
outputs, and the reverse direction reverses each sequence within its length (a gather), exactly as the composite
forward of rnn.py does; in the backward those rows pass the state gradients through unchanged and get zero gate
gradients (set, never multiplied, so NaN padding cannot leak). Padded input steps are replaced by zeros (`where`)
before anything reads them.
"""
import numpy as np

from . import _fastpath, registry

KERNELS = True           # the Numba step loops (tests switch them off to compare with the numpy steps)
_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(xp, x, out):
    """The registry's sigmoid kernel into out (x itself here: the gates are activated in place); exp(-x) of a
    very negative x overflows to inf on the way to its exact result 0, which is not worth a warning."""
    with np.errstate(over="ignore"):
        return registry.get("sigmoid").kernel(xp, x, out=out)


class _Dir:
    """What one direction of one layer saves for its backward."""
    __slots__ = ("acts", "craw", "cs", "hn", "hp", "hs", "k", "tc", "valid", "x")


def _kernels(xp, *arrays):
    if not KERNELS:
        return None
    nk = _fastpath.numba_kernels(xp, *arrays, load=True)
    if nk is None:
        return None
    return _fastpath.loops_of("_rnn_kernels")


def forward(xp, data, params, state, cell, lens, masks, a, layout, clip, save):
    """Outputs [out(, hy(, cy))] of the RNN op, and the reserve for `backward` (None unless save)."""
    mode, H, L = a["mode"], a["state_size"], a["num_layers"]
    D = 2 if a["bidirectional"] else 1
    P = a["projection_size"]
    R = P or H
    T, N, _ = data.shape
    dt = data.dtype
    valid = rev = None
    x = data
    if lens is not None:
        tt = xp.arange(T)[:, None]
        valid = tt < lens[None, :]                                   # (T, N)
        rev = (xp.where(valid, lens[None, :] - 1 - tt, tt), xp.arange(N)[None, :])
        x = xp.where(valid[:, :, None], data, xp.zeros((), dtype=dt))
    nk = _kernels(xp, data, params, state)
    hy = xp.empty((L * D, N, R), dtype=dt)
    cy = xp.empty((L * D, N, H), dtype=dt) if mode == "lstm" else None
    dirs = []
    for layer in range(L):
        out = xp.empty((T, N, D * R), dtype=dt)
        for d in range(D):
            k = layer * D + d
            w = {name: params[off:off + int(np.prod(shape))].reshape(shape)
                 for name, (off, shape) in layout[k].items()}
            xin = x if d == 0 else (x[rev] if rev is not None else x[::-1])
            r = _dir_forward(xp, nk, np.ascontiguousarray(xin) if xp is np else xin, state[k],
                             None if cell is None else cell[k], w, mode, H, R, clip, valid, save)
            r.k = k
            o = r.hs[1:]
            if valid is not None:
                o = xp.where(valid[:, :, None], o, xp.zeros((), dtype=dt))
            if d == 1:
                o = o[rev] if rev is not None else o[::-1]
            out[:, :, d * R:(d + 1) * R] = o
            hy[k] = r.hs[T]
            if cy is not None:
                cy[k] = r.cs[T]
            dirs.append(r)
        x = out
        if masks is not None and layer < L - 1:
            x = x * masks[layer]
    results = [x]
    if a["state_outputs"]:
        results.append(hy)
        if mode == "lstm":
            results.append(cy)
    reserve = (dirs, valid, rev, masks) if save else None
    return results, reserve


def _buffer(xp, save, slot, shape, dt):
    """A fresh array for what the backward keeps; else (inference, numpy) a per-thread workspace reused between
    calls: fresh multi-megabyte arrays cost a page fault per 4 KiB on first touch, about 5 ms of an LSTM layer's
    20 ms forward here. Workspace contents never leave the kernel (outputs are copied out)."""
    if save or xp is not np:
        return xp.empty(shape, dtype=dt)
    return _fastpath.workspace(slot, shape, dt)


def _dir_forward(xp, nk, x, h0, c0, w, mode, H, R, clip, valid, save):
    T, N, I = x.shape
    dt = x.dtype
    G = _GATES[mode]
    r = _Dir()
    r.x = x
    r.valid = valid
    bias = w["bx"] + w["bh"]
    if mode == "gru":                           # the n gate's h2h bias stays inside r * (W_hn h + b_hn)
        bias = xp.concatenate([bias[:2 * H], w["bx"][2 * H:]])
        bhn = w["bh"][2 * H:]
    acts = _buffer(xp, save, "rnn_acts", (T, N, G * H), dt)         # becomes the gate activations
    xp.matmul(x.reshape(T * N, I), w["wx"].T, out=acts.reshape(T * N, G * H))
    if nk is None or mode not in ("lstm", "gru"):
        acts += bias                            # (the Numba steps add it as they go)
    r.acts = acts
    hs = _buffer(xp, save, "rnn_hs", (T + 1, N, R), dt)
    hs[0] = h0
    r.hs = hs
    whT = w["wh"].T
    hw = _buffer(xp, False, "rnn_hw", (N, G * H), dt)
    r.cs = r.tc = r.hp = r.craw = r.hn = None
    if mode == "lstm":
        cs = _buffer(xp, save, "rnn_cs", (T + 1, N, H), dt)
        cs[0] = c0
        r.cs = cs
        r.tc = _buffer(xp, save, "rnn_tc", (T, N, H), dt)
        if "wr" in w:
            r.hp = _buffer(xp, save, "rnn_hp", (T, N, H), dt)
            wrT = w["wr"].T
        if clip is not None:
            r.craw = _buffer(xp, save, "rnn_craw", (T, N, H), dt)
    elif mode == "gru":
        r.hn = _buffer(xp, save, "rnn_hn", (T, N, H), dt)
    keep = None
    no_craw = hw[:0, :0]
    steps = T if valid is None else _live_steps(xp, valid)
    for t in range(steps):
        xp.matmul(hs[t], whT, out=hw)
        if valid is not None:
            keep = valid[t]
        if mode == "lstm":
            hnew = hs[t + 1] if r.hp is None else r.hp[t]
            if nk is not None:
                nk.lstm_step(acts[t], hw, bias, cs[t], cs[t + 1], r.tc[t], hnew,
                             r.craw[t] if r.craw is not None else no_craw,
                             clip is not None, *(clip or (0.0, 0.0, False)))
            else:
                _lstm_step(xp, acts[t], hw, cs[t], cs[t + 1], r.tc[t], hnew,
                           None if r.craw is None else r.craw[t], H, clip)
            if r.hp is not None:
                xp.matmul(hnew, wrT, out=hs[t + 1])
            if keep is not None:
                cs[t + 1] = xp.where(keep[:, None], cs[t + 1], cs[t])
        elif mode == "gru":
            if nk is not None:
                nk.gru_step(acts[t], hw, bias, bhn, hs[t], r.hn[t], hs[t + 1])
            else:
                _gru_step(xp, acts[t], hw, bhn, hs[t], r.hn[t], hs[t + 1], H)
        else:
            a_t = acts[t]
            a_t += hw
            if mode == "rnn_tanh":
                xp.tanh(a_t, out=a_t)
            else:
                xp.maximum(a_t, 0, out=a_t)
            hs[t + 1] = a_t
        if keep is not None:
            hs[t + 1] = xp.where(keep[:, None], hs[t + 1], hs[t])
    for t in range(steps, T):                   # every sequence has ended: the state is carried, nothing runs
        hs[t + 1] = hs[t]
        if mode == "lstm":
            cs[t + 1] = cs[t]
            if r.hp is not None:
                r.hp[t] = 0                     # (the backward's weight GEMM reads it, times a zero gradient)
    if not save:
        r.acts = r.tc = r.hp = r.craw = r.hn = None
    return r


def _live_steps(xp, valid):
    """1 + the last step at which some sequence is still running (0 if none)."""
    any_valid = valid.any(axis=1)
    return int(any_valid.nonzero()[0][-1]) + 1 if bool(any_valid.any()) else 0


def _lstm_step(xp, a, hw, c, cnew, tc, hnew, craw, H, clip):
    """Gates a (N, 4H) += hw, activated in place [i, f, g, o]; cnew = f*c + i*g (clipped); h = o * tanh(cnew)."""
    a += hw
    _sigmoid(xp, a[:, :2 * H], a[:, :2 * H])
    xp.tanh(a[:, 2 * H:3 * H], out=a[:, 2 * H:3 * H])
    _sigmoid(xp, a[:, 3 * H:], a[:, 3 * H:])
    xp.multiply(a[:, H:2 * H], c, out=cnew)
    cnew += a[:, :H] * a[:, 2 * H:3 * H]
    if clip is not None:
        lo, hi, nan = clip
        craw[...] = cnew
        if nan:
            cnew[xp.isnan(cnew)] = lo
        xp.clip(cnew, lo, hi, out=cnew)
    xp.tanh(cnew, out=tc)
    xp.multiply(a[:, 3 * H:], tc, out=hnew)


def _gru_step(xp, a, hw, bhn, h, hn, hnew, H):
    """a (N, 3H): x-side pre-activations (biases in, except b_hn); hw = h W_h^T. In place: a = [r, z, n];
    hn = hw_n + b_hn (saved); hnew = (1 - z) n + z h."""
    a[:, :2 * H] += hw[:, :2 * H]
    _sigmoid(xp, a[:, :2 * H], a[:, :2 * H])
    xp.add(hw[:, 2 * H:], bhn, out=hn)
    n = a[:, 2 * H:]
    n += a[:, :H] * hn
    xp.tanh(n, out=n)
    z = a[:, H:2 * H]
    xp.subtract(h, n, out=hnew)
    hnew *= z
    hnew += n


# ---------------------------------------------------------------------------------------------------------
# backward
def backward(xp, reserve, a, layout, clip, params, grads_out, n_params, want_cell):
    """(d data, d params, d state[, d state_cell]) from the reserve of `forward` and the head gradients
    grads_out = [dout, dhy or None, dcy or None]."""
    dirs, valid, rev, masks = reserve
    mode, H, L = a["mode"], a["state_size"], a["num_layers"]
    D = 2 if a["bidirectional"] else 1
    P = a["projection_size"]
    R = P or H
    dout, dhy, dcy = grads_out
    T, N, _ = dout.shape
    dt = dout.dtype
    zero = xp.zeros((), dtype=dt)
    nk = _kernels(xp, dout, params)
    dparams = xp.zeros(n_params, dtype=dt)
    dstate = xp.zeros((L * D, N, R), dtype=dt)
    dcell = xp.zeros((L * D, N, H), dtype=dt) if mode == "lstm" else None
    inv = None
    if valid is not None:
        inv = [xp.nonzero(~valid[t])[0] for t in range(T)]
        inv = [i if i.size else None for i in inv]
    g = dout
    for layer in range(L - 1, -1, -1):
        if masks is not None and layer < L - 1:
            g = g * masks[layer]
        dx_sum = None
        for d in range(D):
            k = layer * D + d
            r = dirs[k]
            w = {name: params[off:off + int(np.prod(shape))].reshape(shape)
                 for name, (off, shape) in layout[k].items()}
            gd = g[:, :, d * R:(d + 1) * R]
            if valid is not None:
                gd = xp.where(valid[:, :, None], gd, zero)
            if d == 1:
                gd = gd[rev] if rev is not None else gd[::-1]
            gd = xp.ascontiguousarray(gd)
            dh_T = None if dhy is None else dhy[k]
            dc_T = None if dcy is None else dcy[k]
            dx, dh0, dc0, dw = _dir_backward(xp, nk, r, w, gd, dh_T, dc_T, mode, H, R, clip, inv)
            for name, v in dw.items():
                off = layout[k][name][0]
                dparams[off:off + v.size] = v.reshape(-1)
            dstate[k] = dh0
            if dcell is not None:
                dcell[k] = dc0
            if d == 1:
                dx = dx[rev] if rev is not None else dx[::-1]
            dx_sum = dx if dx_sum is None else dx_sum + dx
        g = dx_sum
    if valid is not None:
        g = xp.where(valid[:, :, None], g, zero)
    res = [g, dparams, dstate]
    if want_cell:
        res.append(dcell)
    return res


def _dir_backward(xp, nk, r, w, gd, dh_T, dc_T, mode, H, R, clip, inv):
    T, N, _ = gd.shape
    dt = gd.dtype
    G = _GATES[mode]
    acts, hs = r.acts, r.hs
    dG = xp.empty((T, N, G * H), dtype=dt)
    dGh = xp.empty((T, N, G * H), dtype=dt) if mode == "gru" else dG
    dh = xp.zeros((N, R), dtype=dt) if dh_T is None else dh_T.astype(dt, copy=True)
    dc = None
    if mode == "lstm":
        dc = xp.zeros((N, H), dtype=dt) if dc_T is None else dc_T.astype(dt, copy=True)
    dprev = xp.empty((N, R), dtype=dt)
    wh = w["wh"]
    proj = r.hp is not None
    if proj:
        wr = w["wr"]
        dH = xp.empty((T, N, R), dtype=dt)          # gradient at each step's projected output
        dhp = xp.empty((N, H), dtype=dt)
    steps = T if inv is None else _live_steps(xp, r.valid)
    dG[steps:] = 0                              # steps after every sequence ended (the forward skipped them)
    if mode == "gru":
        dGh[steps:] = 0
    if proj:
        dH[steps:] = 0
    for t in range(steps - 1, -1, -1):
        dh += gd[t]
        bad = None if inv is None else inv[t]
        if mode == "lstm":
            dc_keep = None
            if bad is not None:
                dc_keep = dc[bad]
            if proj:
                dH[t] = dh
                if bad is not None:
                    dH[t][bad] = 0
                xp.matmul(dH[t], wr, out=dhp)
                dhin = dhp
            else:
                dhin = dh
            craw = None if r.craw is None else r.craw[t]
            if nk is not None:
                nk.lstm_step_bwd(acts[t], r.cs[t], r.tc[t], craw if craw is not None else dhin[:0, :0],
                                 dhin, dc, dG[t], clip is not None, *(clip or (0.0, 0.0, False)))
            else:
                _lstm_step_bwd(xp, acts[t], r.cs[t], r.tc[t], craw, dhin, dc, dG[t], H, clip)
            if bad is not None:
                dG[t][bad] = 0
                dc[bad] = dc_keep
        elif mode == "gru":
            if nk is not None:
                nk.gru_step_bwd(acts[t], r.hn[t], hs[t], dh, dG[t], dGh[t])
            else:
                _gru_step_bwd(xp, acts[t], r.hn[t], hs[t], dh, dG[t], dGh[t], H)
            if bad is not None:
                dG[t][bad] = 0
                dGh[t][bad] = 0
        else:
            h = hs[t + 1]
            if mode == "rnn_tanh":
                xp.multiply(h, h, out=dG[t])
                xp.subtract(1, dG[t], out=dG[t])
                dG[t] *= dh
            else:
                xp.multiply(dh, h > 0, out=dG[t])
            if bad is not None:
                dG[t][bad] = 0
        xp.matmul(dGh[t], wh, out=dprev)
        if mode == "gru":
            dprev += dh * acts[t][:, H:2 * H]       # h' = ... + z h
        if bad is not None:
            dprev[bad] = dh[bad]                    # padded steps pass the state gradient through
        dh, dprev = dprev, dh
    I = r.x.shape[2]                            # (explicit sizes everywhere: the batch may be empty)
    x2 = r.x.reshape(T * N, I)
    dG2 = dG.reshape(T * N, G * H)
    dGh2 = dGh.reshape(T * N, G * H)
    dw = {"wx": xp.matmul(dG2.T, x2), "wh": xp.matmul(dGh2.T, hs[:-1].reshape(T * N, R))}
    if mode == "gru":
        dw["bx"] = dG2.sum(axis=0)
        dw["bh"] = dGh2.sum(axis=0)
    else:
        dw["bx"] = dG2.sum(axis=0)
        dw["bh"] = dw["bx"]
    if proj:
        dw["wr"] = xp.matmul(dH.reshape(T * N, R).T, r.hp.reshape(T * N, H))
    dx = xp.matmul(dG2, w["wx"]).reshape(T, N, I)
    return dx, dh, dc, dw


def _lstm_step_bwd(xp, a, c, tc, craw, dh, dc, dg, H, clip):
    """a = [i, f, g, o] activations, c = the previous cell state, tc = tanh(new cell state); dh, dc: gradients at
    the new h and (carried) c. Writes the pre-activation gradients into dg and the gradient at c into dc."""
    i, f, gg, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
    xp.multiply(dh, tc, out=dg[:, 3 * H:])                  # d o
    dct = dh * o * (1 - tc * tc) + dc                       # at the new (clipped) cell state
    if clip is not None:
        lo, hi = clip[0], clip[1]
        inside = (craw >= lo) & (craw <= hi)
        dct = xp.where(inside, dct, xp.zeros((), dtype=dct.dtype))
    xp.multiply(dct, gg, out=dg[:, :H])                     # d i
    xp.multiply(dct, c, out=dg[:, H:2 * H])                 # d f
    xp.multiply(dct, i, out=dg[:, 2 * H:3 * H])             # d g
    xp.multiply(dct, f, out=dc)
    dg[:, :H] *= i * (1 - i)
    dg[:, H:2 * H] *= f * (1 - f)
    dg[:, 2 * H:3 * H] *= 1 - gg * gg
    dg[:, 3 * H:] *= o * (1 - o)


def _gru_step_bwd(xp, a, hn, h, dh, dgx, dgh, H):
    """a = [r, z, n] activations, hn = W_hn h + b_hn, h = the previous state; dh at the new state. Writes the
    x-side pre-activation gradients dgx and the h-side ones dgh (they differ in the n gate: r * d a_n)."""
    rr, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
    dan = dh * (1 - z) * (1 - n * n)
    dgx[:, 2 * H:] = dan
    xp.multiply(dan, rr, out=dgh[:, 2 * H:])
    xp.multiply(dan, hn, out=dgx[:, :H])
    dgx[:, :H] *= rr * (1 - rr)
    xp.subtract(h, n, out=dgx[:, H:2 * H])
    dgx[:, H:2 * H] *= dh * z * (1 - z)
    dgh[:, :2 * H] = dgx[:, :2 * H]
