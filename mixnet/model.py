"""`mx.model`: MXNet 1.x's checkpoint files and the record callbacks receive.

A checkpoint is two files, in MXNet's formats (real MXNet 1.9.1 loads ours and we load its):
``prefix-symbol.json`` (the graph, `Symbol.save`) and ``prefix-%04d.params`` (an `nd.save` dict whose keys are
``arg:<name>`` for arguments and ``aux:<name>`` for auxiliary states). The legacy `FeedForward` model is not
provided: `mx.mod.Module` replaced it in MXNet 1.x.
"""
import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu

_LOG = logging.getLogger(__name__)

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint"]

# What batch_end_callback / eval_end_callback functions receive (MXNet's type name is BatchEndParams).
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_file(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes ``prefix-symbol.json`` (unless symbol is None) and ``prefix-%04d.params`` % epoch."""
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({"aux:%s" % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = _params_file(prefix, epoch)
    nd.save(param_name, save_dict)
    _LOG.info('Saved checkpoint to "%s"', param_name)


def split_params(save_dict, fname):
    """(arg_params, aux_params) from a loaded params dict whose keys are 'arg:<name>' / 'aux:<name>'."""
    if not isinstance(save_dict, dict):
        raise MXNetError(f"{fname!r} holds a list of arrays without names; a checkpoint's arrays are named "
                         "'arg:<name>' or 'aux:<name>'")
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux"):
            raise MXNetError(f"array {key!r:.100} in {fname!r} is not named 'arg:<name>' or 'aux:<name>'")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch):
    """(arg_params, aux_params) from ``prefix-%04d.params`` % epoch."""
    fname = _params_file(prefix, epoch)
    save_dict = nd.load(fname)
    if not save_dict:
        _LOG.warning("Params file '%s' is empty", fname)
        return {}, {}
    return split_params(save_dict, fname)


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) from ``prefix-symbol.json`` and ``prefix-%04d.params`` % epoch."""
    symbol = sym.load("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
