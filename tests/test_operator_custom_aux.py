"""A Symbol Custom node lists its prop's auxiliary states under list_auxiliary_states() (not the arguments), and
an executor passes them to the operator, which may update them in place (MXNet's behaviour)."""
import numpy as np

import mixnet as mx


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1                          # counts forwards
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("test_square_counting")
class _SquareProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_auxiliary_states(self):
        return ["count"]

    def create_operator(self, ctx, shapes, dtypes):
        return _Square()


def test_custom_aux_state_is_listed_as_auxiliary():
    op = mx.sym.Custom(data=mx.sym.var("data"), count=mx.sym.var("count"), op_type="test_square_counting")
    assert op.list_arguments() == ["data"]
    assert op.list_auxiliary_states() == ["count"]
    arg_shapes, _, aux_shapes = op.infer_shape(data=(2, 3))
    assert arg_shapes == [(2, 3)] and aux_shapes == [(2, 3)]


def test_executor_passes_and_updates_custom_aux_state():
    op = mx.sym.Custom(data=mx.sym.var("data"), count=mx.sym.var("count"), op_type="test_square_counting")
    x = np.array([[1.0, -2.0, 3.0]], dtype=np.float32)
    grad, count = mx.nd.zeros((1, 3)), mx.nd.zeros((1, 3))
    exe = op.bind(mx.cpu(), args={"data": mx.nd.array(x)}, args_grad={"data": grad}, aux_states={"count": count})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 3)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), x * x)
    np.testing.assert_allclose(grad.asnumpy(), 2 * x)
    np.testing.assert_array_equal(count.asnumpy(), np.ones((1, 3)))
    mx.test_utils.check_numeric_gradient(op, [x.astype(np.float64)], [np.zeros((1, 3))])
