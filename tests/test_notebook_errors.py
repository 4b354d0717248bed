"""Errors and warnings as a user (in a script or a notebook) sees them: tracebacks without mixnet's own frames
(mixnet/_source.py hide_internals), MIXNET_FULL_TRACEBACK=1 to keep them, locations shown as IPython shows a
cell (`Cell In[2], line 3`), and warnings attributed to the user's line."""
import os
import re
import sys
import threading
import traceback
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import _source, autograd, gluon
from mixnet.base import MXNetError, OpError

PKG = os.path.dirname(os.path.abspath(mx.__file__)) + os.sep


def _mixnet_frames(err):
    return [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith(PKG)]


def _user_frames(err):
    return [f for f in traceback.extract_tb(err.__traceback__) if f.filename == __file__]


class _BadAdd(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.dense = gluon.nn.Dense(3)

    def hybrid_forward(self, F, x):
        return self.dense(x) + F.ones((4, 4))          # the user's bug: shapes (2, 3) and (4, 4)


def _raise_from(call):
    with pytest.raises(MXNetError) as info:
        call()
    return info.value


@pytest.mark.parametrize("hybridize", [False, True])
def test_block_error_keeps_only_the_users_frames_and_one_boundary_line(hybridize):
    net = _BadAdd()
    net.initialize()
    if hybridize:
        net.hybridize()
    err = _raise_from(lambda: net(mx.nd.ones((2, 5))))
    assert isinstance(err, OpError)
    mixnet_frames = _mixnet_frames(err)
    assert [f.name for f in mixnet_frames] == ["__call__"]          # Block.__call__'s re-raise, nothing deeper
    assert "MIXNET_FULL_TRACEBACK" in mixnet_frames[0].line
    assert [f.name for f in _user_frames(err)] == ["_raise_from", "<lambda>", "hybrid_forward"]
    assert "F.ones((4, 4))" in _user_frames(err)[-1].line


@pytest.mark.parametrize("call", [
    lambda: mx.nd.ones((2, 3)) + mx.nd.ones((4, 5)),                     # an NDArray operator
    lambda: mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((4, 5))),           # a generated mx.nd function
], ids=["operator", "nd_function"])
def test_op_error_shows_one_mixnet_frame(call):
    err = _raise_from(call)
    assert len(_mixnet_frames(err)) == 1
    assert "test_notebook_errors.py" in str(err)                         # the message names the user's line


def test_backward_errors_are_trimmed():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = x * 2
    y.backward()
    err = _raise_from(y.backward)                                        # graph freed
    assert [f.name for f in _mixnet_frames(err)] == ["backward"]
    err = _raise_from(lambda: autograd.backward([mx.nd.ones((1,))]))     # never recorded
    assert [f.name for f in _mixnet_frames(err)] == ["backward"]


def test_trainer_errors_are_trimmed_and_stale_gradients_stay_a_user_warning():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    with autograd.record():
        loss = net(mx.nd.ones((1, 3))).sum()
    loss.backward()
    trainer.step(1)
    err = _raise_from(lambda: trainer.step(1))               # no backward since the last step
    assert isinstance(err, UserWarning) and "dense" in str(err) and "ignore_stale_grad=True" in str(err)
    assert [f.name for f in _mixnet_frames(err)] == ["step"]
    err = _raise_from(lambda: trainer.update(1))
    assert [f.name for f in _mixnet_frames(err)] == ["update"]
    lazy = gluon.Trainer(gluon.nn.Dense(2).collect_params(), "sgd")   # nothing initialized
    err = _raise_from(lambda: lazy.allreduce_grads())
    assert [f.name for f in _mixnet_frames(err)] == ["allreduce_grads"] and "initialize" in str(err)


def _ragged_batches(**kwargs):
    return list(gluon.data.DataLoader(gluon.data.SimpleDataset([np.ones(3), np.ones(4), np.ones(3)]),
                                      batch_size=3, **kwargs))


def test_dataloader_batchify_error_names_the_indices_and_shapes_and_is_trimmed():
    err = _raise_from(_ragged_batches)
    assert isinstance(err, gluon.data.BatchifyError) and isinstance(err, ValueError)
    assert "sample indices [0, 1, 2]" in str(err)
    assert "(3,) at positions [0, 2]; (4,) at positions [1]" in str(err) and "Pad()" in str(err)
    assert [f.name for f in _mixnet_frames(err)] == ["_same_process_iter"]
    err = _raise_from(lambda: _ragged_batches(num_workers=1, thread_pool=True))   # raised from a worker's result
    assert "sample indices [0, 1, 2]" in str(err) and "(4,) at positions [1]" in str(err)
    assert [f.name for f in _mixnet_frames(err)] == ["__next__"]


def test_dataloader_user_batchify_error_keeps_the_users_frame():
    def batchify(samples):
        return mx.nd.stack(*samples) + mx.nd.ones((5,))       # the user's bug: (2, 3) + (5,)
    loader = gluon.data.DataLoader(gluon.data.SimpleDataset([np.ones(3)] * 2), batch_size=2, batchify_fn=batchify)
    err = _raise_from(lambda: next(iter(loader)))
    assert [f.name for f in _user_frames(err)] == ["_raise_from", "<lambda>", "batchify"]
    assert [f.name for f in _mixnet_frames(err)] == ["_same_process_iter"]


