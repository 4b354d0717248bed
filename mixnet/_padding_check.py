"""check_padding_invariance: a model's outputs and gradients must not depend on the padding of its sequences.

The check runs the model on the user's inputs (the reference) and again with every padded input's steps at or past
each sequence's valid length overwritten with a fill value and `pad` more steps of it appended, for each fill
(zeros, NaN, 1e30 by default), eagerly and hybridized. It compares:

* outputs: on their valid region (an output axis that grew with the padding is a time axis: positions at or past
  the length are not compared; an output that kept its shape is compared whole);
* parameter gradients, whole; input gradients on the valid steps; and the gradient that reaches padded steps of
  an input must be exactly 0.

Gradients come from a scalar loss built from valid positions only: `loss_fn(out, valid_length)` where given, else
sum(out * w) over every float output's valid region with fixed random weights w, selected with `where` so that
NaN padding in an output cannot leak into it. On a difference it raises PaddingInvarianceError naming what
differs, and the first layer (in the order blocks finish their forward, so innermost first) whose outputs differ
between the eager reference run and the eager padded run, found with forward hooks.
"""
import contextlib
import math

import numpy as np

from . import autograd
from ._nest import flatten
from .base import MXNetError
from .ndarray import NDArray, array
from .gluon import cached_graph
from . import ndarray as nd

__all__ = ["PaddingInvarianceError", "check_padding_invariance"]


class PaddingInvarianceError(MXNetError, AssertionError):
    """Padding changed a model's outputs or gradients (an AssertionError too, so test frameworks report it as a
    failed check)."""


def _array_or_dropped(x):
    if isinstance(x, NDArray):
        return [x], "x"
    return None if isinstance(x, (list, tuple)) else ([], None)


def _flat(out):
    """A nested (tuple/list) output as a flat list of NDArrays (other values dropped)."""
    return flatten(out, _array_or_dropped, "")[0]


def _block_paths(net):
    """id(block) -> its attribute path ('net.encoder.0'), for the report."""
    paths = {}

    def walk(block, path):
        paths.setdefault(id(block), path)
        for key, child in block._children.items():
            walk(child, f"{path}.{key}")
    walk(net, "net")
    return paths


