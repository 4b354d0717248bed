"""The fused recurrent op `RNN` (what gluon.rnn.RNN / LSTM / GRU call) and `_rnn_param_concat`.

`RNN(data, parameters, state[, state_cell][, sequence_length])`, data in TNC layout. `parameters` is MXNet's flat
fused vector: all weights first (per layer, per direction l then r: i2h (G*H, in), h2h (G*H, R)[, h2r (P, H)]),
then all biases (per layer, per direction: i2h (G*H,), h2h (G*H,)). G = 1 (rnn_relu, rnn_tanh), 4 (lstm, gates
[i, f, g, o]) or 3 (gru, gates [r, z, n]; the reset gate multiplies the h2h product *including* its bias).
R is the recurrent size: projection_size for an LSTM with projection (LSTMP), else state_size.

Outputs: out (T, N, D*R); with state_outputs h_n (L*D, N, R) and, for LSTM, c_n (L*D, N, H). With dropout
between layers (p > 0, num_layers > 1) a hidden last output holds the dropout masks (L-1, T, N, D*R) so that the
gradient replays the same masks (it is all ones outside training). Note for exports: MXNet's node_row_ptr does
not count that hidden output.

use_sequence_length (every mode, both directions, CPU and GPU; MXNet only supports LSTM on GPU and gets the
reverse direction wrong): steps t >= length[n] leave the state unchanged and give zero outputs, the reverse
direction reverses each sequence within its own length, and padded input steps never reach the result (even NaN
padding is masked out with `where`, not multiplied by zero).

LSTM state clipping (lstm_state_clip_min/max, cuDNN semantics; MXNet's CPU op ignores these attributes): the
new cell state is clamped to [min, max] before h = o * tanh(c) and before it is carried on. With
lstm_state_clip_nan=True a NaN cell state becomes `min` (cuDNN's non-propagating fmax/fmin); otherwise NaN
propagates.

Computation. The kernel runs mixnet/ops/_rnn_fast.py: per layer and direction the input projection of all steps
as one GEMM, then per step one recurrent GEMM into a preallocated buffer and one fused step (Numba loops in
_rnn_kernels.py for numpy float32/float64; numpy code otherwise, same formulas). In training (or while autograd
records) it keeps the gate activations and states of every step (the "reserve", found again by the backward
through `_RESERVES`, keyed by the output array; MXNet's stateful op keeps its reserve space the same way).

Gradient design, two paths:
* First order (eager `backward()` / `autograd.grad` without create_graph, and the compiled backward of a
  hybridized block: `nn_norm._final_gradient()`): the hidden op `_rnn_bwd`, a hand-derived backpropagation
  through time over the reserve (per step one fused step and one GEMM; the weight gradients as one GEMM over all
  steps). If the reserve is not found (the forward ran without recording, or the inputs changed since), it runs
  the forward again first: same numbers, slower.
* create_graph=True (higher orders): the rule re-runs the same forward (one shared implementation, `_forward`,
  written against a small backend interface) as a composition of mixnet ops (slice_axis/Reshape of the flat
  parameters, FullyConnected, sigmoid, tanh, relu, where, SequenceMask/SequenceReverse, stack/Concat) on `_copy`
  proxies of the op's inputs, recorded on the tape, and then runs a local reverse sweep over just those recorded
  nodes (`autograd.local_gradients`: the ops' own gradient rules, in the mode of the outer backward, stopping at
  the proxies). Because every step is a mixnet op recorded under the outer create_graph mode, and the proxies link
  back to the real inputs, the result is differentiable again: second and higher-order gradients are exact, at the
  cost of re-running the forward in the backward pass. `_rnn_bwd`'s own gradient is that composite too.
tests/ops/test_rnn_bptt.py checks the two paths against each other and against finite differences.
"""
import numpy as np

from .. import _mode
from . import _rnn_fast, registry
from .attrs import REQUIRED, Attr, choice, optional, parse_bool, parse_float, parse_int
from .common import call, check_same_dtypes, concat_shape
from .nn_norm import _final_gradient, _replayed
from .registry import OpDef, OpTest, ParamShapes, register

