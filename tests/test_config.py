"""config.py: every flag is read when it is used, so a running process (a notebook) can switch it."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mixnet as mx
from mixnet import config
from mixnet.codegen import cupy_gpu
from mixnet.codegen.ir import Group, Step, inp, step


def _run(env_value):
    code = ("import mixnet as mx\n"
            "try:\n    mx.nd.array([1.0, 2.0]) + mx.nd.array([1.0, 2.0, 3.0])\n"
            "except mx.MXNetError as e:\n    print(e.__cause__ is not None)\n")
    env = dict(os.environ, MIXNET_DEBUG_ERRORS=env_value)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.strip()


def test_debug_errors_flag_chains_the_backend_exception():
    assert _run("1") == "True"
    assert _run("0") == "False"


@pytest.fixture
def no_overrides():
    """The test reads flags from the environment: assignments left by other tests in this process are set aside."""
    saved = dict(config._overrides)
    config._overrides.clear()
    yield
    config._overrides.clear()
    config._overrides.update(saved)


def _traces(capsys):
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((2, 4)))
    return [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mixnet: hybridize traced")]


def test_log_compiles_switched_on_in_a_running_process(monkeypatch, capsys, no_overrides):
    monkeypatch.delenv("MIXNET_LOG_COMPILES", raising=False)
    assert _traces(capsys) == []
    monkeypatch.setenv("MIXNET_LOG_COMPILES", "1")      # as a notebook would, with mixnet imported long ago
    assert len(_traces(capsys)) == 1
    monkeypatch.setenv("MIXNET_LOG_COMPILES", "off")
    assert _traces(capsys) == []


def _show_code_prints(capsys, value):
    group = Group([Step("exp", "exp({0})", (inp(0),)), Step("_mul_scalar", "{0} * {scalar}", (step(0),),
                                                            {"scalar": 3.0 + len(value)})], [1], 1)
    cupy_gpu.CudaKernel(group).prepare(cupy_gpu.FLAT)          # renders and prints; needs no cupy
    return "mixnet kernel" in capsys.readouterr().err


@pytest.mark.parametrize("value, shown", [("1", True), ("yes", True), ("0", False), ("false", False),
                                          ("OFF", False), ("", False)])
def test_codegen_reads_show_code_through_config(monkeypatch, capsys, tmp_path, no_overrides, value, shown):
    """One parse for every reader: MIXNET_SHOW_CODE=false once printed kernels (codegen read it itself)."""
    from mixnet.codegen import cache
    previous = cache.set_cache_dir(tmp_path)
    try:
        monkeypatch.setenv("MIXNET_SHOW_CODE", value)
        assert config.SHOW_CODE is shown
        assert _show_code_prints(capsys, value) is shown
    finally:
        cache.set_cache_dir(previous)


def test_assignment_overrides_the_environment_until_deleted_or_the_environment_changes(monkeypatch, no_overrides):
    monkeypatch.setenv("MIXNET_FUSE_MIN_SIZE", "100")
    assert config.FUSE_MIN_SIZE == 100
    monkeypatch.setenv("MIXNET_FUSE_MIN_SIZE", "2e3")
    assert config.FUSE_MIN_SIZE == 2000
    config.FUSE_MIN_SIZE = 7
    assert config.FUSE_MIN_SIZE == 7
    del config.FUSE_MIN_SIZE
    assert config.FUSE_MIN_SIZE == 2000
    config.FUSE_MIN_SIZE = 7
    monkeypatch.setenv("MIXNET_FUSE_MIN_SIZE", "5")          # set after the assignment: it wins
    assert config.FUSE_MIN_SIZE == 5
    monkeypatch.delenv("MIXNET_FUSE_MIN_SIZE")
    assert config.FUSE_MIN_SIZE == 16384


def test_putting_a_saved_value_back_follows_the_environment_again(monkeypatch, no_overrides):
    """`old = config.X; config.X = new; ...; config.X = old` must not freeze the flag."""
    monkeypatch.delenv("MIXNET_EPILOGUE", raising=False)
    old = config.EPILOGUE
    config.EPILOGUE = False
    assert config.EPILOGUE is False
    config.EPILOGUE = old
    monkeypatch.setenv("MIXNET_EPILOGUE", "0")
    assert config.EPILOGUE is False


def test_monkeypatching_attribute_and_environment_together_leaves_nothing_behind(monkeypatch, no_overrides):
    """pytest undoes setattr before setenv: the attribute is put back while the variable is still set."""
    monkeypatch.delenv("MIXNET_SHOW_CODE", raising=False)
    with pytest.MonkeyPatch.context() as inner:
        inner.setattr(config, "SHOW_CODE", True)
        inner.setenv("MIXNET_SHOW_CODE", "1")
        assert config.SHOW_CODE is True
    assert config.SHOW_CODE is False
    monkeypatch.setenv("MIXNET_SHOW_CODE", "1")
    assert config.SHOW_CODE is True


def test_fusion_switched_off_in_a_running_process(monkeypatch, no_overrides):
    monkeypatch.setenv("MIXNET_FUSE", "0")
    net = mx.gluon.nn.Dense(3, in_units=4, activation="tanh")
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.ones((2, 4)))
    net(x)
    assert net._last_graph.fusion is False
