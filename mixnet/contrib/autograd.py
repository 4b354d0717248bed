"""`mx.contrib.autograd`: MXNet's pre-1.0 autograd API (train_section, mark_variables, compute_gradient,
grad_and_loss), kept by MXNet 1.x for old scripts; a thin layer over `mx.autograd`, whose tape it shares."""
import contextlib
import functools

from .. import autograd as _autograd
from ..base import MXNetError
from ..ndarray import NDArray, zeros_like

__all__ = ["set_is_training", "train_section", "test_section", "mark_variables", "backward", "compute_gradient",
           "grad_and_loss", "grad"]

mark_variables = _autograd.mark_variables


def set_is_training(is_train):
    """Turns recording and training mode on or off together (as MXNet's contrib API does); returns the
    previous training state."""
    _autograd.set_recording(is_train)
    return _autograd.set_training(is_train)


@contextlib.contextmanager
def _section(is_train):
    previous = (_autograd.set_recording(is_train), _autograd.set_training(is_train))
    try:
        yield
    finally:
        _autograd.set_recording(previous[0])
        _autograd.set_training(previous[1])


def train_section():
    """Scope that records and runs in training mode (`with mx.contrib.autograd.train_section():`)."""
    return _section(True)


def test_section():
    """Scope that neither records nor trains, e.g. for evaluation inside a train_section."""
    return _section(False)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of `outputs` (an NDArray or a list) into the buffers given to mark_variables."""
    _autograd.backward(outputs, head_grads=out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated spelling of backward(outputs)."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """Wraps `func` so that calling it returns (gradients of its output w.r.t. the arguments, its output);
    `argnum` (an int or a list of ints) picks the arguments to differentiate."""

    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            picks = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in picks]
        for x in variables:
            if not isinstance(x, NDArray):
                raise MXNetError(f"grad_and_loss: the differentiated arguments must be NDArrays, got "
                                 f"{type(x).__name__}")
        grads = [zeros_like(x) for x in variables]
        mark_variables(list(variables), grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """Like grad_and_loss, returning only the gradients."""
    grad_with_loss = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss)
    def wrapped(*args):
        return grad_with_loss(*args)[0]
    return wrapped