def test_full_traceback_flag_is_read_at_raise_time_and_keeps_every_frame(monkeypatch):
    net = _BadAdd()
    net.initialize()
    short = _raise_from(lambda: net(mx.nd.ones((2, 5))))
    monkeypatch.setenv("MIXNET_FULL_TRACEBACK", "1")
    full = _raise_from(lambda: net(mx.nd.ones((2, 5))))
    names = [f.name for f in _mixnet_frames(full)]
    assert len(names) > len(_mixnet_frames(short))
    assert {"__call__", "_run_forward", "forward", "run_kernel"} <= set(names)   # down to where it was raised
    assert names.count("__call__") == 1                                           # no frame twice
    assert [f.name for f in _user_frames(full)] == [f.name for f in _user_frames(short)]


def test_cause_chain_is_untouched(monkeypatch):
    monkeypatch.setenv("MIXNET_DEBUG_ERRORS", "1")              # op errors chain the numpy error under them
    err = _raise_from(lambda: mx.nd.ones((2, 3)) + mx.nd.ones((4, 5)))
    assert isinstance(err.__cause__, ValueError)
    assert err.__cause__.__traceback__ is not None
    text = "".join(traceback.format_exception(err))
    assert "The above exception was the direct cause" in text


def test_errors_that_mixnet_handles_inside_still_work():
    # a deferred-shape Dense inside an eager Sequential: DeferredInitializationError passes a trimming boundary
    # (the child's __call__) and is caught further out to infer the shape
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(4), gluon.nn.Dense(2))
    net.initialize()
    assert net(mx.nd.ones((3, 5))).shape == (3, 2)


def test_location_text_outside_ipython():
    assert _source.location_text("/some/where/model.py", 12) == os.path.relpath("/some/where/model.py") + ":12"
    assert _source.location_text("<stdin>", 3, "f") == "<stdin>:3 in f"


# ------------------------------------------------------------------------------------------ IPython
@pytest.fixture
def shell():
    interactiveshell = pytest.importorskip("IPython.core.interactiveshell", reason="IPython is not installed")
    sh = interactiveshell.InteractiveShell.instance()
    sh.colors = "nocolor"
    yield sh
    interactiveshell.InteractiveShell.clear_instance()


def _run(shell, capsys, code):
    """Run a cell; its printed output without colour codes (IPython may colour tracebacks even when told
    "nocolor": the CI machine's shell did, which split "Cell In[2], line 5" with escape sequences)."""
    result = shell.run_cell(code, store_history=True)
    return result, re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)


def test_ipython_cell_error_shows_cell_locations_and_hides_the_boundary(shell, capsys):
    _run(shell, capsys, "import mixnet as mx\nfrom mixnet import gluon")
    result, out = _run(shell, capsys, (
        "class Net(gluon.HybridBlock):\n"
        "    def hybrid_forward(self, F, x):\n"
        "        return x + F.ones((4, 4))\n"
        "net = Net()\n"
        "net(mx.nd.ones((2, 5)))\n"))
    cell = f"In[{result.execution_count}]"
    assert isinstance(result.error_in_exec, OpError)
    assert f"at Cell {cell}, line 3, in hybrid_forward" in str(result.error_in_exec)
    assert f"Cell {cell}, line 5" in out and f"Cell {cell}, line 3" in out     # IPython's own frame headers
    assert "skipping hidden 1 frame" in out                                       # Block.__call__
    assert "block.py" not in out and "dispatch.py" not in out and "ipykernel_" not in out


def test_ipython_warning_points_at_the_cell(shell, capsys):
    _run(shell, capsys, "import warnings, mixnet as mx\nfrom mixnet import _source")
    code = ("with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    x = mx.nd.array([1, 2], dtype='int32')\n"
            "    x.attach_grad()\n")
    result, _ = _run(shell, capsys, code)
    assert result.success
    caught = shell.user_ns["caught"]
    assert len(caught) == 1
    assert shell.compile.format_code_name(caught[0].filename) == ("Cell", f"In[{result.execution_count}]")
    assert caught[0].lineno == 4


# ------------------------------------------------------------------------------------------ warnings
def _warning_sites(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(os.path.basename(w.filename), w.lineno, str(w.message)) for w in caught]


def _line_after():
    """The line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


def test_warnings_from_several_modules_name_the_callers_line():
    sites, expected = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = mx.nd.array([1], dtype="int32")
        expected.append(_line_after())
        x.attach_grad()                                               # ndarray.py
        net = gluon.nn.Dense(2, in_units=3)
        net.initialize()
        expected += [_line_after()] * 2
        net.initialize()                                    # parameter.py (weight and bias), under block.py
        expected.append(_line_after())
        net(mx.nd.ones((1, 3), dtype="float64"))                      # block.py, float64 input
        head = mx.nd.ones((2,))
        head.attach_grad()
        with autograd.record():
            y = head * 2
        expected.append(_line_after())
        y.backward(mx.nd.ones((3,)))                                  # autograd.py, head gradient reshaped
    sites = [(w.filename, w.lineno) for w in caught]
    assert sites == [(__file__, line) for line in expected], [str(w.message)[:60] for w in caught]


def test_warn_helper_without_a_user_frame_names_mixnets_caller():
    # code inside mixnet run by a thread of its own (a background compile) has no user line: the warning names
    # the mixnet line that warned, not threading.py
    fake = os.path.join(PKG, "_fake_background.py")
    namespace = {"warn": _source.warn}
    exec(compile("def work():\n    warn('from a thread')\n", fake, "exec"), namespace)   # noqa: S102
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=namespace["work"])
        thread.start()
        thread.join()
    assert [(w.filename, w.lineno) for w in caught] == [(fake, 2)]
