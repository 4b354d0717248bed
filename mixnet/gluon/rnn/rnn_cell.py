"""Recurrent cells (MXNet 1.x `gluon.rnn`): one time step per call, `cell(x, states) -> (out, new_states)`, and
`unroll`, a static Python loop over the time steps (valid_length through SequenceMask / SequenceLast /
SequenceReverse).

One deliberate difference from MXNet: begin states that unroll makes itself follow the inputs' dtype and batch
size, eagerly and while tracing (MXNet makes float32 zeros of batch size 0 for the graph to infer, so float64
cells or hybridized unrolls without begin_state fail there).
"""
from ... import ndarray as nd_module
from ... import symbol as sym_module
from ...base import MXNetError
from ...ndarray.ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]

_TENSORS = (NDArray, Symbol)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _split(F, x, length, axis):
    """(…, T, …) -> list of T arrays with the time axis squeezed out."""
    if isinstance(x, Symbol):
        if length is None:
            raise MXNetError("unroll: `length` is required for symbolic (traced) inputs")
        return list(F.split(x, axis=axis, num_outputs=length, squeeze_axis=1))
    if length is not None and length != x.shape[axis]:
        raise MXNetError(f"unroll: length={length}, but the inputs have {x.shape[axis]} steps on axis {axis} "
                         f"(shape {tuple(x.shape)})")
    return _as_list(F.split(x, axis=axis, num_outputs=x.shape[axis], squeeze_axis=1))


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Brings `inputs` (one array in `in_layout`, or a list of per-step (N, C) arrays) into the requested form:
    a list of steps (merge False), one array in `layout` (merge True) or as it came (merge None).
    Returns (inputs, time axis, F, batch size or 0 when unknown)."""
    if inputs is None:
        raise MXNetError("unroll(inputs=None) is not supported; pass the input sequence")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, _TENSORS):
        F = sym_module if isinstance(inputs, Symbol) else nd_module
        if isinstance(inputs, NDArray):
            batch_size = inputs.shape[batch_axis]
        if merge is False:
            inputs = _split(F, inputs, length, in_axis)
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll: length={length}, but {len(inputs)} input steps were given")
        F = sym_module if isinstance(inputs[0], Symbol) else nd_module
        if F is nd_module:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, _TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _first_step(F, inputs, axis):
    """An (N, C) array of the sequence: what zero begin states are shaped and typed after."""
    if isinstance(inputs, _TENSORS):
        return F.squeeze(F.slice_axis(inputs, axis=axis, begin=0, end=1), axis=axis)
    return inputs[0]


def _get_begin_state(cell, F, begin_state, inputs, axis, batch_size):
    if begin_state is not None:
        return begin_state
    step = _first_step(F, inputs, axis)
    if F is nd_module:
        return cell.begin_state(batch_size=batch_size, ctx=step.context, dtype=step.dtype)

    def zeros(name=None, shape=None, **_):
        # while tracing the batch size is not known: broadcast a zero column of the first input step
        if shape is None or len(shape) != 2:
            raise MXNetError(f"unroll: cannot make a zero begin state of shape {shape} from symbolic inputs; "
                             "pass begin_state")
        column = F.zeros_like(F.slice_axis(step, axis=1, begin=0, end=1))
        return F.broadcast_axis(column, axis=1, size=shape[1])
    return cell.begin_state(batch_size=batch_size, func=zeros)


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    if not isinstance(data, _TENSORS):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        outputs = _split(F, outputs, length, time_axis)
    return outputs


def _reverse_sequences(sequences, length, valid_length=None):
    if valid_length is None:
        return list(reversed(sequences))
    F = sym_module if isinstance(sequences[0], Symbol) else nd_module
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length, use_sequence_length=True)
    return _split(F, rev, length, 0)


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _get_activation(F, inputs, activation, **kwargs):
    if isinstance(activation, str):
        fn = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}.get(activation)
        if fn is not None:
            return fn(inputs, **kwargs)
        return F.Activation(inputs, act_type=activation, **kwargs)
    if isinstance(activation, Block):
        return activation(inputs)
    return activation(inputs, **kwargs)


class RecurrentCell(Block):
    """The base class of recurrent cells: `cell(x, states)` runs one time step and returns `(output,
    new_states)`; `unroll` runs a whole sequence; `state_info`/`begin_state` describe and make the states.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the cells' parameters.
    params : ParameterDict, optional
        Parameters to share.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Resets the step counters (names of the step nodes); unroll calls it first."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """The states the cell takes: a list of dicts with each state's `shape` (and `__layout__`).

        Parameters
        ----------
        batch_size : int, default 0
            The batch size to put in the shapes.
        """
        raise MXNetError(f"{type(self).__name__} must define state_info(batch_size)")

    def begin_state(self, batch_size=0, func=nd_module.zeros, **kwargs):
        """The initial states: one array per `state_info` entry, made by `func(name=..., shape=..., **kwargs)`.

        Parameters
        ----------
        batch_size : int, default 0
            The batch size the states are shaped for, (batch_size, hidden_size) for the simple cells.
        func : callable, default nd.zeros
            Makes one state from `name=`, `shape=` and `**kwargs` (e.g. `nd.random.uniform`, `sym.var`).
        **kwargs
            Passed on to `func`, e.g. `ctx=` or `dtype=`.

        Returns
        -------
        list of NDArray or Symbol
            The states, in the order the cell takes them ([h] for RNN/GRU cells, [h, c] for LSTMCell).
        """
        if self._modified:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: after applying a modifier cell, call "
                             "begin_state on the modifier cell, not on the base cell")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {}, **kwargs)
            info.pop("__layout__", None)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the cell over `length` time steps, a Python loop of `cell(step, states)` calls.

        Parameters
        ----------
        length : int
            The number of time steps.
        inputs : NDArray, Symbol or list of NDArray or Symbol
            One array in `layout`, or a list of `length` arrays of shape (batch, channels).
        begin_state : list of NDArray or Symbol, optional
            The initial states; None: zeros of the inputs' dtype and batch size.
        layout : str, default 'NTC'
            The layout of `inputs` and of merged outputs: 'NTC' or 'TNC'.
        merge_outputs : bool, optional
            True: the outputs as one array in `layout`; False: a list of per-step arrays; None: the form the
            inputs came in.
        valid_length : NDArray or Symbol, optional
            The length of each sequence, shape (batch,): outputs past it are zero and the returned states are
            those of each sequence's last valid step.

        Returns
        -------
        outputs : NDArray, Symbol or list
            Shape (batch, length, hidden) for 'NTC' when merged, else `length` arrays of (batch, hidden).
        states : list of NDArray or Symbol
            The states after the last (valid) step, shaped as `begin_state`.
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        begin_state = _get_begin_state(self, F, begin_state, inputs, axis, batch_size)
        states, outputs, all_states = begin_state, [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0) for steps in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def forward(self, inputs, states):
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """The base class of recurrent cells written with `hybrid_forward(self, F, inputs, states, **params)`; they
    can be hybridized.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the cells' parameters.
    params : ParameterDict, optional
        Parameters to share.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError(f"{type(self).__name__} must define hybrid_forward(self, F, inputs, states, ...)")


