"""The `>>>` examples in the docstrings of the main entry points run, and print what they say."""
import doctest
import importlib

import pytest

import mixnet as mx

# module -> the least number of examples it holds (so a docstring losing its examples fails here too)
MODULES = {
    "mixnet.ndarray.ndarray": 2,        # NDArray, nd.array
    "mixnet.autograd": 1,               # autograd.record
    "mixnet.gluon.block": 2,            # HybridBlock.hybridize, Block (collect_params, save/load_parameters)
    "mixnet.gluon.nn.basic_layers": 2,  # HybridSequential, Dense
    "mixnet.gluon.rnn.rnn_layer": 1,    # LSTM
    "mixnet.gluon.rnn.rnn_cell": 3,     # LSTMCell (unroll, valid_length), SequentialRNNCell, BidirectionalCell
    "mixnet.gluon.loss": 3,             # L2Loss, SoftmaxCrossEntropyLoss, HuberLoss
    "mixnet.gluon.trainer": 1,          # Trainer
    "mixnet.gluon.data.dataloader": 1,  # DataLoader
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    tests = [t for t in finder.find(module) if t.examples]
    assert len(tests) >= MODULES[name], f"{name}: {len(tests)} docstrings with examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with mx.cpu(0):                     # the examples print what a user sees: arrays on the default device, cpu(0)
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (output above)"
