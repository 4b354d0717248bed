"""The warnings MXNet 1.x's Gluon gives about a model's structure: Blocks hidden in a plain container attribute
(their parameters are missed by collect_params), and a Sequential of HybridBlocks being hybridized."""
import warnings

import pytest

import mixnet as mx
from mixnet import gluon
from mixnet.base import MXNetWarning
from mixnet.gluon import nn


def _recorded(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, MXNetWarning)]


class _Holder(gluon.Block):
    def __init__(self, layers):
        super().__init__()
        with self.name_scope():
            self.layers = layers()


@pytest.mark.parametrize("layers", [lambda: [nn.Dense(2), nn.Dense(3)], lambda: (nn.Dense(2),),
                                    lambda: {"a": [nn.Dense(2)]}], ids=["list", "tuple", "dict_of_list"])
def test_blocks_in_plain_containers_warn_at_collect_params(layers):
    model = _Holder(layers)
    caught = _recorded(model.collect_params)
    assert len(caught) == 1 and "_Holder.layers" in str(caught[0].message)
    with pytest.warns(MXNetWarning):
        assert len(model.collect_params()) == 0      # what the warning is about


@pytest.mark.parametrize("layers", [lambda: nn.Sequential(), lambda: {"a": "4", "b": 123}, lambda: [1, 2]],
                         ids=["registered", "plain_dict", "plain_list"])
def test_registered_children_and_plain_data_do_not_warn(layers):
    model = _Holder(layers)
    assert _recorded(model.collect_params) == []


def test_registered_block_also_listed_does_not_warn():
    class Listed(gluon.Block):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(2)
            self.order = [self.dense]

    assert _recorded(Listed().collect_params) == []


def test_hybridizing_a_sequential_of_hybrid_blocks_suggests_hybrid_sequential():
    seq = nn.Sequential()
    seq.add(nn.Dense(4))
    caught = _recorded(seq.hybridize)
    assert len(caught) == 1 and "HybridSequential" in str(caught[0].message)
    seq.add(nn.Sequential())            # a non-hybrid child: nothing to suggest
    assert _recorded(seq.hybridize) == []
    assert _recorded(nn.Sequential().hybridize) == []
    seq.initialize()
    assert seq(mx.nd.ones((1, 3))).shape == (1, 4)