class _GatedCell(HybridRecurrentCell):
    """i2h/h2h parameters of the simple cells: i2h_weight (G*H, input_size), h2h_weight (G*H, H), biases."""
    _gates = 1

    def _make_params(self, hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                     i2h_bias_initializer, h2h_bias_initializer):
        self._hidden_size, self._input_size = hidden_size, input_size
        gh = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(gh, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(gh, hidden_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(gh,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(gh,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def infer_shape(self, inputs, *args):
        self.i2h_weight.shape = (self.i2h_weight.shape[0], inputs.shape[-1])

    def __repr__(self):
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]})"

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        n = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=n, name=prefix + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=n, name=prefix + "h2h")
        return i2h, h2h


class RNNCell(_GatedCell):
    """An Elman recurrent cell: `h' = activation(W_ih x + b_ih + W_hh h + b_hh)`.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state (and of the output).
    activation : str or callable, default 'tanh'
        'tanh', 'relu', 'sigmoid', 'softsign', another Activation name, a Block or a function of (F, x).
    i2h_weight_initializer : str or Initializer, optional
        The initializer of the input-to-hidden weight (default: the one given to `initialize`).
    h2h_weight_initializer : str or Initializer, optional
        The initializer of the hidden-to-hidden weight.
    i2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the input-to-hidden bias.
    h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the hidden-to-hidden bias.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    prefix : str, optional
        The name prefix of the parameters.
    params : ParameterDict, optional
        Parameters to share.

    Notes
    -----
    Inputs: `data` (batch, input_size) and `states`, a list [h] with h of shape (batch, hidden_size).
    Outputs: `out` (batch, hidden_size) and the new states [h'] (h' is `out`).
    Parameters: `i2h_weight` (hidden_size, input_size), `h2h_weight` (hidden_size, hidden_size), `i2h_bias`
    and `h2h_bias` (hidden_size,).
    """

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._activation = activation
        self._make_params(hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                          i2h_bias_initializer, h2h_bias_initializer)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix)
        output = _get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"), self._activation,
                                 name=prefix + "out")
        return output, [output]


