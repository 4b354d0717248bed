"""Fused recurrent layers `RNN`, `LSTM`, `GRU` (MXNet 1.x `gluon.rnn`): one call of the `RNN` op over the whole
sequence, with the per-layer, per-direction parameters joined by `_rnn_param_concat` in MXNet's fused order.

Differences from MXNet, on purpose:
* `sequence_length` works for every mode, both directions, on CPU and GPU (MXNet: LSTM on GPU only, and wrong
  when bidirectional).
* When no states are given, the zero begin states are made inside the computation from the input (so they take
  its dtype and batch size, eagerly and while tracing alike); the hybridized graph then has no state inputs.
* Whether the states are returned is decided per call, not cached with the traced graph, so calls with and
  without states can share a hybridized layer.
"""
import re

from ...base import MXNetError
from ... import ndarray as nd_module
from ...ndarray.ndarray import NDArray
from ..block import HybridBlock
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    """Shared implementation; `mode` is one of rnn_relu, rnn_tanh, lstm, gru."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 mode, projection_size, h2r_weight_initializer, lstm_state_clip_min, lstm_state_clip_max,
                 lstm_state_clip_nan, dtype, use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise MXNetError(f"{type(self).__name__}: invalid layout {layout!r}; must be one of ['TNC' or 'NTC']")
        self._hidden_size, self._projection_size = hidden_size, projection_size or None
        self._num_layers, self._mode, self._layout = num_layers, mode, layout
        self._dropout, self._dir, self._input_size = dropout, 2 if bidirectional else 1, input_size
        self._clip = (lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan)
        self._dtype, self._use_sequence_length = dtype, use_sequence_length
        self._gates = _GATES[mode]
        ng, nh, nr = self._gates, hidden_size, self._projection_size or hidden_size
        inits = {"i2h_weight": i2h_weight_initializer, "h2h_weight": h2h_weight_initializer,
                 "i2h_bias": i2h_bias_initializer, "h2h_bias": h2h_bias_initializer,
                 "h2r_weight": h2r_weight_initializer}
        ni = input_size
        for i in range(num_layers):
            for d in "lr"[:self._dir]:
                shapes = {"i2h_weight": (ng * nh, ni), "h2h_weight": (ng * nh, nr),
                          "i2h_bias": (ng * nh,), "h2h_bias": (ng * nh,)}
                if self._projection_size:
                    shapes["h2r_weight"] = (nr, nh)
                for kind, shape in shapes.items():
                    name = f"{d}{i}_{kind}"
                    param = self.params.get(name, shape=shape, init=inits[kind], allow_deferred_init=True,
                                            dtype=dtype)
                    setattr(self, name, param)
            ni = nr * self._dir

    def __repr__(self):
        shape = getattr(self, "l0_i2h_weight").shape
        mapping = f"{shape[1] if shape[1] else None} -> {self._hidden_size}"
        extra = "".join([f", {self._layout}" if self._layout != "TNC" else "",
                         f", num_layers={self._num_layers}" if self._num_layers != 1 else "",
                         f", dropout={self._dropout}" if self._dropout else "",
                         ", bidirectional" if self._dir == 2 else ""])
        return f"{type(self).__name__}({mapping}{extra})"

    def _collect_params_with_prefix(self, prefix=""):
        """Structural names in MXNet's 'unfused' spelling, so save_parameters files load in MXNet and back:
        `_unfused.0.i2h_weight`, or `_unfused.0.l_cell.i2h_weight` when bidirectional."""
        if prefix:
            prefix += "."
        pattern = re.compile(r"([lr])(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")
        result = {}
        for key, param in self._reg_params.items():
            d, layer, kind, what = pattern.match(key).groups()
            cell = f"{d}_cell." if self._dir == 2 else ""
            result[f"{prefix}_unfused.{layer}.{cell}{kind}_{what}"] = param
        return result

    def _unfuse(self):
        """The same network as a HybridSequentialRNNCell of per-layer cells (BidirectionalCell pairs when
        bidirectional, DropoutCell between layers), sharing this layer's parameters: `l0_i2h_weight` is both
        this layer's and the first cell's."""
        if self._projection_size or any(self._clip[:2]):
            raise MXNetError(f"{type(self).__name__} {self.name!r}: _unfuse supports neither projection_size nor "
                             "state clipping (the cells have no such options)")
        make = {"rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="relu", **kw),
                "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="tanh", **kw),
                "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kw = {"input_size": ni}
                kw.update((kind + "_initializer", getattr(self, f"l{i}_{kind}").init)
                          for kind in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"))
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix=f"l{i}_", **kw), make(prefix=f"r{i}_", **kw)))
                else:
                    stack.add(make(prefix=f"l{i}_", **kw))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def state_info(self, batch_size=0):
        lnc = self._num_layers * self._dir
        h = {"shape": (lnc, batch_size, self._projection_size or self._hidden_size), "__layout__": "LNC",
             "dtype": self._dtype}
        if self._mode != "lstm":
            return [h]
        return [h, {"shape": (lnc, batch_size, self._hidden_size), "__layout__": "LNC", "dtype": self._dtype}]

    def begin_state(self, batch_size=0, func=nd_module.zeros, **kwargs):
        """Initial states, one array per state_info entry, made by `func(name=..., shape=..., ...)`."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info, **kwargs)
            info.pop("__layout__", None)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def infer_shape(self, inputs, *args):
        ni = inputs.shape[2]
        for d in "lr"[:self._dir]:
            param = getattr(self, f"{d}0_i2h_weight")
            param.shape = (param.shape[0], ni)

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        skip_states = states is None
        if isinstance(states, NDArray) or (states is not None and not isinstance(states, (list, tuple))):
            states = [states]
        if sequence_length is not None and not self._use_sequence_length:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: sequence_length was given, but the layer was "
                             "made with use_sequence_length=False")
        if self._use_sequence_length and sequence_length is None:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: the layer was made with "
                             "use_sequence_length=True, so every call needs sequence_length (the valid length of "
                             "each sequence in the batch)")
        args = (inputs, states, sequence_length) if self._use_sequence_length else (inputs, states)
        out = super().__call__(*args, **kwargs)
        return out[0] if skip_states else out

    def hybrid_forward(self, F, inputs, states=None, sequence_length=None, **params):
        if isinstance(inputs, NDArray):
            if inputs.ndim != 3:
                raise MXNetError(f"{type(self).__name__} {self.name!r}: inputs must be 3-D in layout "
                                 f"{self._layout}, got shape {tuple(inputs.shape)}")
            batch_size = inputs.shape[self._layout.find("N")]
            if states is not None:
                for state, info in zip(states, self.state_info(batch_size)):
                    if tuple(state.shape) != info["shape"]:
                        raise MXNetError(f"{type(self).__name__} {self.name!r}: invalid recurrent state shape. "
                                         f"Expecting {info['shape']}, got {tuple(state.shape)}.")
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        if states is None:
            states = self._zero_states(F, inputs)
        kinds = ("i2h_weight", "h2h_weight") + (("h2r_weight",) if self._projection_size else ())
        weights = [f"{d}{i}_{k}" for i in range(self._num_layers) for d in "lr"[:self._dir] for k in kinds]
        biases = [f"{d}{i}_{k}" for i in range(self._num_layers) for d in "lr"[:self._dir]
                  for k in ("i2h_bias", "h2h_bias")]
        flat = [F.reshape(params[n], shape=(-1,)) for n in weights + biases]
        joined = F._rnn_param_concat(*flat, dim=0)
        extra = [sequence_length] if self._use_sequence_length else []
        lo, hi, nan = self._clip
        rnn = F.RNN(inputs, joined, *states, *extra, state_size=self._hidden_size,
                    projection_size=self._projection_size, num_layers=self._num_layers,
                    bidirectional=self._dir == 2, p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=lo, lstm_state_clip_max=hi, lstm_state_clip_nan=nan,
                    use_sequence_length=self._use_sequence_length, name="rnn0")
        outputs = rnn[0]
        new_states = [rnn[1], rnn[2]] if self._mode == "lstm" else [rnn[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, new_states

    def _zero_states(self, F, tnc):
        """Zero begin states (L*D, N, R) and, for LSTM, (L*D, N, H), built from the TNC input so that batch size,
        dtype and device follow it in eager and traced code alike."""
        column = F.zeros_like(F.slice_axis(F.slice_axis(tnc, axis=0, begin=0, end=1), axis=2, begin=0, end=1))
        lnc = self._num_layers * self._dir
        sizes = [self._projection_size or self._hidden_size] + ([self._hidden_size] if self._mode == "lstm" else [])
        return [F.broadcast_axis(column, axis=(0, 2), size=(lnc, size)) for size in sizes]


class RNN(_RNNLayer):
    """A multi-layer Elman RNN: `h_t = activation(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh)`.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state.
    num_layers : int, default 1
        The number of stacked layers.
    activation : str, default 'relu'
        'relu' or 'tanh'.
    layout : str, default 'TNC'
        The input and output layout: 'TNC' (time, batch, channels) or 'NTC'.
    dropout : float, default 0
        Dropout applied to the outputs of every layer but the last, while training.
    bidirectional : bool, default False
        Also run each layer backwards in time and concatenate both directions' outputs.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
        The initializers of the input-to-hidden and hidden-to-hidden weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializers of the biases.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    dtype : str, default 'float32'
        The parameters' dtype.
    use_sequence_length : bool, default False
        The call takes a `sequence_length` input (batch,) and each sequence stops at its length.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (T, N, C) for 'TNC' ((N, T, C) for 'NTC'); `states` (optional): a list of one array, the hidden state, each of
    shape (num_layers * D, N, hidden_size), D = 2 if bidirectional else 1 (zeros when not given);
    `sequence_length` (N,) with use_sequence_length=True.
    Outputs: `out` of shape (T, N, D * hidden_size) for 'TNC' ((N, T, D * hidden_size) for 'NTC'), and, when
    states were given, the final states in the same form as `states`.
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0, bidirectional=False,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", use_sequence_length=False, **kwargs):
        if activation not in ("relu", "tanh"):
            raise MXNetError(f"RNN: activation must be 'relu' or 'tanh', got {activation!r}")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False, dtype,
                         use_sequence_length, **kwargs)


class LSTM(_RNNLayer):
    """A multi-layer long short-term memory layer (gates i, f, g, o), with an optional projection (LSTMP) and
    cell-state clipping.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state.
    num_layers : int, default 1
        The number of stacked layers.
    layout : str, default 'TNC'
        The input and output layout: 'TNC' (time, batch, channels) or 'NTC'.
    dropout : float, default 0
        Dropout applied to the outputs of every layer but the last, while training.
    bidirectional : bool, default False
        Also run each layer backwards in time and concatenate both directions' outputs.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
        The initializers of the input-to-hidden and hidden-to-hidden weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializers of the biases.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    dtype : str, default 'float32'
        The parameters' dtype.
    use_sequence_length : bool, default False
        The call takes a `sequence_length` input (batch,) and each sequence stops at its length.
    projection_size : int, optional
        Project the hidden state to this size (LSTMP); None: no projection.
    h2r_weight_initializer : str or Initializer, optional
        The projection weight's initializer.
    state_clip_min, state_clip_max : float, optional
        Clip the cell state to [min, max] (both or neither).
    state_clip_nan : bool, default False
        With clipping, also replace NaN cell states by the bounds.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (T, N, C) for 'TNC' ((N, T, C) for 'NTC'); `states` (optional): a list [h, c] of the hidden and cell states, each of
    shape (num_layers * D, N, hidden_size), D = 2 if bidirectional else 1 (zeros when not given);
    `sequence_length` (N,) with use_sequence_length=True.
    Outputs: `out` of shape (T, N, D * hidden_size) for 'TNC' ((N, T, D * hidden_size) for 'NTC'), and, when
    states were given, the final states in the same form as `states`.

    Examples
    --------
    >>> import mixnet as mx
    >>> layer = mx.gluon.rnn.LSTM(hidden_size=4, num_layers=2)
    >>> layer.initialize()
    >>> x = mx.nd.ones((5, 3, 8))                      # (T, N, C)
    >>> out, (h, c) = layer(x, layer.begin_state(batch_size=3))
    >>> out.shape, h.shape, c.shape
    ((5, 3, 4), (2, 3, 4), (2, 3, 4))
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None, h2r_weight_initializer=None,
                 state_clip_min=None, state_clip_max=None, state_clip_nan=False, dtype="float32",
                 use_sequence_length=False, **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer, state_clip_min,
                         state_clip_max, state_clip_nan, dtype, use_sequence_length, **kwargs)


class GRU(_RNNLayer):
    """A multi-layer gated recurrent unit layer (gates r, z, n; the reset gate multiplies the hidden-to-hidden
    product including its bias, as cuDNN and MXNet do).

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state.
    num_layers : int, default 1
        The number of stacked layers.
    layout : str, default 'TNC'
        The input and output layout: 'TNC' (time, batch, channels) or 'NTC'.
    dropout : float, default 0
        Dropout applied to the outputs of every layer but the last, while training.
    bidirectional : bool, default False
        Also run each layer backwards in time and concatenate both directions' outputs.
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer, optional
        The initializers of the input-to-hidden and hidden-to-hidden weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializers of the biases.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    dtype : str, default 'float32'
        The parameters' dtype.
    use_sequence_length : bool, default False
        The call takes a `sequence_length` input (batch,) and each sequence stops at its length.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (T, N, C) for 'TNC' ((N, T, C) for 'NTC'); `states` (optional): a list of one array, the hidden state, each of
    shape (num_layers * D, N, hidden_size), D = 2 if bidirectional else 1 (zeros when not given);
    `sequence_length` (N,) with use_sequence_length=True.
    Outputs: `out` of shape (T, N, D * hidden_size) for 'TNC' ((N, T, D * hidden_size) for 'NTC'), and, when
    states were given, the final states in the same form as `states`.
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", use_sequence_length=False, **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype, use_sequence_length,
                         **kwargs)
