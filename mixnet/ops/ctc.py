"""CTCLoss (MXNet's `CTCLoss` / `ctc_loss` / `_contrib_CTCLoss`): connectionist temporal classification.

data (T, N, C) holds unnormalized scores (a softmax over C is applied inside); label (N, L) holds class indices.
blank_label='first' (MXNet's default): the blank is class 0, labels are 1..C-1 and 0 pads a label row;
'last': the blank is C-1, labels are 0..C-2 and -1 pads. Without label_lengths a row ends at its first padding
value. data_lengths / label_lengths (used when use_data_lengths / use_label_lengths) give per-sample lengths.
Output: the negative log-likelihood per sample, shape (N,).

The forward-backward recursion runs in float64, in log space, vectorized over the batch. The gradient w.r.t.
data is softmax - posterior occupation (zero past a sample's data length), computed with the forward pass and
kept as a hidden output, scaled by the incoming gradient. As in MXNet it is a first-order rule: its own
derivative (the CTC Hessian) is not provided, so the hidden gradient is a constant to higher-order autograd.

Where no alignment exists (a label too long for the sequence) MXNet returns a loss of 0; so does mixnet, with a
zero gradient (MXNet leaves that gradient uninitialized). An empty label gives -sum(log p(blank)).
"""
import numpy as np

from .attrs import Attr, choice, parse_bool
from .registry import OpDef, OpTest, register

_NEG = -np.inf


def _inputs(attrs):
    names = ["data", "label"]
    if attrs["use_data_lengths"]:
        names.append("data_lengths")
    if attrs["use_label_lengths"]:
        names.append("label_lengths")
    return tuple(names)


def _lse(*xs):
    """log(sum(exp(x))) elementwise over same-shape arrays, safe when all are -inf."""
    m = xs[0]
    for x in xs[1:]:
        m = np.maximum(m, x)
    safe = np.where(np.isfinite(m), m, 0.0)
    total = sum(np.exp(x - safe) for x in xs)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(m), np.log(total) + safe, _NEG)


def _ctc(data, label, data_lengths, label_lengths, blank_label):
    T, N, C = data.shape
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    label = np.asarray(label, np.float64).reshape(N, -1).astype(np.int64)
    L = label.shape[1]
    if label_lengths is None:
        is_pad = label == pad
        lab_len = np.where(is_pad.any(axis=1), is_pad.argmax(axis=1), L)
    else:
        lab_len = np.asarray(label_lengths).astype(np.int64).reshape(N)
        if (lab_len < 0).any() or (lab_len > L).any():
            raise ValueError(f"label_lengths must lie in [0, {L}], got {lab_len.tolist()}")
    if data_lengths is None:
        dat_len = np.full(N, T, np.int64)
    else:
        dat_len = np.asarray(data_lengths).astype(np.int64).reshape(N)
        if (dat_len < 0).any() or (dat_len > T).any():
            raise ValueError(f"data_lengths must lie in [0, {T}] (the sequence length), got {dat_len.tolist()}")
    valid_lab = np.arange(L)[None, :] < lab_len[:, None]
    bad = valid_lab & ((label < 0) | (label >= C))
    if bad.any():
        raise ValueError(f"labels must be class indices in [0, {C}), got {label[bad].tolist()[:5]}")

    x = data.astype(np.float64)
    m = x.max(axis=2, keepdims=True)
    logp = x - m - np.log(np.exp(x - m).sum(axis=2, keepdims=True))          # (T, N, C)

    S = 2 * L + 1
    ext = np.full((N, S), blank, np.int64)
    ext[:, 1::2] = np.where(valid_lab, label, blank)
    s_len = 2 * lab_len + 1
    in_seq = np.arange(S)[None, :] < s_len[:, None]                          # (N, S)
    skip = np.zeros((N, S), bool)
    skip[:, 2:] = (ext[:, 2:] != ext[:, :-2]) & (np.arange(2, S) % 2 == 1)[None, :]
    rows = np.arange(N)[:, None]
    lp_ext = np.where(in_seq[None], logp[:, rows, ext], _NEG)                # (T, N, S)

    alpha = np.full((T, N, S), _NEG)
    beta = np.full((T, N, S), _NEG)
    if T > 0:
        a0 = np.full((N, S), _NEG)
        a0[:, 0] = lp_ext[0, :, 0]
        a0[:, 1:2] = np.where(lab_len[:, None] > 0, lp_ext[0, :, 1:2], _NEG)
        alpha[0] = a0
        for t in range(1, T):
            prev = alpha[t - 1]
            s1 = np.concatenate([np.full((N, 1), _NEG), prev[:, :-1]], axis=1)
            s2 = np.concatenate([np.full((N, 2), _NEG), prev[:, :-2]], axis=1)
            alpha[t] = _lse(prev, s1, np.where(skip, s2, _NEG)) + lp_ext[t]
        last = np.arange(S)[None, :]
        for t in range(T - 1, -1, -1):
            start = (dat_len - 1 == t)[:, None]
            init = np.where((last == s_len[:, None] - 1) | (last == s_len[:, None] - 2), lp_ext[t], _NEG)
            if t + 1 < T:
                nxt = beta[t + 1]
                n1 = np.concatenate([nxt[:, 1:], np.full((N, 1), _NEG)], axis=1)
                n2 = np.concatenate([nxt[:, 2:], np.full((N, 2), _NEG)], axis=1)
                skip_next = np.concatenate([skip[:, 2:], np.zeros((N, 2), bool)], axis=1)
                rec = _lse(nxt, n1, np.where(skip_next, n2, _NEG)) + lp_ext[t]
            else:
                rec = np.full((N, S), _NEG)
            beta[t] = np.where(start, init, np.where((t < dat_len - 1)[:, None], rec, _NEG))

    n_idx = np.arange(N)
    end = np.clip(dat_len - 1, 0, None)
    a_end = alpha[end, n_idx] if T > 0 else np.full((N, S), _NEG)           # (N, S)
    last_blank = a_end[n_idx, s_len - 1]
    last_label = np.where(lab_len > 0, a_end[n_idx, np.clip(s_len - 2, 0, None)], _NEG)
    loglik = _lse(last_blank, last_label)
    loglik = np.where(dat_len == 0, np.where(lab_len == 0, 0.0, _NEG), loglik)
    feasible = np.isfinite(loglik)
    loss = np.where(feasible, -loglik, 0.0)

    grad = np.zeros((T, N, C))
    if T > 0:
        with np.errstate(invalid="ignore"):
            occ = np.exp(alpha + beta - lp_ext - np.where(feasible, loglik, 0.0)[None, :, None])
        occ = np.where(np.isfinite(occ), occ, 0.0)                           # (T, N, S)
        onehot = (ext[:, :, None] == np.arange(C)[None, None, :]).astype(np.float64)   # (N, S, C)
        post = np.einsum("tns,nsc->tnc", occ, onehot)
        active = (np.arange(T)[:, None] < dat_len[None, :]) & feasible[None, :]
        grad = np.where(active[:, :, None], np.exp(logp) - post, 0.0)
    return loss, grad


