"""`mx.rnn`'s cells: MXNet 1.x's legacy symbolic RNN API, building `mx.sym` graphs step by step.

A cell holds its weights as `mx.sym` Variables named `<prefix><i2h|h2h>_<weight|bias>` (MXNet's names, so
checkpoints and `Module` parameter dicts interchange with MXNet's). `cell(inputs, states)` adds one time step to
the graph; `unroll(length, inputs)` adds `length` of them. `FusedRNNCell` instead emits one `RNN` op whose flat
parameter vector has MXNet's layout (mixnet/ops/rnn.py's `param_layout`), and `unfuse()` gives the equivalent
stack of step cells, with `unpack_weights`/`pack_weights` converting parameter dicts between the two.
"""

from .._source import warn
from .. import initializer, ndarray, symbol
from ..base import MXNetError, numeric_types, string_types
from ..ops.rnn import param_layout

__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell", "SequentialRNNCell",
           "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell"]

_MODIFIED = ("After applying modifier cells (e.g. DropoutCell) the base cell cannot be called directly. "
             "Call the modifier cell instead.")


def _normalize_sequence(length, inputs, layout, merge):
    """`inputs` as a list of per-step Symbols (merge=False), one Symbol with a time axis (merge=True), or as given
    (merge=None); returns it and the time axis of `layout`."""
    if inputs is None:
        raise MXNetError("unroll(inputs=None) is not supported: create the input variables outside unroll")
    axis = layout.find("T")
    if axis < 0:
        raise MXNetError(f"unroll: layout {layout!r} has no time axis 'T'")
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError("unroll does not take a grouped Symbol as input: pass list(inputs) instead, "
                                 "or one Symbol for unroll to split")
            inputs = list(symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise MXNetError(f"unroll: {len(inputs)} input steps given for length {length}")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs], dim=axis)
    return inputs, axis


def _cells_state_info(cells):
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


class RNNParams:
    """The Variables of one or more cells, by name; cells given the same RNNParams share weights."""

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The Variable `prefix + name`, made (with `kwargs` for symbol.Variable, e.g. init=) on first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Base class of the cells. `prefix` names the cell's nodes (and its weights when `params` is None, in which
    case the cell makes its own RNNParams)."""

    def __init__(self, prefix="", params=None):
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self.reset()

    def _projection_params(self):
        """The i2h / h2h weight and bias symbols of a gated cell, named as MXNet names them."""
        return tuple(self.params.get(name) for name in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias"))

    def reset(self):
        """Restarts step and begin-state numbering, before the cell builds another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One time step: (output Symbol, list of new state Symbols)."""
        raise MXNetError(f"{type(self).__name__} does not define a time step (__call__); use a concrete cell")

    @property
    def params(self):
        """This cell's RNNParams (asking for it means the caller may share it)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """A dict per state: its shape (0 = the batch, inferred later) and '__layout__'."""
        raise MXNetError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self):
        return [ele["shape"] for ele in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The first step's states, each made by `func` (symbol.zeros, symbol.Variable, ...) with the state's
        shape and layout and `kwargs`, named `<prefix>begin_state_<n>`."""
        if self._modified:
            raise MXNetError(_MODIFIED)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            args = dict(kwargs) if info is None else {**kwargs, **info}
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **args))
        return states

    def unpack_weights(self, args):
        """A copy of the parameter dict `args` with each fused i2h/h2h weight and bias split per gate
        (`<prefix>i2h_f_weight`, ...); pack_weights undoes it."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h:(j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """A copy of `args` with the per-gate weights and biases joined again (the reverse of unpack_weights)."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop(f"{self._prefix}{group}{gate}_{kind}") for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = ndarray.concat(*parts, dim=0)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Adds `length` steps. `inputs` is one Symbol laid out as `layout` or a list of per-step Symbols;
        `begin_state` defaults to begin_state(). Returns (outputs, states): outputs one Symbol laid out as
        `layout` when merge_outputs is True, a list of steps when False, whichever is at hand when None."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, string_types):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    def _step_name(self):
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"


class RNNCell(BaseRNNCell):
    """Elman cell: out = activation(i2h(x) + h2h(h))."""

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW, self._iB, self._hW, self._hB = self._projection_params()

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=self._num_hidden,
                                    name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB, num_hidden=self._num_hidden,
                                    name=f"{name}h2h")
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(BaseRNNCell):
    """LSTM cell, gates in MXNet's order [i, f, c, o]; `forget_bias` initializes the forget gate's i2h bias."""

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=initializer.LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        h = self._num_hidden
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=4 * h,
                                    name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB, num_hidden=4 * h,
                                    name=f"{name}h2h")
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(forget_gate * states[1], in_gate * in_transform, name=f"{name}state")
        next_h = symbol._mul(out_gate, symbol.Activation(next_c, act_type="tanh"), name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """GRU cell as cuDNN computes it (gates [r, z, o]; the reset gate scales h2h's product including its bias)."""

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW, self._iB, self._hW, self._hB = self._projection_params()

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        prev_h = states[0]
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=3 * self._num_hidden,
                                    name=f"{name}_i2h")
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB, num_hidden=3 * self._num_hidden,
                                    name=f"{name}_h2h")
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i2h + reset_gate * h2h, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol._plus((1. - update_gate) * candidate, update_gate * prev_h, name=f"{name}out")
        return next_h, [next_h]