__all__ = ["param_size", "param_layout"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


# ---------------------------------------------------------------------------------------------------------
# the fused parameter layout
def _layout(mode, num_layers, input_size, state_size, dirs, proj):
    """[(per layer/direction) {"wx", "wh"[, "wr"], "bx", "bh"}: (offset, shape)], total size."""
    g, h = _GATES[mode], state_size
    r = proj or h
    entries, off = [], 0
    for layer in range(num_layers):
        ni = input_size if layer == 0 else r * dirs
        for _ in range(dirs):
            e = {"wx": (off, (g * h, ni))}
            off += g * h * ni
            e["wh"] = (off, (g * h, r))
            off += g * h * r
            if proj:
                e["wr"] = (off, (proj, h))
                off += proj * h
            entries.append(e)
    for e in entries:
        e["bx"] = (off, (g * h,))
        off += g * h
        e["bh"] = (off, (g * h,))
        off += g * h
    return entries, off


def param_size(mode, num_layers=None, input_size=None, state_size=None, bidirectional=False,
               projection_size=None):
    """Length of the fused parameter vector (MXNet's GetRnnParamSize).

    Also callable as param_size(attrs, input_size) with the op's parsed attribute dict (mixnet/symbol/infer.py)."""
    if isinstance(mode, dict):
        a, input_size = mode, num_layers
        mode, num_layers, state_size = a["mode"], a["num_layers"], a["state_size"]
        bidirectional, projection_size = a.get("bidirectional", False), a.get("projection_size")
    return _layout(mode, int(num_layers), int(input_size), int(state_size), 2 if bidirectional else 1,
                   projection_size)[1]


def param_layout(mode, num_layers, input_size, state_size, bidirectional=False):
    """Where each weight and bias lies in the fused vector, for code that packs or unpacks it (mx.rnn's
    FusedRNNCell): ([per layer, direction l then r: {"wx", "wh", "bx", "bh"}: (offset, shape)], total size)."""
    return _layout(mode, int(num_layers), int(input_size), int(state_size), 2 if bidirectional else 1, None)


# ---------------------------------------------------------------------------------------------------------
# attributes, inputs, outputs, shape checks
_ATTRS = {
    "state_size": Attr(parse_int, REQUIRED, "hidden size H"),
    "num_layers": Attr(parse_int, REQUIRED),
    "bidirectional": Attr(parse_bool, False),
    "mode": Attr(choice("rnn_relu", "rnn_tanh", "lstm", "gru"), REQUIRED),
    "p": Attr(parse_float, 0.0, "dropout rate between layers (training only)"),
    "state_outputs": Attr(parse_bool, False),
    "projection_size": Attr(optional(parse_int), None),
    "lstm_state_clip_min": Attr(optional(parse_float), None),
    "lstm_state_clip_max": Attr(optional(parse_float), None),
    "lstm_state_clip_nan": Attr(parse_bool, False),
    "use_sequence_length": Attr(parse_bool, False),
}


def _input_names(a):
    names = ["data", "parameters", "state"]
    if a["mode"] == "lstm":
        names.append("state_cell")
    if a["use_sequence_length"]:
        names.append("sequence_length")
    return tuple(names)


def _has_mask(a):
    return a["p"] > 0 and a["num_layers"] > 1


def _n_visible(a):
    return (3 if a["mode"] == "lstm" else 2) if a["state_outputs"] else 1


def _n_outputs(a):
    return _n_visible(a) + (1 if _has_mask(a) else 0)


def _clip_range(a):
    lo, hi = a["lstm_state_clip_min"], a["lstm_state_clip_max"]
    if lo is None and hi is None:
        return None
    return lo, hi, a["lstm_state_clip_nan"]


def _check(shapes, a):
    """Validates input shapes and attributes; returns the output shapes (visible, then the hidden mask)."""
    mode, h, layers = a["mode"], a["state_size"], a["num_layers"]
    dirs = 2 if a["bidirectional"] else 1
    proj = a["projection_size"]
    names = _input_names(a)
    if len(shapes) != len(names):
        raise ValueError(f"expected {len(names)} inputs ({', '.join(names)}), got {len(shapes)}")
    if h < 1 or layers < 1:
        raise ValueError(f"state_size and num_layers must be positive, got {h} and {layers}")
    if not 0 <= a["p"] < 1:
        raise ValueError(f"dropout p must be in [0, 1), got {a['p']}")
    if proj is not None:
        if mode != "lstm":
            raise ValueError("projection_size is only supported for mode='lstm'")
        if proj < 1:
            raise ValueError(f"projection_size must be positive, got {proj}")
    lo, hi = a["lstm_state_clip_min"], a["lstm_state_clip_max"]
    if (lo is None) != (hi is None):
        raise ValueError("lstm_state_clip_min and lstm_state_clip_max must be given together")
    if lo is not None:
        if mode != "lstm":
            raise ValueError("lstm_state_clip_min/max are only supported for mode='lstm'")
        if lo > hi:
            raise ValueError(f"lstm_state_clip_min ({lo}) must not exceed lstm_state_clip_max ({hi})")
    data = tuple(shapes[0])
    if len(data) != 3:
        raise ValueError(f"data must be 3-D (seq_len, batch, input_size) in TNC layout, got shape {data}")
    t, n, i = data
    if t < 1 or i < 1:
        raise ValueError(f"data needs at least one time step and one input feature, got shape {data}")
    r = proj or h
    want = param_size(mode, layers, i, h, a["bidirectional"], proj)
    if tuple(shapes[1]) != (want,):
        raise ValueError(f"parameters must have shape ({want},) for mode={mode}, num_layers={layers}, "
                         f"input_size={i}, state_size={h}, bidirectional={a['bidirectional']}"
                         + (f", projection_size={proj}" if proj else "") + f"; got {tuple(shapes[1])}")
    if tuple(shapes[2]) != (layers * dirs, n, r):
        raise ValueError(f"state must have shape {(layers * dirs, n, r)} (num_layers * directions, batch, "
                         f"{'projection_size' if proj else 'state_size'}), got {tuple(shapes[2])}")
    k = 3
    if mode == "lstm":
        if tuple(shapes[3]) != (layers * dirs, n, h):
            raise ValueError(f"state_cell must have shape {(layers * dirs, n, h)}, got {tuple(shapes[3])}")
        k = 4
    if a["use_sequence_length"] and tuple(shapes[k]) != (n,):
        raise ValueError(f"sequence_length must have shape ({n},) (the batch size), got {tuple(shapes[k])}")
    out = [(t, n, dirs * r)]
    if a["state_outputs"]:
        out.append((layers * dirs, n, r))
        if mode == "lstm":
            out.append((layers * dirs, n, h))
    if _has_mask(a):
        out.append((layers - 1, t, n, dirs * r))
    return out


def _infer(shapes, dtypes, **a):
    out = _check(shapes, a)
    return out, [np.dtype(dtypes[0])] * len(out)


# ---------------------------------------------------------------------------------------------------------
# the forward computation, written once against a backend (numpy arrays for the kernel, mixnet ops for the
# gradient)
def _recur(B, x, h, c, w, mode, hsize, clip):
    """One direction of one layer over the whole sequence: (outputs (T, N, R), h_T, c_T)."""
    xw = B.fc(x, w["wx"], w["bx"])                              # all time steps' input projections at once
    steps = B.unstack(xw)
    outs = []
    for t, xt in enumerate(steps):
        hw = B.fc(h, w["wh"], w["bh"])
        c_new = None
        if mode == "lstm":
            gates = xt + hw
            i = B.sigmoid(B.cols(gates, 0, hsize))
            f = B.sigmoid(B.cols(gates, 1, hsize))
            g = B.tanh(B.cols(gates, 2, hsize))
            o = B.sigmoid(B.cols(gates, 3, hsize))
            c_new = f * c + i * g
            if clip is not None:
                c_new = B.clip(c_new, *clip)
            h_new = o * B.tanh(c_new)
            if "wr" in w:
                h_new = B.fc(h_new, w["wr"], None)
        elif mode == "gru":
            r = B.sigmoid(B.cols(xt, 0, hsize) + B.cols(hw, 0, hsize))
            z = B.sigmoid(B.cols(xt, 1, hsize) + B.cols(hw, 1, hsize))
            nn = B.tanh(B.cols(xt, 2, hsize) + r * B.cols(hw, 2, hsize))
            h_new = (1 - z) * nn + z * h
        elif mode == "rnn_tanh":
            h_new = B.tanh(xt + hw)
        else:
            h_new = B.relu(xt + hw)
        if B.has_lens:                                          # padded steps leave the state unchanged
            h = B.keep(t, h_new, h)
            if c_new is not None:
                c = B.keep(t, c_new, c)
        else:
            h, c = h_new, c_new
        outs.append(h_new)
    out = B.stack(outs)
    if B.has_lens:
        out = B.seqmask(out)                                    # padded outputs are zero
    return out, h, c


def _forward(B, x, params, state, cell, a, masks):
    mode, hsize, layers = a["mode"], a["state_size"], a["num_layers"]
    dirs = 2 if a["bidirectional"] else 1
    entries, _ = _layout(mode, layers, x.shape[2], hsize, dirs, a["projection_size"])
    clip = _clip_range(a)
    if B.has_lens:
        x = B.seqmask(x)                                        # padding (even NaN) never enters the sums
    hs = B.unstack(state)
    cs = B.unstack(cell) if mode == "lstm" else None
    hy, cy = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = {name: B.param(params, off, shape) for name, (off, shape) in entries[k].items()}
            xin = x if d == 0 else B.reverse(x)
            o, h, c = _recur(B, xin, hs[k], None if cs is None else cs[k], w, mode, hsize, clip)
            outs.append(o if d == 0 else B.reverse(o))
            hy.append(h)
            cy.append(c)
        x = outs[0] if dirs == 1 else B.concat(outs)
        if masks is not None and layer < layers - 1:
            x = x * B.layer_mask(masks, layer)
    results = [x]
    if a["state_outputs"]:
        results.append(B.stack(hy))
        if mode == "lstm":
            results.append(B.stack(cy))
    return results


class _ArrayBackend:
    """numpy / cupy arrays (the kernel)."""

    def __init__(self, xp, lens, t, n):
        self.xp = xp
        self.has_lens = lens is not None
        if self.has_lens:
            tt = xp.arange(t)[:, None]
            self.valid = tt < lens[None, :]                                  # T, N
            self.rev = xp.where(self.valid, lens[None, :] - 1 - tt, tt)      # reversal within each length
            self.batch = xp.arange(n)[None, :]

    def fc(self, x, w, b):
        y = self.xp.matmul(x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
        return y if b is None else y + b

    def unstack(self, x):
        return list(x)

    def stack(self, xs):
        return self.xp.stack(xs)

    def concat(self, xs):
        return self.xp.concatenate(xs, axis=-1)

    def cols(self, x, k, size):
        return x[..., k * size:(k + 1) * size]

    def sigmoid(self, x):
        with np.errstate(over="ignore"):                 # exp(-x) -> inf for x << 0: the result is exactly 0
            return registry.get("sigmoid").kernel(self.xp, x)

    def tanh(self, x):
        return self.xp.tanh(x)

    def relu(self, x):
        return self.xp.maximum(x, 0)

    def clip(self, c, lo, hi, nan):
        xp = self.xp
        if nan:
            c = xp.where(xp.isnan(c), xp.asarray(lo, dtype=c.dtype), c)
        lo, hi = xp.asarray(lo, dtype=c.dtype), xp.asarray(hi, dtype=c.dtype)
        return xp.where(c > hi, hi, xp.where(c < lo, lo, c))

    def keep(self, t, new, old):
        return self.xp.where(self.valid[t][:, None], new, old)

    def seqmask(self, x):
        return self.xp.where(self.valid[:, :, None], x, self.xp.zeros((), dtype=x.dtype))

    def reverse(self, x):
        return x[self.rev, self.batch] if self.has_lens else x[::-1]

    def param(self, params, off, shape):
        return params[off:off + int(np.prod(shape))].reshape(shape)

    def layer_mask(self, masks, layer):
        return masks[layer]


class _OpBackend:
    """mixnet ops (the gradient rule): every step is recorded, so the result differentiates again."""

    def __init__(self, lens, t, n, dtype, ctx):
        from ..ndarray.ndarray import array  # lazy: ndarray sits above ops
        self.has_lens = lens is not None
        self.lens = lens
        if self.has_lens:
            valid = np.arange(t)[:, None] < lens.asnumpy().astype(np.int64)[None, :]
            self.valid = [array(valid[s].astype(dtype), ctx=ctx, dtype=dtype) for s in range(t)]

    def fc(self, x, w, b):
        if b is None:
            return call("FullyConnected", x, w, num_hidden=w.shape[0], no_bias=True, flatten=False)
        return call("FullyConnected", x, w, b, num_hidden=w.shape[0], flatten=False)

    def unstack(self, x):
        if x.shape[0] == 1:
            return [call("Reshape", x, shape=x.shape[1:])]
        return list(call("SliceChannel", x, num_outputs=x.shape[0], axis=0, squeeze_axis=True))

    def stack(self, xs):
        return call("stack", *xs, axis=0, num_args=len(xs))

    def concat(self, xs):
        return call("Concat", *xs, dim=-1, num_args=len(xs))

    def cols(self, x, k, size):
        return call("slice_axis", x, axis=-1, begin=k * size, end=(k + 1) * size)

    def sigmoid(self, x):
        return call("sigmoid", x)

    def tanh(self, x):
        return call("tanh", x)

    def relu(self, x):
        return call("relu", x)

    def clip(self, c, lo, hi, nan):
        if nan:
            c = call("where", call("isnan", c), call("zeros_like", c) + lo, c)
        return call("clip", c, a_min=lo, a_max=hi)

    def keep(self, t, new, old):
        return call("where", self.valid[t], new, old)

    def seqmask(self, x):
        return call("SequenceMask", x, self.lens, use_sequence_length=True)

    def reverse(self, x):
        if self.has_lens:
            return call("SequenceReverse", x, self.lens, use_sequence_length=True)
        return call("SequenceReverse", x)

    def param(self, params, off, shape):
        size = int(np.prod(shape))
        return call("Reshape", call("slice_axis", params, axis=0, begin=off, end=off + size), shape=shape)

    def layer_mask(self, masks, layer):
        return masks[layer]


# ---------------------------------------------------------------------------------------------------------
# kernel and gradient
def _split_inputs(arrays, a):
    data, params, state = arrays[:3]
    k = 3
    cell = None
    if a["mode"] == "lstm":
        cell, k = arrays[3], 4
    lens = arrays[k] if a["use_sequence_length"] else None
    return data, params, state, cell, lens


def _check_lens(xp, lens, t):
    if lens is None:
        return None
    if lens.dtype.kind == "f" and bool(xp.isnan(lens).any()):
        raise ValueError("sequence_length contains NaN")
    lens = lens.astype(np.int64)
    if bool((lens < 0).any()) or bool((lens > t).any()):
        raise ValueError(f"sequence_length values must be in [0, {t}] (the sequence length), got "
                         f"{lens.tolist()}")
    return lens


def _fast_layout(a, input_size):
    dirs = 2 if a["bidirectional"] else 1
    return _layout(a["mode"], a["num_layers"], input_size, a["state_size"], dirs, a["projection_size"])


def _k_rnn(xp, *arrays, is_train, rng, **a):
    _check([x.shape for x in arrays], a)
    data, params, state, cell, lens = _split_inputs(arrays, a)
    dtype = data.dtype
    for name, x in (("parameters", params), ("state", state), ("state_cell", cell)):
        if x is not None and x.dtype != dtype:
            raise ValueError(f"{name} dtype {x.dtype} does not match data dtype {dtype}")
    t, n, _ = data.shape
    lens = _check_lens(xp, lens, t)
    masks = None
    if _has_mask(a):
        dirs = 2 if a["bidirectional"] else 1
        shape = (a["num_layers"] - 1, t, n, dirs * (a["projection_size"] or a["state_size"]))
        if is_train:
            # drawn on the host by the device's generator, then placed on the data's device
            masks = xp.asarray(((rng.random(shape) >= a["p"]) / (1.0 - a["p"])).astype(dtype))
        else:
            masks = xp.ones(shape, dtype=dtype)
    save = is_train or _mode.MODE.get().recording
    layout, _ = _fast_layout(a, data.shape[2])
    outs, reserve = _rnn_fast.forward(xp, data, params, state, cell, lens, masks if is_train else None, a, layout,
                                      _clip_range(a), save)
    outs = [xp.ascontiguousarray(o).astype(dtype, copy=False) for o in outs]
    if masks is not None:
        outs.append(masks)
    if save:
        _RESERVES.put(outs[0], arrays, reserve)
    return outs[0] if len(outs) == 1 else tuple(outs)


class _Reserves:
    """What RNN forwards saved for their backward (the activations of every step), found again by the `_rnn_bwd`
    kernel from the forward's output array: each entry lives as long as that array (a weak reference), which the
    autograd tape or a hybridized plan's saved values keep alive until the backward has run. An entry is used
    only if the backward's inputs are the forward's (the same arrays, or equal values); otherwise the backward
    runs the forward again (same results, slower). So this is a cache, never a source of different numbers.
    Like MXNet's stateful RNN operator, which keeps its reserve space between forward and backward."""

    def __init__(self):
        self._entries = {}

    def put(self, out, inputs, reserve):
        import weakref
        key = id(out)
        entries = self._entries

        def drop(_ref, key=key):
            e = entries.get(key)
            if e is not None and e[0] is _ref:
                entries.pop(key, None)
        entries[key] = (weakref.ref(out, drop), tuple(inputs), reserve)

    def get(self, out, inputs):
        e = self._entries.get(id(out))
        if e is None or e[0]() is not out or len(e[1]) != len(inputs):
            return None
        for old, new in zip(e[1], inputs):
            if old is new:
                continue
            if old.shape != new.shape or old.dtype != new.dtype or not bool(_array_equal(old, new)):
                return None
        return e[2]


def _array_equal(a, b):
    xp = np if isinstance(a, np.ndarray) else __import__("cupy")
    return xp.array_equal(a, b, equal_nan=a.dtype.kind == "f")


_RESERVES = _Reserves()


def _g_rnn(c, *out_grads):
    if _final_gradient():
        # the hand-derived BPTT over the forward's saved activations (first order: nothing differentiates it)
        return _fused_gradient(c, out_grads)
    return _composite_gradient(c, out_grads)


def _bwd_input_names(a):
    names = list(_input_names(a)) + ["output"]
    if _has_mask(a):
        names.append("masks")
    names.append("grad")
    if a["state_outputs"]:
        names.append("grad_state")
        if a["mode"] == "lstm":
            names.append("grad_state_cell")
    return tuple(names)


def _fused_gradient(c, out_grads):
    a = c.attrs
    ins = list(c.inputs) + [c.outputs[0]]
    if _has_mask(a):
        ins.append(c.outputs[-1].detach())
    ins += list(out_grads[:_n_visible(a)])
    grads = call("_rnn_bwd", *ins, **a)
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    return tuple(grads) + ((None,) if a["use_sequence_length"] else ())


def _split_bwd(arrays, a):
    n_in = len(_input_names(a))
    data, params, state, cell, lens = _split_inputs(arrays[:n_in], a)
    k = n_in + 1
    masks = None
    if _has_mask(a):
        masks, k = arrays[k], k + 1
    rest = list(arrays[k:]) + [None, None]
    return (data, params, state, cell, lens), arrays[:n_in], arrays[n_in], masks, rest[:3]


def _k_rnn_bwd(xp, *arrays, **a):
    (data, params, state, cell, lens), inputs, out, masks, heads = _split_bwd(arrays, a)
    t = data.shape[0]
    layout, size = _fast_layout(a, data.shape[2])
    clip = _clip_range(a)
    reserve = _RESERVES.get(out, inputs)
    if reserve is None:
        lens = _check_lens(xp, lens, t)
        _, reserve = _rnn_fast.forward(xp, data, params, state, cell, lens, masks, a, layout, clip, True)
    grads = _rnn_fast.backward(xp, reserve, a, layout, clip, params, heads, size, cell is not None)
    return tuple(xp.ascontiguousarray(g).astype(data.dtype, copy=False) for g in grads)


def _infer_bwd(shapes, dtypes, **a):
    n_in = len(_input_names(a))
    _check(list(shapes[:n_in]), a)
    n_out = 4 if a["mode"] == "lstm" else 3
    return [tuple(s) for s in shapes[:n_out]], [np.dtype(dtypes[0])] * n_out


def _bwd_composite(a, *proxies):
    """The same gradient as mixnet ops (the composite forward swept locally), for higher orders."""
    from .. import autograd  # lazy: autograd sits above ops
    (data, params, state, cell, lens), _, _, masks, heads = _split_bwd(proxies, a)
    t, n, _ = data.shape
    if masks is not None:
        masks = [call("Reshape", call("slice_axis", masks, axis=0, begin=k, end=k + 1), shape=masks.shape[1:])
                 for k in range(masks.shape[0])]
    B = _OpBackend(None if lens is None else lens.detach(), t, n, data.dtype, data.context)
    stops = [data, params, state] + ([cell] if cell is not None else [])
    outs = _forward(B, data, params, state, cell, a, masks)
    grads = autograd.local_gradients(outs, heads[:len(outs)], stops)
    return [call("zeros_like", s) if g is None else g for s, g in zip(stops, grads)]


def _composite_gradient(c, out_grads):
    from .. import autograd  # lazy: autograd sits above ops
    a = c.attrs
    inputs = c.inputs
    use_len = a["use_sequence_length"]
    n_diff = len(inputs) - (1 if use_len else 0)
    data = inputs[0]
    t, n, _ = data.shape
    masks = None
    if _has_mask(a):
        m = c.outputs[-1].detach()
        masks = [call("Reshape", call("slice_axis", m, axis=0, begin=k, end=k + 1), shape=m.shape[1:])
                 for k in range(m.shape[0])]
    with autograd.record(train_mode=c.is_train):
        proxies = [call("_copy", x) for x in inputs[:n_diff]]
        lens = inputs[-1].detach() if use_len else None
        B = _OpBackend(lens, t, n, data.dtype, data.context)
        px = proxies + [None] * (4 - len(proxies))
        cell = px[3] if a["mode"] == "lstm" else None
        outs = _forward(B, px[0], px[1], px[2], cell, a, masks)
    grads = autograd.local_gradients(outs, out_grads[:len(outs)], proxies)
    return tuple(grads) + ((None,) if use_len else ())


# ---------------------------------------------------------------------------------------------------------
# the independent reference: per sample, per step, reading the flat vector in gluon's parameter order
def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _ref_rnn(data, params, *rest, state_size, num_layers, bidirectional, mode, p, state_outputs,
             projection_size, lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan,
             use_sequence_length):
    data = data.astype(np.float64)
    params = params.astype(np.float64)
    rest = list(rest)
    h0 = rest.pop(0).astype(np.float64)
    c0 = rest.pop(0).astype(np.float64) if mode == "lstm" else None
    lens = rest.pop(0).astype(int) if use_sequence_length else None
    T, N, I = data.shape
    H, L = state_size, num_layers
    D = 2 if bidirectional else 1
    P = projection_size
    R = P or H
    G = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}[mode]
    pos = [0]

    def take(*shape):
        size = int(np.prod(shape))
        v = params[pos[0]:pos[0] + size].reshape(shape)
        pos[0] += size
        return v

    W = {}
    for l in range(L):
        for d in range(D):
            W[l, d, "i2h"] = take(G * H, I if l == 0 else R * D)
            W[l, d, "h2h"] = take(G * H, R)
            if P:
                W[l, d, "h2r"] = take(P, H)
    for l in range(L):
        for d in range(D):
            W[l, d, "bi"] = take(G * H)
            W[l, d, "bh"] = take(G * H)
    assert pos[0] == params.size
    out_all = np.zeros((T, N, D * R))
    hy = np.zeros((L * D, N, R))
    cy = np.zeros((L * D, N, H))
    layer_in = data
    for l in range(L):
        layer_out = np.zeros((T, N, D * R))
        for d in range(D):
            k = l * D + d
            for b in range(N):
                n_steps = T if lens is None else int(lens[b])
                h = h0[k, b].copy()
                c = None if c0 is None else c0[k, b].copy()
                order = range(n_steps) if d == 0 else range(n_steps - 1, -1, -1)
                for t in order:
                    xv = layer_in[t, b]
                    a_x = W[l, d, "i2h"] @ xv + W[l, d, "bi"]
                    a_h = W[l, d, "h2h"] @ h + W[l, d, "bh"]
                    if mode == "lstm":
                        s = a_x + a_h
                        ig, fg, gg, og = _sig(s[:H]), _sig(s[H:2 * H]), np.tanh(s[2 * H:3 * H]), _sig(s[3 * H:])
                        c = fg * c + ig * gg
                        if lstm_state_clip_min is not None:
                            if lstm_state_clip_nan:
                                c = np.where(np.isnan(c), lstm_state_clip_min, c)
                            c = np.clip(c, lstm_state_clip_min, lstm_state_clip_max)
                        h = og * np.tanh(c)
                        if P:
                            h = W[l, d, "h2r"] @ h
                    elif mode == "gru":
                        r = _sig(a_x[:H] + a_h[:H])
                        z = _sig(a_x[H:2 * H] + a_h[H:2 * H])
                        nv = np.tanh(a_x[2 * H:] + r * a_h[2 * H:])
                        h = (1 - z) * nv + z * h
                    elif mode == "rnn_tanh":
                        h = np.tanh(a_x + a_h)
                    else:
                        h = np.maximum(a_x + a_h, 0)
                    layer_out[t, b, d * R:(d + 1) * R] = h
                hy[k, b] = h
                if c is not None:
                    cy[k, b] = c
        layer_in = layer_out
        out_all = layer_out
    res = [out_all]
    if state_outputs:
        res.append(hy)
        if mode == "lstm":
            res.append(cy)
    return tuple(res) if len(res) > 1 else res[0]


def _case(mode, t, n, i, h, layers=1, bidir=False, lens=False, **attrs):
    d = 2 if bidir else 1
    r = attrs.get("projection_size") or h
    shapes = [(t, n, i), (param_size(mode, layers, i, h, bidir, attrs.get("projection_size")),),
              (layers * d, n, r)]
    if mode == "lstm":
        shapes.append((layers * d, n, h))
    if lens:
        shapes.append((n,))
    a = dict(state_size=h, num_layers=layers, bidirectional=bidir, mode=mode, use_sequence_length=lens, **attrs)
    return tuple(shapes), a


def _param_shapes(a, s):
    """The fused parameter vector and the begin states from the data's (seq, batch, size)."""
    if s[0] is None:
        return {}
    seq, batch, size = s[0]
    d = 2 if a["bidirectional"] else 1
    h = a["state_size"]
    out = {1: (param_size(a, size),), 2: (a["num_layers"] * d, batch, a.get("projection_size") or h)}
    if a["mode"] == "lstm":
        out[3] = (a["num_layers"] * d, batch, h)
    return out


register(OpDef(
    name="RNN", fast="_rnn_kernels (one loop per LSTM / GRU step)",
    kernel=_k_rnn, inputs=_input_names, attrs=_ATTRS, grad=_g_rnn, infer=_infer,
    param_shapes=ParamShapes(_param_shapes, variables_only=True),
    num_outputs=_n_outputs, num_visible=_n_visible, train_aware=True, random=True, nondiff_inputs=(4,),
    output_names=("output", "state_output", "statecell_output"), json_outputs=_n_visible,
    test=OpTest(ref=_ref_rnn, domain=(-1.0, 1.0), int_inputs={4: (1, 4)}, dtype="float32", rtol=1e-4, atol=1e-5,
                cases=(
                    _case("rnn_tanh", 3, 1, 2, 2, bidir=True),
                    _case("rnn_relu", 2, 2, 2, 2, state_outputs=True),
                    _case("lstm", 2, 1, 2, 2, layers=2, state_outputs=True),
                    _case("gru", 2, 1, 2, 2, bidir=True, state_outputs=True),
                    _case("lstm", 3, 2, 1, 2, bidir=True, lens=True, state_outputs=True),
                    _case("lstm", 2, 1, 2, 2, projection_size=1, state_outputs=True),
                    _case("lstm", 2, 1, 2, 2, lstm_state_clip_min=-0.3, lstm_state_clip_max=0.35,
                          state_outputs=True),
                )),
    doc="MXNet's fused RNN op (rnn_relu, rnn_tanh, lstm, gru), TNC layout; see the module docstring."))


def _ref_rnn_bwd(*arrays, **a):
    """Central differences (float64) of sum(outputs * head gradients) through _ref_rnn."""
    _, inputs, _, _, heads = _split_bwd(arrays, a)
    heads = [h.astype(np.float64) for h in heads if h is not None]
    base = [x.astype(np.float64) for x in inputs]
    kw = {k: a[k] for k in ("state_size", "num_layers", "bidirectional", "mode", "p", "state_outputs",
                            "projection_size", "lstm_state_clip_min", "lstm_state_clip_max",
                            "lstm_state_clip_nan", "use_sequence_length")}

    def f(xs):
        outs = _ref_rnn(*xs, **kw)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(float((o * h).sum()) for o, h in zip(outs, heads))

    n_diff = 4 if a["mode"] == "lstm" else 3
    grads = []
    for k in range(n_diff):
        g = np.zeros_like(base[k])
        for i in range(g.size):
            xs = [x.copy() for x in base]
            xs[k].reshape(-1)[i] += 1e-6
            up = f(xs)
            xs[k].reshape(-1)[i] -= 2e-6
            g.reshape(-1)[i] = (up - f(xs)) / 2e-6
        grads.append(g)
    return tuple(grads)


def _bwd_case(mode, t, n, i, h, layers=1, bidir=False, lens=False, **attrs):
    shapes, a = _case(mode, t, n, i, h, layers, bidir, lens, **attrs)
    outs = _check(list(shapes), dict(_defaults(), **a))
    return tuple(shapes) + (outs[0],) + tuple(outs), a


def _defaults():
    return {k: v.default for k, v in _ATTRS.items()}


register(OpDef(
    name="_rnn_bwd", fast="_rnn_kernels (one loop per LSTM / GRU step)",
    kernel=_k_rnn_bwd, inputs=_bwd_input_names, attrs=_ATTRS, grad=_replayed(_bwd_composite),
    infer=_infer_bwd, num_outputs=lambda a: 4 if a["mode"] == "lstm" else 3, nondiff_inputs=(4,), hidden=True,
    test=OpTest(ref=_ref_rnn_bwd, domain=(-1.0, 1.0), int_inputs={4: (1, 3)}, rtol=1e-3, atol=1e-4, grad2=False,
                cases=(
                    _bwd_case("rnn_tanh", 3, 1, 2, 2, bidir=True),
                    _bwd_case("gru", 2, 2, 2, 2, state_outputs=True),
                    _bwd_case("lstm", 3, 2, 1, 2, bidir=True, lens=True, state_outputs=True),
                    _bwd_case("lstm", 2, 1, 2, 2, projection_size=1, lstm_state_clip_min=-0.3,
                              lstm_state_clip_max=0.35, state_outputs=True),
                )),
    doc="RNN's first-order gradient (d data, d parameters, d state[, d state_cell]): backpropagation through time "
        "over the activations the forward saved (or recomputed when they are not found), given the forward's "
        "inputs and output and the head gradients."))


# ---------------------------------------------------------------------------------------------------------
# _rnn_param_concat: how gluon joins the flattened parameters (a Concat whose output shape MXNet also infers
# backwards; here it is a plain concatenation)
def _param_concat_shape(shapes, dtypes, num_args, dim):
    """(axis, output shape): a plain concatenation along `dim` (common.concat_shape)."""
    if num_args is not None and num_args != len(shapes):
        raise ValueError(f"expects {num_args} inputs, but got {len(shapes)}")
    if not shapes:
        raise ValueError("needs at least one input")
    check_same_dtypes(dtypes)
    return concat_shape(shapes, dim)


def _k_param_concat(xp, *arrays, num_args, dim):
    ax, _ = _param_concat_shape([x.shape for x in arrays], [x.dtype for x in arrays], num_args, dim)
    return xp.concatenate(arrays, axis=ax)


def _g_param_concat(c, g):
    ax = c.attrs["dim"] % c.inputs[0].ndim
    grads, start = [], 0
    for x in c.inputs:
        size = x.shape[ax]
        grads.append(call("slice_axis", g, axis=ax, begin=start, end=start + size) if size
                     else call("zeros_like", x))
        start += size
    return tuple(grads)


def _ref_param_concat(*xs, num_args, dim):
    out = xs[0]
    for x in xs[1:]:
        out = np.concatenate([out, x], axis=dim)
    return out


register(OpDef(
    name="_rnn_param_concat", kernel=_k_param_concat, inputs=("data",), variadic=True, kind="shape",
    attrs={"num_args": Attr(optional(parse_int), None, "number of inputs (filled in automatically)"),
           "dim": Attr(parse_int, 1)},
    grad=_g_param_concat,
    infer=lambda shapes, dtypes, num_args, dim: ([_param_concat_shape(shapes, dtypes, num_args, dim)[1]], [dtypes[0]]),
    test=OpTest(ref=_ref_param_concat, cases=(
        (((6,), (4,), (3,)), {"dim": 0}), (((2, 3), (2, 4)), {}), (((2, 3), (1, 3)), {"dim": 0}))),
    doc="Concatenates the flattened RNN parameters (gluon's fused layers export it with dim=0)."))