class _RecurrentGatedCell(_GatedCell):
    """LSTM and GRU cells: MXNet's constructor, with an activation and a recurrent (gate) activation."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(prefix=prefix, params=params)
        self._activation, self._recurrent_activation = activation, recurrent_activation
        self._make_params(hidden_size, input_size, i2h_weight_initializer, h2h_weight_initializer,
                          i2h_bias_initializer, h2h_bias_initializer)


def _lstm_gates(F, i2h, h2h, prev_c, act, rec, prefix, h_name):
    """The gate math from the i2h/h2h projections and the previous cell state: (h', c').
    Shared with contrib.rnn.LSTMPCell, which names h' `h_name` and projects it."""
    gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
    sliced = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
    in_gate = _get_activation(F, sliced[0], rec, name=prefix + "i")
    forget_gate = _get_activation(F, sliced[1], rec, name=prefix + "f")
    in_transform = _get_activation(F, sliced[2], act, name=prefix + "c")
    out_gate = _get_activation(F, sliced[3], rec, name=prefix + "o")
    next_c = F.elemwise_add(F.elemwise_mul(forget_gate, prev_c, name=prefix + "mul0"),
                            F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"), name=prefix + "state")
    next_h = F.elemwise_mul(out_gate, _get_activation(F, next_c, act, name=prefix + "activation0"),
                            name=prefix + h_name)
    return next_h, next_c


class LSTMCell(_RecurrentGatedCell):
    """A long short-term memory cell, gates [i, f, g, o]: `c' = f*c + i*g`, `h' = o*activation(c')`.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state (and of the output).
    i2h_weight_initializer : str or Initializer, optional
        The initializer of the input-to-hidden weight (default: the one given to `initialize`).
    h2h_weight_initializer : str or Initializer, optional
        The initializer of the hidden-to-hidden weight.
    i2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the input-to-hidden bias.
    h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the hidden-to-hidden bias.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    prefix : str, optional
        The name prefix of the parameters.
    params : ParameterDict, optional
        Parameters to share.
    activation : str or callable, default 'tanh'
        The activation of the candidate g and of the cell state (an Activation name, a Block or a function of (F, x)).
    recurrent_activation : str or callable, default 'sigmoid'
        The activation of the gates.

    Notes
    -----
    Inputs: `data` (batch, input_size) and `states`, a list [h, c], each of shape (batch, hidden_size).
    Outputs: `out` (batch, hidden_size) and the new states [h', c'] (h' is `out`).
    Parameters: `i2h_weight` (4 * hidden_size, input_size), `h2h_weight` (4 * hidden_size, hidden_size),
    `i2h_bias` and `h2h_bias` (4 * hidden_size,), gate blocks in the order i, f, g, o.

    Examples
    --------
    >>> import mixnet as mx
    >>> cell = mx.gluon.rnn.LSTMCell(hidden_size=4)
    >>> cell.initialize(mx.init.Constant(0.1))
    >>> x = mx.nd.ones((2, 3, 5))                       # (N, T, C)
    >>> outputs, (h, c) = cell.unroll(3, x, layout="NTC", merge_outputs=True)
    >>> outputs.shape, h.shape, c.shape
    ((2, 3, 4), (2, 4), (2, 4))
    >>> print(h[0].asnumpy().round(4))                 # the same as MXNet 1.9.1 gives
    [0.3898 0.3898 0.3898 0.3898]
    >>> lengths = mx.nd.array([1, 3])                   # the first sequence stops after one step
    >>> outputs, _ = cell.unroll(3, x, merge_outputs=True, valid_length=lengths)
    >>> print(outputs[0, :, 0].asnumpy().round(4))
    [0.1743 0.     0.    ]
    """
    _gates = 4

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix)
        next_h, next_c = _lstm_gates(F, i2h, h2h, states[1], self._activation, self._recurrent_activation, prefix,
                                     "out")
        return next_h, [next_h, next_c]