class FusedRNNCell(BaseRNNCell):
    """All layers and steps in one `RNN` op over a flat parameter Variable `<prefix>parameters` (MXNet's layout,
    initialized by init.FusedRNN). It cannot be stepped: unroll it, or unfuse() it into step cells."""

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False, dropout=0.,
                 get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in ("rnn_relu", "rnn_tanh", "lstm", "gru"):
            raise MXNetError(f"FusedRNNCell: mode must be rnn_relu, rnn_tanh, lstm or gru, got {mode!r}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        init = initializer.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=init)

    @property
    def state_info(self):
        shape = ((self._bidirectional + 1) * self._num_layers, 0, self._num_hidden)
        return [{"shape": shape, "__layout__": "LNC"} for _ in range(2 if self._mode == "lstm" else 1)]

    @property
    def _gate_names(self):
        return {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
                "gru": ["_r", "_z", "_o"]}[self._mode]

    def _pieces(self, num_input):
        """[(unpacked name, offset, shape)] in the order of the flat vector, and its total size."""
        entries, total = param_layout(self._mode, self._num_layers, num_input, self._num_hidden,
                                      self._bidirectional)
        h, pieces = self._num_hidden, []
        for k, entry in enumerate(entries):
            where = f"{self._prefix}{self._directions[k % len(self._directions)]}{k // len(self._directions)}"
            for key, group, kind in (("wx", "i2h", "weight"), ("wh", "h2h", "weight"),
                                     ("bx", "i2h", "bias"), ("bh", "h2h", "bias")):
                off, shape = entry[key]
                for j, gate in enumerate(self._gate_names):
                    size = h * (shape[1] if kind == "weight" else 1)
                    pieces.append((f"{where}_{group}{gate}_{kind}", off + j * size,
                                   (h, shape[1]) if kind == "weight" else (h,)))
        pieces.sort(key=lambda piece: piece[1])
        return pieces, total

    def _num_input(self, size):
        # size = D*G*H*(I + H + 2) + (L-1)*D*G*H*(D*H + H + 2), solved for the input size I
        d, g, h = len(self._directions), len(self._gate_names), self._num_hidden
        return size // (d * g * h) - (self._num_layers - 1) * (d * h + h + 2) - h - 2

    def unpack_weights(self, args):
        args = args.copy()
        arr = args.pop(self._parameter.name)
        pieces, total = self._pieces(self._num_input(arr.size))
        if total != arr.size:
            raise MXNetError(f"FusedRNNCell.unpack_weights: {self._parameter.name!r} has {arr.size} elements, "
                             f"which fits no input size for {self._num_layers} layer(s) of {self._mode} "
                             f"with {self._num_hidden} hidden units")
        for name, off, shape in pieces:
            size = shape[0] * (shape[1] if len(shape) == 2 else 1)
            args[name] = arr[off:off + size].reshape(shape).copy()
        return args

    def pack_weights(self, args):
        args = args.copy()
        first = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        pieces, _ = self._pieces(first.shape[1])
        flat = [args.pop(name).reshape((-1,)) for name, _, _ in pieces]
        args[self._parameter.name] = ndarray.concat(*flat, dim=0)
        return args

    def __call__(self, inputs, states):
        raise MXNetError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed")
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise MXNetError(f"FusedRNNCell: unsupported layout {layout!r} (use TNC or NTC)")
        states = self.begin_state() if begin_state is None else begin_state
        state_args = {"state": states[0]}
        if self._mode == "lstm":
            state_args["state_cell"] = states[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=self._prefix + "rnn",
                         **state_args)
        if self._get_next_state:
            n_states = 2 if self._mode == "lstm" else 1
            states = [rnn[1 + i] for i in range(n_states)]
            for state in states:
                state._set_attr(__layout__="LNC")
            outputs = rnn[0]
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of step cells (and BidirectionalCells, DropoutCells), named so
        that unpack_weights' output is its parameter dict."""
        def make(prefix):
            if self._mode == "lstm":
                return LSTMCell(self._num_hidden, prefix=prefix)
            if self._mode == "gru":
                return GRUCell(self._num_hidden, prefix=prefix)
            return RNNCell(self._num_hidden, activation=self._mode[4:], prefix=prefix)

        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{i}_"), make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(make(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked: each one's output is the next one's input; the states are all cells' states in order."""

    def __init__(self, params=None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        """Appends `cell` to the stack."""
        self._cells.append(cell)
        if self._override_cell_params:
            if not cell._own_params:
                raise MXNetError("Either specify params for SequentialRNNCell or child cells, not both.")
            cell.params._params.update(self.params._params)
        self.params._params.update(cell.params._params)

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError(_MODIFIED)
        return _cells_begin_state(self._cells, **kwargs)

    def unpack_weights(self, args):
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise MXNetError("SequentialRNNCell with a BidirectionalCell cannot be stepped. Please use unroll")
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        next_states, p = [], 0
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            last = i == len(self._cells) - 1
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                                         merge_outputs=merge_outputs if last else None)
            p += n
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs (no state, no weights)."""

    def __init__(self, dropout, prefix="dropout_", params=None):
        super().__init__(prefix, params)
        if not isinstance(dropout, numeric_types):
            raise MXNetError(f"DropoutCell: dropout probability must be a number, got {type(dropout).__name__}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])       # one Dropout over the whole sequence
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout, merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of cells that wrap `base_cell` and change what it computes; the base cell must then no longer be
    used directly."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs):
        if self._modified:
            raise MXNetError(_MODIFIED)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): in training, each output/state unit keeps its previous value with
    probability zoneout_outputs/zoneout_states (a Dropout mask of ones chooses)."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, (FusedRNNCell, BidirectionalCell)) or (
                isinstance(base_cell, SequentialRNNCell)
                and any(isinstance(c, BidirectionalCell) for c in base_cell._cells)):
            raise MXNetError(f"ZoneoutCell: {type(base_cell).__name__} cannot be stepped, so it takes no zoneout; "
                             "unfuse it or wrap the cells underneath instead")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        p_out, p_st = self.zoneout_outputs, self.zoneout_states
        output = symbol.where(mask(p_out, next_output), next_output, prev_output) if p_out != 0. else next_output
        if p_st != 0.:
            next_states = [symbol.where(mask(p_st, new), new, old) for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Output = base cell's output + input (Wu et al. 2016)."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        return symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual"), states
        return [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual") for o, i in zip(outputs, inputs)], states


class BidirectionalCell(BaseRNNCell):
    """`l_cell` reads the sequence forwards, `r_cell` backwards; each step's output is both outputs concatenated
    on the feature axis. States: [l_cell's states, r_cell's states] (nested, as MXNet returns them)."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix="bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        if self._override_cell_params:
            if not (l_cell._own_params and r_cell._own_params):
                raise MXNetError("Either specify params for BidirectionalCell or child cells, not both.")
            l_cell.params._params.update(self.params._params)
            r_cell.params._params.update(self.params._params)
        self.params._params.update(l_cell.params._params)
        self.params._params.update(r_cell.params._params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        return _cells_unpack_weights(self._cells, args)

    def pack_weights(self, args):
        return _cells_pack_weights(self._cells, args)

    def __call__(self, inputs, states):
        raise MXNetError("BidirectionalCell cannot be stepped. Please use unroll")

    @property
    def state_info(self):
        return _cells_state_info(self._cells)

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError(_MODIFIED)
        return _cells_begin_state(self._cells, **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l], layout=layout,
                                            merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)), begin_state=states[n_l:],
                                            layout=layout, merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, symbol.Symbol) and isinstance(r_outputs, symbol.Symbol)
            if not merge_outputs:
                l_outputs, _ = _normalize_sequence(length, l_outputs, layout, False)
                r_outputs, _ = _normalize_sequence(length, r_outputs, layout, False)
        if merge_outputs:
            # merged outputs are (batch, time, C) or (time, batch, C): features are axis 2
            outputs = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                    name=f"{self._output_prefix}out")
        else:
            outputs = [symbol.Concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed(r_outputs)))]
        return outputs, [l_states, r_states]


@initializer.register
class FusedRNN(initializer.Initializer):
    """Initializes an `RNN` op's flat parameter vector (mx.rnn.FusedRNNCell's `parameters`) piece by piece, as
    the unfused cells' weights would be: each per-gate weight and bias with `init` (or, when None, the global
    initializer of the call), and an LSTM's forget-gate biases (i2h and h2h) set to forget_bias."""

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        init = initializer.create(init) if isinstance(init, str) else init
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._forget_bias = bidirectional, forget_bias

    def _init_weight(self, desc, arr):
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode, self._bidirectional,
                            forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        fallback = getattr(desc, "global_init", None)
        for name, piece in args.items():
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            elif self._init is not None:
                self._init(initializer.InitDesc(name, global_init=fallback), piece)
            elif fallback is not None:
                fallback(initializer.InitDesc(name, global_init=fallback), piece)
            else:
                raise MXNetError(f"FusedRNN: no initializer for {name!r} (give init=, or call it through a "
                                 "global initializer)")
        arr[:] = cell.pack_weights(args)["parameters"]