def _k_ctc(xp, data, label, *lengths, use_data_lengths, use_label_lengths, blank_label):
    if data.ndim != 3:
        raise ValueError(f"data must be (sequence_length, batch_size, alphabet_size), got shape {data.shape}")
    if label.ndim != 2 or label.shape[0] != data.shape[1]:
        raise ValueError(f"label must be (batch_size, label_sequence_length) with batch_size {data.shape[1]}, "
                         f"got shape {label.shape}")
    lengths = list(lengths)
    data_lengths = lengths.pop(0) if use_data_lengths else None
    label_lengths = lengths.pop(0) if use_label_lengths else None
    to_np = (lambda a: a.get()) if xp is not np else (lambda a: a)
    loss, grad = _ctc(to_np(data), to_np(label), None if data_lengths is None else to_np(data_lengths),
                      None if label_lengths is None else to_np(label_lengths), blank_label)
    return xp.asarray(loss.astype(data.dtype)), xp.asarray(grad.astype(data.dtype))


def _g_ctc(ctx, g, g_hidden=None):
    n = ctx.inputs[0].shape[1]
    grads = [ctx.outputs[1] * g.reshape((1, n, 1)), None]
    grads += [None] * (len(ctx.inputs) - 2)
    return tuple(grads)


def _infer_ctc(shapes, dtypes, **attrs):
    data = tuple(shapes[0])
    return [(data[1],), data], [dtypes[0], dtypes[0]]


def _ref_ctc_bruteforce(data, label, use_data_lengths=False, use_label_lengths=False, blank_label="first"):
    """Sums the probabilities of every alignment path (tiny T and C only)."""
    import itertools
    T, N, C = data.shape
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    x = data.astype(np.float64)
    p = np.exp(x - x.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    out = np.zeros(N, np.float32)
    for n in range(N):
        row = [int(v) for v in label[n]]
        target = tuple(row[:row.index(pad)] if pad in row else row)
        total = 0.0
        for path in itertools.product(range(C), repeat=T):
            collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
            if tuple(collapsed) == target:
                total += np.prod([p[t, n, path[t]] for t in range(T)])
        out[n] = -np.log(total) if total > 0 else 0.0
    return out


register(OpDef(
    name="CTCLoss", kernel=_k_ctc, inputs=_inputs, aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    attrs={"use_data_lengths": Attr(parse_bool, False), "use_label_lengths": Attr(parse_bool, False),
           "blank_label": Attr(choice("first", "last"), "first")},
    grad=_g_ctc, infer=_infer_ctc, num_outputs=2, num_visible=1, nondiff_inputs=(1, 2, 3),
    test=OpTest(ref=_ref_ctc_bruteforce, cases=((((4, 2, 3), (2, 2)), {}),),
                int_inputs={1: (1, 3)}, grad=True, grad2=False, rtol=1e-4, atol=1e-5),
    doc="Connectionist Temporal Classification loss; see the module docstring."))