class GRUCell(_RecurrentGatedCell):
    """A gated recurrent unit cell, gates [r, z, n]: `n = activation(W_in x + b_in + r*(W_hn h + b_hn))`,
    `h' = (1 - z)*n + z*h`.

    Parameters
    ----------
    hidden_size : int
        The size of the hidden state (and of the output).
    i2h_weight_initializer : str or Initializer, optional
        The initializer of the input-to-hidden weight (default: the one given to `initialize`).
    h2h_weight_initializer : str or Initializer, optional
        The initializer of the hidden-to-hidden weight.
    i2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the input-to-hidden bias.
    h2h_bias_initializer : str or Initializer, default 'zeros'
        The initializer of the hidden-to-hidden bias.
    input_size : int, default 0
        The input's channel count; 0 infers it from the first input.
    prefix : str, optional
        The name prefix of the parameters.
    params : ParameterDict, optional
        Parameters to share.
    activation : str or callable, default 'tanh'
        The activation of the candidate n (an Activation name, a Block or a function of (F, x)).
    recurrent_activation : str or callable, default 'sigmoid'
        The activation of the gates.

    Notes
    -----
    Inputs: `data` (batch, input_size) and `states`, a list [h] with h of shape (batch, hidden_size).
    Outputs: `out` (batch, hidden_size) and the new states [h'] (h' is `out`).
    Parameters: `i2h_weight` (3 * hidden_size, input_size), `h2h_weight` (3 * hidden_size, hidden_size),
    `i2h_bias` and `h2h_bias` (3 * hidden_size,), gate blocks in the order r, z, n.
    """
    _gates = 3

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        prev_h = states[0]
        i2h, h2h = self._projections(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix)
        i2h_r, i2h_z, i2h_n = list(F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice"))
        h2h_r, h2h_z, h2h_n = list(F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice"))
        rec = self._recurrent_activation
        reset_gate = _get_activation(F, F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"), rec,
                                     name=prefix + "r_act")
        update_gate = _get_activation(F, F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"), rec,
                                      name=prefix + "z_act")
        candidate = _get_activation(F, F.elemwise_add(i2h_n, F.elemwise_mul(reset_gate, h2h_n,
                                                                             name=prefix + "mul0"),
                                                      name=prefix + "plus2"), self._activation,
                                    name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F.elemwise_add(F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"),
                                               candidate, name=prefix + "mul1"),
                                F.elemwise_mul(update_gate, prev_h, name=prefix + "mul20"), name=prefix + "out")
        return next_h, [next_h]


class _SequentialCells:
    """What SequentialRNNCell and HybridSequentialRNNCell share: stacked cells, states concatenated."""

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        lines += [f"  ({i}): " + repr(c).replace("\n", "\n  ") for i, c in enumerate(self._children.values())]
        return "\n".join(lines) + "\n)"

    def add(self, cell):
        """Appends a cell to the stack.

        Parameters
        ----------
        cell : RecurrentCell
            The cell; its states follow those of the cells added before it.
        """
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        """The cells' initial states, concatenated in the order the cells were added.

        Parameters
        ----------
        **kwargs
            Passed to every cell's `begin_state` (`batch_size=`, `func=`, `ctx=`, `dtype=`, ...).
        """
        if self._modified:
            raise MXNetError(f"{type(self).__name__} {self.name!r}: after applying a modifier cell, call "
                             "begin_state on the modifier cell, not on the base cell")
        return _cells_begin_state(self._children.values(), **kwargs)

    def _step(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise MXNetError("BidirectionalCell cannot be stepped inside a sequential cell; use unroll")
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the stack over `length` time steps; the parameters and the returned `(outputs, states)` are those
        of `RecurrentCell.unroll` (each cell unrolls the whole sequence before the next one starts)."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, axis, batch_size)
        cells, p, next_states = list(self._children.values()), 0, []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                                         merge_outputs=None if i < len(cells) - 1 else merge_outputs,
                                         valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_SequentialCells, RecurrentCell):
    """Stacks recurrent cells: a step runs them in order, each on the previous one's output and on its own
    slice of the states; `unroll` unrolls each cell over the whole sequence in turn.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the cells' parameters.
    params : ParameterDict, optional
        Parameters to share.

    Notes
    -----
    Inputs: `data` (batch, input_size) and `states`, the concatenation of the cells' state lists (as
    `begin_state` makes it). Outputs: the last cell's output and the new states in the same order.

    Examples
    --------
    >>> import mixnet as mx
    >>> stack = mx.gluon.rnn.SequentialRNNCell()
    >>> stack.add(mx.gluon.rnn.LSTMCell(4))
    >>> stack.add(mx.gluon.rnn.GRUCell(3))
    >>> stack.initialize()
    >>> [s.shape for s in stack.begin_state(batch_size=2)]         # LSTM [h, c], then GRU [h]
    [(2, 4), (2, 4), (2, 3)]
    >>> out, states = stack.unroll(5, mx.nd.ones((2, 5, 6)), merge_outputs=True)
    >>> out.shape, len(states)
    ((2, 5, 3), 3)
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def __call__(self, inputs, states):
        return self._step(inputs, states)


class HybridSequentialRNNCell(_SequentialCells, HybridRecurrentCell):
    """Stacks hybrid recurrent cells, like `SequentialRNNCell`; `hybridize()` compiles a step of the whole
    stack as one graph.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the cells' parameters.
    params : ParameterDict, optional
        Parameters to share.

    Notes
    -----
    Inputs: `data` (batch, input_size) and `states`, the concatenation of the cells' state lists.
    Outputs: the last cell's output and the new states in the same order.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, inputs, states):
        return self._step(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies dropout to its input while training (inside `autograd.record()`), the identity otherwise; it has
    no states. Put it between the cells of a `SequentialRNNCell`.

    Parameters
    ----------
    rate : float
        The probability of zeroing an element (the others are scaled by 1 / (1 - rate)).
    axes : tuple of int, default ()
        Axes along which one dropout mask is shared (variational dropout); () draws every element.
    prefix : str, optional
        The name prefix.
    params : ParameterDict, optional
        Unused (the cell has no parameters); accepted as every cell takes it.

    Notes
    -----
    Inputs: `data` of any shape and `states` (returned unchanged). Outputs: the same shape as `data`.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, (int, float)):
            raise MXNetError(f"DropoutCell: rate must be a number, got {type(rate).__name__}")
        self._rate, self._axes = rate, axes

    def __repr__(self):
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the dropout over `length` time steps; the parameters and the returned `(outputs, states)` are those
        of `RecurrentCell.unroll`; a merged sequence gets one dropout call over all its steps."""
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _TENSORS):        # one Dropout over the whole sequence
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=valid_length)


class ModifierCell(HybridRecurrentCell):
    """The base class of cells that wrap a base cell and change what it does (`ZoneoutCell`, `ResidualCell`).
    The wrapper owns the base cell's parameters and states: call `begin_state` on the wrapper, not on the base
    cell.

    Parameters
    ----------
    base_cell : RecurrentCell
        The cell to modify; a cell can be modified once.
    """

    def __init__(self, base_cell):
        if base_cell._modified:
            raise MXNetError(f"Cell {base_cell.name} is already modified; one cell cannot be modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=nd_module.zeros, **kwargs):
        """The base cell's initial states.

        Parameters
        ----------
        func : callable, default nd.zeros
            Makes one state from `name=`, `shape=` and `**kwargs`.
        **kwargs
            `batch_size=`, and whatever `func` takes (`ctx=`, `dtype=`, ...).
        """
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout regularization: while training, each unit of the output and of the states keeps its previous
    step's value with a given probability instead of taking the new one; outside training it is the base cell.

    Parameters
    ----------
    base_cell : RecurrentCell
        The cell to wrap (not a `BidirectionalCell`: wrap its two cells instead).
    zoneout_outputs : float, default 0
        The probability that an output unit keeps its previous value (the first step's previous output is 0).
    zoneout_states : float, default 0
        The probability that a state unit keeps its previous value.

    Notes
    -----
    Inputs, outputs and states: those of `base_cell`.
    """

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support zoneout; apply ZoneoutCell to its cells instead")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"{type(self).__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):     # nonzero where the new value is kept (Dropout is the identity outside training)
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        output = F.where(keep_new(p_out, next_output), next_output, prev_output) if p_out != 0. else next_output
        if p_state != 0.:
            next_states = [F.where(keep_new(p_state, new), new, old) for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """A residual connection around a cell: the output is `base_cell`'s output plus the step input (so their
    sizes must match).

    Parameters
    ----------
    base_cell : RecurrentCell
        The cell to wrap.

    Notes
    -----
    Inputs and states: those of `base_cell`. Outputs: `base_cell`'s output + `data`, shape (batch, hidden_size),
    with hidden_size equal to the input size.
    """

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def _alias(self):
        return "residual"

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the base cell over `length` time steps; the parameters and the returned `(outputs, states)` are those
        of `RecurrentCell.unroll`, with the inputs added to the outputs (zero past each valid_length)."""
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge_outputs = isinstance(outputs, _TENSORS) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs one cell forward and another backward in time (each sequence reversed within its valid length)
    and concatenates their outputs on the channel axis. It can only be unrolled, not stepped.

    Parameters
    ----------
    l_cell : RecurrentCell
        The cell run forward in time.
    r_cell : RecurrentCell
        The cell run backward in time.
    output_prefix : str, default 'bi_'
        The name prefix of the concatenated outputs.

    Notes
    -----
    `unroll` inputs: as `RecurrentCell.unroll`; `begin_state`: l_cell's states, then r_cell's.
    Outputs: (batch, length, l_hidden + r_hidden) for 'NTC' when merged; states: l_cell's final states, then
    r_cell's.

    Examples
    --------
    >>> import mixnet as mx
    >>> bi = mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.GRUCell(3), mx.gluon.rnn.GRUCell(2))
    >>> bi.initialize()
    >>> out, states = bi.unroll(4, mx.nd.ones((2, 4, 5)), merge_outputs=True)
    >>> out.shape, [s.shape for s in states]
    ((2, 4, 5), [(2, 3), (2, 2)])
    """

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise MXNetError("BidirectionalCell cannot be stepped. Please use unroll")

    def __repr__(self):
        cells = self._children
        return f"{type(self).__name__}(forward={cells['l_cell']!r}, backward={cells['r_cell']!r})"

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        """The initial states of l_cell, then those of r_cell.

        Parameters
        ----------
        **kwargs
            Passed to both cells' `begin_state` (`batch_size=`, `func=`, `ctx=`, `dtype=`, ...).
        """
        if self._modified:
            raise MXNetError("BidirectionalCell: after applying a modifier cell, call begin_state on the modifier")
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Runs the two cells over `length` time steps; the parameters and the returned `(outputs, states)` are those
        of `RecurrentCell.unroll`; the outputs of both directions are concatenated."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, axis, batch_size)
        l_cell, r_cell = self._children["l_cell"], self._children["r_cell"]
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n_l], layout=layout,
                                            merge_outputs=merge_outputs, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=begin_state[n_l:],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, _TENSORS)
        l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
        reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout, merge_outputs)
        name = f"{self._output_prefix}out"
        if merge_outputs:
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2, name=name)
        else:
            outputs = [F.concat(l, r, dim=1, name=f"{self._output_prefix}t{i}") for i, (l, r) in
                       enumerate(zip(l_outputs, reversed_r_outputs))]
        return outputs, l_states + r_states