class _Lengths:
    """The padded inputs (time axis, batch axis, valid lengths) and how to read an output's valid region."""

    def __init__(self, args, valid_length, padded, axis, pad):
        if isinstance(valid_length, dict):
            if padded is not None:
                raise MXNetError("check_padding_invariance: give either valid_length as a dict {input index: "
                                 "lengths} or `padded`, not both")
            lens = {int(i): v for i, v in valid_length.items()}
        else:
            if padded is None:
                padded = [i for i, a in enumerate(args)
                          if isinstance(a, NDArray) and a is not valid_length and a.ndim > _axis_of(axis, i)]
            lens = {int(i): valid_length for i in padded}
        if not lens:
            raise MXNetError("check_padding_invariance: no input to pad (give `padded`, the indices of the inputs "
                             "with a time axis)")
        if not isinstance(pad, int) or pad < 1:
            raise MXNetError(f"check_padding_invariance: pad must be a positive number of steps, got {pad!r}")
        self.pad = pad
        self.out_lengths = lens[min(lens)]
        self.objects = [v for v in lens.values() if isinstance(v, NDArray)]
        self.inputs = {}                                    # input index -> (time axis, batch axis, lengths)
        for i, v in sorted(lens.items()):
            if not 0 <= i < len(args) or not isinstance(args[i], NDArray):
                raise MXNetError(f"check_padding_invariance: input {i} is not an NDArray input of the model")
            x, ax = args[i], _axis_of(axis, i)
            if x.ndim < 2 or ax not in (0, 1):
                raise MXNetError(f"check_padding_invariance: input {i} of shape {x.shape} has no time axis {ax} "
                                 "(the time axis is 0 (TNC) or 1 (NTC))")
            n = np.asarray(v.asnumpy() if isinstance(v, NDArray) else v).astype(np.int64).reshape(-1)
            bax = 1 - ax
            if n.shape != (x.shape[bax],) or n.min(initial=0) < 0 or n.max(initial=0) > x.shape[ax]:
                raise MXNetError(f"check_padding_invariance: valid lengths {n.tolist()} do not fit input {i} of "
                                 f"shape {x.shape} (batch axis {bax}, time axis {ax})")
            self.inputs[i] = (ax, bax, n, x.shape[ax])

    def input_mask(self, i, shape):
        ax, bax, n, _ = self.inputs[i]
        return _mask(shape, {ax: (bax, n)})

    def time_axes(self, ref_shape, shape):
        """{axis: (batch axis, lengths per batch row)} for the axes of an output that grew by the padding (an
        axis of reference size T that grew by `pad` follows the first padded input of T steps); None when the
        shapes cannot be read so (an axis changed otherwise, or a batch axis that is not a multiple of the
        batch)."""
        if len(ref_shape) != len(shape):
            return None
        axes = {}
        for ax, (r, s) in enumerate(zip(ref_shape, shape)):
            if r == s:
                continue
            n = next((n for (_, _, n, t) in self.inputs.values() if t == r), None) if s == r + self.pad else None
            bax = 0 if ax != 0 else 1
            if n is None or len(shape) < 2 or not len(n) or shape[bax] % len(n):
                return None
            axes[ax] = (bax, np.repeat(n, shape[bax] // len(n)))        # batch-major rows (b * k + j)
        return axes


def _axis_of(axis, i):
    return axis.get(i, 1) if isinstance(axis, dict) else axis


def _mask(shape, axes):
    """Boolean mask of `shape`, True where every time axis' position is below its batch row's length."""
    mask = np.ones(shape, dtype=bool)
    for ax, (bax, n) in axes.items():
        keep = np.arange(shape[ax]).reshape(-1, 1) < n.reshape(1, -1)      # time, batch
        if bax < ax:
            keep = keep.T
        view = [1] * len(shape)
        view[min(ax, bax)], view[max(ax, bax)] = keep.shape
        mask = mask & keep.reshape(view)
    return mask


def _fill_value(fill, dtype):
    """A fill an integer input can hold: NaN and values out of range become the dtype's largest value."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return info.max if not math.isfinite(fill) or not info.min <= fill <= info.max else int(fill)
    return fill


def _pad_input(x, ax, bax, n, pad, fill):
    """x with the steps at or past each length set to `fill` and `pad` steps of it appended along `ax`."""
    a = x.asnumpy()
    shape = list(a.shape)
    shape[ax] += pad
    value = a.dtype.type(_fill_value(fill, a.dtype))
    out = np.full(shape, value, dtype=a.dtype)
    out[tuple(slice(0, d) for d in a.shape)] = a
    out = np.where(_mask(tuple(shape), {ax: (bax, n)}), out, value)
    return array(out, ctx=x.context, dtype=a.dtype)


def _worst(ref, got, mask, rtol, atol):
    """(max abs error, index) over the masked region where |got - ref| > atol + rtol |ref| or NaN-ness differs;
    None when within tolerance. `got` is sliced to ref's shape first."""
    got = got[tuple(slice(0, d) for d in ref.shape)]
    ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got64 - ref64)
        both_nan = np.isnan(ref64) & np.isnan(got64)
        bad = ~(err <= atol + rtol * np.abs(ref64)) & ~both_nan
    if mask is not None:
        bad &= mask[tuple(slice(0, d) for d in ref.shape)]
    if not bad.any():
        return None
    err = np.where(bad, np.nan_to_num(err, nan=np.inf), -1.0)
    idx = np.unravel_index(int(np.argmax(err)), err.shape)
    return float(err[idx]), tuple(int(i) for i in idx)


def _fmt_err(worst):
    err, idx = worst
    return f"max abs error {'NaN/inf' if not math.isfinite(err) else f'{err:.3g}'} at {idx}"


class _Runner:
    """Runs the model once (eager or hybridized) under autograd and returns outputs and gradients as numpy."""

    def __init__(self, net, lens, loss_fn, grad, train_mode, seed):
        self.net, self.lens, self.loss_fn, self.grad, self.train_mode = net, lens, loss_fn, grad, train_mode
        self.seed = seed
        self.out_axes = None                   # per output: its time axes, from the probe
        self.weights = None                    # the default loss's fixed weights, on the reference shapes

    def forward(self, args, hooks=None):
        token = cached_graph.EAGER.set(True)
        handles = []
        if hooks is not None:
            def record(block, _inputs, out):
                hooks.append((block, [o.asnumpy() for o in _flat(out)]))
            self.net.apply(lambda b: handles.append(b.register_forward_hook(record)))
        try:
            with autograd.train_mode() if self.train_mode else autograd.predict_mode():
                return _flat(self.net(*args))
        finally:
            cached_graph.EAGER.reset(token)
            for h in handles:
                h.detach()

    def probe(self, ref_args, padded_args):
        """Learns each output's time axes from a reference and a padded forward (this also initializes deferred
        parameters) and draws the default loss's weights."""
        ref, padded = self.forward(ref_args), self.forward(padded_args)
        self.out_axes = []
        for k, (r, p) in enumerate(zip(ref, padded)):
            axes = self.lens.time_axes(r.shape, p.shape)
            if axes is None:
                raise MXNetError(f"check_padding_invariance: cannot tell the valid region of output {k}: its shape "
                                 f"{r.shape} became {p.shape} with {self.lens.pad} steps of padding (an axis that "
                                 "grows must grow by the padding, with batch rows a multiple of the batch)")
            self.out_axes.append(axes)
        rng = np.random.default_rng(self.seed)
        self.weights = [rng.uniform(0.5, 1.5, size=r.shape) for r in ref]

    def _default_loss(self, outs):
        total = None
        for o, axes, w in zip(outs, self.out_axes, self.weights):
            if np.dtype(o.dtype).kind != "f" or not o.size:
                continue
            full = np.zeros(o.shape)
            full[tuple(slice(0, d) for d in w.shape)] = w
            mask = _mask(o.shape, axes)
            # where, not a product with the mask: NaN in an output's padding must not reach the loss
            term = nd.where(array(mask, ctx=o.context, dtype=o.dtype), o * array(full, ctx=o.context, dtype=o.dtype),
                            nd.zeros_like(o)).sum().astype("float64")
            total = term if total is None else total + term
        return total

    def run(self, args):
        params = [p for p in self.net.collect_params().values() if p.grad_req != "null" and p._data is not None]
        args = [a.copy() if isinstance(a, NDArray) else a for a in args]
        wrt = [i for i, a in enumerate(args) if isinstance(a, NDArray) and np.dtype(a.dtype).kind == "f"
               and not any(a is v for v in self.lens.objects) and self.grad]
        # the lengths objects travel as they are (the model may compare them by identity); others are copies
        for i in wrt:
            args[i].attach_grad()
        for p in params:
            p.zero_grad()
        with autograd.record(train_mode=self.train_mode):
            out = self.net(*args)
            if self.grad:
                vl = self.lens.out_lengths
                loss = self.loss_fn(out, vl) if self.loss_fn is not None else self._default_loss(_flat(out))
        if self.grad and loss is not None:
            loss.backward()
        outs = [o.asnumpy() for o in _flat(out)]
        pgrads = {p.name: p.grad().asnumpy() for p in params} if self.grad else {}
        igrads = {i: args[i].grad.asnumpy() for i in wrt}
        return outs, pgrads, igrads


def _compare(runner, lens, ref, got, rtol, atol):
    """Lines describing how `got` (a padded run) differs from `ref`; empty when it does not."""
    lines = []
    for k, (r, g) in enumerate(zip(ref[0], got[0])):
        worst = _worst(r, g, _mask(g.shape, runner.out_axes[k]), rtol, atol)
        if worst:
            lines.append(f"output {k} (shape {r.shape}, padded {g.shape}), valid region: {_fmt_err(worst)}")
    for name, r in ref[1].items():
        worst = _worst(r, got[1][name], None, rtol, atol)
        if worst:
            lines.append(f"gradient of parameter {name!r} (shape {r.shape}): {_fmt_err(worst)}")
    for i, r in ref[2].items():
        g = got[2][i]
        valid = lens.input_mask(i, g.shape) if i in lens.inputs else None
        worst = _worst(r, g, valid, rtol, atol)
        if worst:
            lines.append(f"gradient of input {i} (shape {r.shape}){', valid steps' if valid is not None else ''}: "
                         f"{_fmt_err(worst)}")
        if valid is not None:
            leak = ~valid & ~(g == 0)
            if leak.any():
                lines.append(f"gradient of input {i} reaches {int(leak.sum())} padded positions (it must be 0 "
                             f"there): max |grad| {float(np.nan_to_num(np.abs(g[leak]), nan=np.inf).max()):.3g} at "
                             f"{tuple(int(j) for j in np.argwhere(leak)[0])}")
    return lines


def _first_divergent_layer(runner, lens, ref_args, padded_args, rtol, atol):
    """The first block (in the order blocks finish their eager forward) whose outputs differ on their valid
    region between the reference and the padded run; a sentence."""
    ref_rec, pad_rec = [], []
    runner.forward(ref_args, hooks=ref_rec)
    runner.forward(padded_args, hooks=pad_rec)
    paths = _block_paths(runner.net)
    seen, ref_at = {}, {}
    for block, outs in ref_rec:
        key = (id(block), seen.get(id(block), 0))
        seen[id(block)] = key[1] + 1
        ref_at[key] = outs
    seen = {}
    for block, outs in pad_rec:
        key = (id(block), seen.get(id(block), 0))
        seen[id(block)] = key[1] + 1
        for j, (r, g) in enumerate(zip(ref_at.get(key, []), outs)):
            axes = lens.time_axes(r.shape, g.shape)
            worst = None if axes is None else _worst(r, g, _mask(g.shape, axes), rtol, atol)
            if worst:
                return (f"first layer whose output differs: {paths.get(id(block), '?')} ({type(block).__name__} "
                        f"{block.name!r}), output {j} of shape {r.shape} (padded run: {g.shape}): "
                        f"{_fmt_err(worst)}")
    return ("no layer's eager forward output differs on its valid region: the difference arises in the backward "
            "pass, only when hybridized, or in the model's own code outside its child blocks")


@contextlib.contextmanager
def _mode(net, hybrid):
    """Runs the block eagerly (hybrid=False, even if hybridized) or hybridized (hybridizing it for the while when
    no block in it is)."""
    blocks = []
    net.apply(blocks.append)
    toggle = hybrid and not any(getattr(b, "_active", False) for b in blocks)
    token = None if hybrid else cached_graph.EAGER.set(True)
    if toggle:
        net.hybridize()
    try:
        yield
    finally:
        if token is not None:
            cached_graph.EAGER.reset(token)
        if toggle:
            net.hybridize(False)


def check_padding_invariance(net, inputs, valid_length, padded=None, axis=1, pad=3,
                             fills=(0.0, float("nan"), 1e30), loss_fn=None, grad=True, hybridize=(False, True),
                             rtol=1e-4, atol=1e-5, train_mode=False, seed=0):
    """Checks that `net(*inputs)`'s outputs and gradients do not depend on the padding of its sequences.

    inputs: the model's positional arguments (an NDArray or a list; None allowed), padded as the user has them.
    valid_length: the valid lengths (B,) (an NDArray, numpy array or list), shared by every padded input; or a
        dict {input index: lengths} for models whose sequences have different lengths (queries and keys).
        When it is one of `inputs` it is passed unchanged and never padded.
    padded: indices of the inputs to pad (default: every NDArray input with a time axis, other than the lengths).
    axis: the time axis of the padded inputs, 1 (NTC, default) or 0 (TNC); or a dict {input index: axis}.
    pad: the number of steps of padding appended; the steps already past each length are overwritten too.
    fills: the padding values tried, each in its own run (integer inputs get the dtype's largest value for NaN
        and out-of-range fills).
    loss_fn: `loss_fn(out, valid_length) -> NDArray`, the loss whose gradients are compared, built from valid
        positions only (with `where` or SequenceMask, so NaN padding cannot leak in); `valid_length` is the
        lengths of the first padded input. Default: sum(out * w) over each float output's valid region, w fixed
        random weights.
    grad: also compare the gradients of the parameters (whole) and of the float inputs (valid steps; padded
        steps must get exactly 0).
    hybridize: the modes run, False = eager, True = hybridized (a net none of whose blocks is hybridized is
        hybridized for the check and un-hybridized afterwards; otherwise it runs as the user hybridized it).
    rtol, atol: |padded - reference| <= atol + rtol * |reference|, elementwise (NaN matches only NaN).
    train_mode: run in training mode (Dropout would then make runs differ; default predict mode).

    Raises PaddingInvarianceError (an MXNetError and an AssertionError) for the first (mode, fill) that differs,
    listing every output and gradient that differs and the first layer whose eager output differs.
    """
    args = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    lens = _Lengths(args, valid_length, padded, axis, pad)
    if not isinstance(lens.out_lengths, NDArray):
        lens.out_lengths = array(np.asarray(lens.out_lengths), ctx=args[min(lens.inputs)].context)
    variants = [(fill, [_pad_input(a, *lens.inputs[i][:3], pad, fill) if i in lens.inputs else a
                        for i, a in enumerate(args)]) for fill in fills]
    runner = _Runner(net, lens, loss_fn, grad, train_mode, seed)
    runner.probe(args, variants[0][1] if variants else args)
    for hybrid in hybridize:
        with _mode(net, hybrid):
            ref = runner.run(args)
            results = [(fill, a, runner.run(a)) for fill, a in variants]
        for fill, padded_args, got in results:
            lines = _compare(runner, lens, ref, got, rtol, atol)
            if lines:
                where = _first_divergent_layer(runner, lens, args, padded_args, rtol, atol)
                raise PaddingInvarianceError(
                    f"padding changes {type(net).__name__} {getattr(net, 'name', '')!r} "
                    f"({'hybridized' if hybrid else 'eager'}, fill={fill!r}, {pad} extra steps, rtol={rtol}, "
                    f"atol={atol}):\n  " + "\n  ".join(lines) + f"\n  {where}")
