"""Contributed recurrent cells (MXNet 1.x `gluon.contrib.rnn`), built on gluon.rnn's cell classes.

LSTMPCell: an LSTM cell whose recurrent output is projected, r' = W_hr h' (Sak et al. 2014); it reuses
LSTMCell's gate math and has MXNet's parameter names and shapes, so weights move between the two libraries.
VariationalDropoutCell: dropout with one mask per sequence (Gal & Ghahramani 2016) instead of one per step.
"""
from ....base import MXNetError
from ...rnn.rnn_cell import (_TENSORS, BidirectionalCell, ModifierCell, SequentialRNNCell, _format_sequence,
                            _get_begin_state, _GatedCell, _lstm_gates, _mask_sequence_variable_length)

__all__ = ["VariationalDropoutCell", "LSTMPCell"]


class VariationalDropoutCell(ModifierCell):
    """Dropout on the base cell's inputs, first state (h) and outputs with masks drawn once per sequence.

    The masks are drawn at the first step after reset() and reused until the next reset(); unroll resets.
    Stepping by hand, call reset() between sequences. Outside training (autograd predict mode) the cell is
    the base cell."""

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise MXNetError("VariationalDropoutCell: BidirectionalCell doesn't support variational state dropout;"
                             " wrap the cells underneath instead")
        if drop_states and isinstance(base_cell, SequentialRNNCell) and getattr(base_cell, "_bidirectional",
                                                                                False):
            raise MXNetError("VariationalDropoutCell: a bidirectional SequentialRNNCell doesn't support variational"
                             " state dropout; wrap the cells underneath instead")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = drop_inputs, drop_states, drop_outputs
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def __repr__(self):
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = self.drop_states_mask = self.drop_outputs_mask = None

    @staticmethod
    def _mask(F, like, p):
        # Dropout of ones: 0 or 1/(1-p) while training, ones otherwise, so the mask is the identity in predict mode
        return F.Dropout(F.ones_like(like), p=p)

    def hybrid_forward(self, F, inputs, states):
        # the input mask is drawn before the state mask, the order in which a traced graph of the usual cells
        # (i2h before h2h) runs them: hybridized calls draw the same masks as eager ones under one seed
        if self.drop_inputs:
            if self.drop_inputs_mask is None:
                self.drop_inputs_mask = self._mask(F, inputs, self.drop_inputs)
            inputs = F.elemwise_mul(inputs, self.drop_inputs_mask)
        if self.drop_states:
            if self.drop_states_mask is None:
                self.drop_states_mask = self._mask(F, states[0], self.drop_states)
            # only h, always the first state, is dropped
            states = [F.elemwise_mul(states[0], self.drop_states_mask)] + list(states[1:])
        output, states = self.base_cell(inputs, states)
        if self.drop_outputs:
            if self.drop_outputs_mask is None:
                self.drop_outputs_mask = self._mask(F, output, self.drop_outputs)
            output = F.elemwise_mul(output, self.drop_outputs_mask)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """As RecurrentCell.unroll. Without state dropout, the input and output dropout run once over the whole
        sequence with the mask broadcast along the time axis, and the base cell unrolls on its own."""
        if self.drop_states:     # h feeds back each step: step by step
            return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                                  merge_outputs=merge_outputs, valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, axis, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge_outputs = isinstance(outputs, _TENSORS) if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(_GatedCell):
    """LSTM with a projection: gates from x and the projected state r, c' = f*c + i*g, h = o*tanh(c'),
    r' = W_hr h. States [r (batch, projection_size), c (batch, hidden_size)]; the output is r'.
    Parameters (MXNet's names and shapes): i2h_weight (4H, input_size), h2h_weight (4H, P),
    h2r_weight (P, H), i2h_bias and h2h_bias (4H,)."""
    _gates = 4

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 h2r_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size, self._projection_size = hidden_size, input_size, projection_size
        self._activation, self._recurrent_activation = "tanh", "sigmoid"
        gh = 4 * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(gh, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(gh, projection_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(gh,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(gh,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        shape = self.i2h_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]} -> {self._projection_size})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix)
        hidden, next_c = _lstm_gates(F, i2h, h2h, states[1], self._activation, self._recurrent_activation, prefix,
                                     "hidden")
        next_r = F.FullyConnected(data=hidden, weight=h2r_weight, num_hidden=self._projection_size, no_bias=True,
                                  name=prefix + "out")
        return next_r, [next_r, next_c]
