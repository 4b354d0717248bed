"""mx.operator.get_operator_arguments: an op's inputs then attributes, with MXNet's type strings."""
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.ops import registry
from mixnet.ops.describe import op_arguments


def test_activation_is_described_as_mxnet_does():
    args = mx.operator.get_operator_arguments("Activation")
    assert isinstance(args, mx.operator.OperatorArguments)
    assert args.narg == 2 and args.names == ["data", "act_type"]
    assert args.types == ["NDArray-or-Symbol", "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]


def test_defaults_and_variadic_inputs():
    names, types = op_arguments(registry.get("BatchNorm"))
    assert types[names.index("eps")] == "float, optional, default=0.001"
    assert types[names.index("fix_gamma")] == "boolean, optional, default=1"
    assert op_arguments(registry.get("Concat"))[1][0] == "NDArray-or-Symbol[]"


def test_every_registered_op_can_be_described():
    for op in registry.all_ops():
        names, types = op_arguments(op)
        assert len(names) == len(types)


def test_unknown_operator_raises():
    with pytest.raises(MXNetError, match="Nope"):
        mx.operator.get_operator_arguments("Nope")
