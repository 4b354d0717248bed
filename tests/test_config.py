"""config.py: every flag is read when it is used, so a running process (a notebook) can switch it, and set at
run time (set / get / override / describe); mixnet logs through the "mixnet" loggers (mixnet/_logging.py)."""
import logging
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


def _traces(caplog):
    caplog.clear()
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((2, 4)))
    return [m for m in caplog.messages if m.startswith("hybridize traced")]


def test_log_compiles_switched_on_in_a_running_process(monkeypatch, caplog, no_overrides):
    monkeypatch.delenv("MIXNET_LOG_COMPILES", raising=False)
    assert _traces(caplog) == []
    monkeypatch.setenv("MIXNET_LOG_COMPILES", "1")      # as a notebook would, with mixnet imported long ago
    assert len(_traces(caplog)) == 1
    monkeypatch.setenv("MIXNET_LOG_COMPILES", "off")
    assert _traces(caplog) == []


def _show_code_prints(caplog, value):
    caplog.clear()
    group = Group([Step("exp", "exp({0})", (inp(0),)), Step("_mul_scalar", "{0} * {scalar}", (step(0),),
                                                            {"scalar": 3.0 + len(value)})], [1], 1)
    cupy_gpu.CudaKernel(group).prepare(cupy_gpu.FLAT)          # renders and logs; needs no cupy
    return "mixnet kernel" in caplog.text


@pytest.mark.parametrize("value, shown", [("1", True), ("yes", True), ("0", False), ("false", False),
                                          ("OFF", False), ("", False)])
def test_codegen_reads_show_code_through_config(monkeypatch, caplog, tmp_path, no_overrides, value, shown):
    """One parse for every reader: MIXNET_SHOW_CODE=false once printed kernels (codegen read it itself)."""
    from mixnet.codegen import cache
    previous = cache.set_cache_dir(tmp_path)
    try:
        monkeypatch.setenv("MIXNET_SHOW_CODE", value)
        assert config.SHOW_CODE is shown
        assert _show_code_prints(caplog, value) is shown
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


# ------------------------------------------------------------------------------------------------ set, get, override
def test_set_get_and_describe_say_where_each_value_comes_from(monkeypatch, no_overrides):
    monkeypatch.setenv("MIXNET_FUSE_MIN_SIZE", "100")
    monkeypatch.delenv("MIXNET_FUSE", raising=False)
    monkeypatch.delenv("MIXNET_VERIFY", raising=False)
    config.set(fuse="off", MIXNET_CACHE_MAX_MB=3, verify=True)     # either name, any case; strings parsed
    assert config.get("FUSE") is False and config.get("mixnet_cache_max_mb") == 3.0 and config.VERIFY is True
    rows = {row["name"]: row for row in config.flag_table()}
    assert (rows["FUSE"]["source"], rows["FUSE_MIN_SIZE"]["source"], rows["INPLACE"]["source"]) == \
        ("set", "env", "default")
    assert rows["FUSE_MIN_SIZE"]["value"] == 100 and rows["FUSE_MIN_SIZE"]["raw"] == "100"
    changed = config.describe(changed_only=True).splitlines()      # (conftest.py sets a few variables too)
    assert changed[0].split() == ["flag", "value", "default", "from"]
    mine = {line.split()[0]: line.split()[1:] for line in changed[1:]
            if line.split()[0] in ("MIXNET_FUSE", "MIXNET_VERIFY", "MIXNET_FUSE_MIN_SIZE", "MIXNET_CACHE_MAX_MB")}
    assert mine == {"MIXNET_FUSE": ["False", "True", "set"], "MIXNET_VERIFY": ["True", "False", "set"],
                    "MIXNET_FUSE_MIN_SIZE": ["100", "16384", "env", "'100'"],
                    "MIXNET_CACHE_MAX_MB": ["3.0", "512.0", "set"]}
    assert len(config.describe().splitlines()) == len(rows) + 1
    config.set(FUSE=None, VERIFY=None, CACHE_MAX_MB=None)          # None: back to the environment or default
    assert config.FUSE is True and "MIXNET_FUSE " not in config.describe(changed_only=True)


@pytest.mark.parametrize("flags, message", [
    ({"NOPE": 1}, r"no flag named 'NOPE'; the flags are DEBUG_ERRORS, FULL_TRACEBACK, FUSE, .*MIRROR"),
    ({"FUSE": 2}, r"FUSE \(MIXNET_FUSE\) = 2: is of type int; expected a switch"),
    ({"FUSE_MIN_SIZE": 1.5}, "is not a whole number"),
    ({"FUSE_MIN_SIZE": "many"}, r"= 'many': is not a number; expected a whole number"),
    ({"MAX_ELEMENTS": 0}, "expected a positive whole number"),
    ({"MAX_ELEMENTS": "-3"}, "is not a positive number"),           # the environment would warn and default
    ({"CACHE_MAX_MB": True}, "is of type bool; expected a number"),
    ({"CACHE_DIR": 3}, "expected a path"),
])
def test_set_refuses_unknown_names_and_bad_values_before_changing_anything(flags, message, no_overrides):
    before = config.flag_table()
    with pytest.raises(config.ConfigError, match=message):
        config.set(FUSE_REDUCE=False, **flags)                     # the valid one is not applied either
    assert config.flag_table() == before
    assert issubclass(config.ConfigError, mx.MXNetError) and issubclass(config.ConfigError, ValueError)


def test_assignment_goes_through_the_parser_too(monkeypatch, no_overrides, tmp_path):
    monkeypatch.delenv("MIXNET_FUSE", raising=False)
    config.FUSE = "0"                      # a string "0" once stored as is, and was truthy
    assert config.FUSE is False
    config.CACHE_DIR = tmp_path            # a path-like: stored as its string
    assert config.CACHE_DIR == str(tmp_path)
    with pytest.raises(config.ConfigError):
        config.FUSE_MIN_SIZE = "lots"


def test_override_puts_back_exactly_what_was_there(monkeypatch, no_overrides):
    monkeypatch.delenv("MIXNET_EPILOGUE", raising=False)
    monkeypatch.delenv("MIXNET_INPLACE", raising=False)
    config.set(INPLACE=False)
    with config.override(MIXNET_EPILOGUE=False, INPLACE=True):
        assert (config.EPILOGUE, config.INPLACE) == (False, True)
        with config.override(EPILOGUE=True):
            assert config.EPILOGUE is True
        assert config.EPILOGUE is False
    assert (config.EPILOGUE, config.INPLACE) == (True, False)
    assert config.flag_table()[[f["name"] for f in config.flag_table()].index("EPILOGUE")]["source"] == "default"
    with pytest.raises(RuntimeError), config.override(EPILOGUE=False):
        raise RuntimeError("the block fails")
    assert config.EPILOGUE is True
    monkeypatch.setenv("MIXNET_EPILOGUE", "0")      # with no setting left, the environment is followed again
    assert config.EPILOGUE is False
    with pytest.raises(config.ConfigError, match="no flag named 'EPILOG'"), config.override(EPILOG=False):
        pass


# ------------------------------------------------------------------------------------------------ logging
_LOGGING_SCRIPT = r"""
import logging, sys
import mixnet as mx

def hybridize_once():
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 3)))

def mark(text):
    print(f"== {text}", file=sys.stderr, flush=True)

mark("no logging configured, switch off")
hybridize_once()
mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)(5)       # INFO records of mixnet.lr_scheduler
mark("switch on")
mx.config.set(LOG_COMPILES=True)
hybridize_once()
mark(f"root handlers {logging.root.handlers} mixnet handlers {logging.getLogger('mixnet').handlers}")
logging.basicConfig(format="ROOT %(levelname)s %(name)s %(message)s")        # level WARNING
mark("configured, switch on")
hybridize_once()
mark("configured, switch off, the trace logger at DEBUG")
mx.config.set(LOG_COMPILES=False)
logging.getLogger("mixnet.gluon.cached_graph").setLevel(logging.DEBUG)
hybridize_once()
"""


def test_logging_goes_through_mixnet_loggers_and_switches_force_their_records_out(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIXNET_LOG")}
    env["MIXNET_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", _LOGGING_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    sections = {}
    for line in done.stderr.splitlines():
        if line.startswith("== "):
            sections[line[3:]] = current = []
        else:
            current.append(line)
    names = list(sections)
    assert sections[names[0]] == []                                # nothing shown: the library stays quiet
    assert sections[names[1]] == ["mixnet.gluon.cached_graph: hybridize traced Dense 'dense1' (graph 1): "
                                  "first call"]                    # to stderr: the switch must show something
    assert names[2] == "root handlers [] mixnet handlers [<NullHandler (NOTSET)>]"   # root never configured
    assert sections[names[3]] == ["ROOT DEBUG mixnet.gluon.cached_graph hybridize traced Dense 'dense2' "
                                  "(graph 1): first call"]         # once, through the application's handler
    assert sections[names[4]] == ["ROOT DEBUG mixnet.gluon.cached_graph hybridize traced Dense 'dense3' "
                                  "(graph 1): first call"]


def test_lr_scheduler_and_module_log_to_mixnet_loggers(caplog):
    caplog.set_level("INFO")
    mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)(5)
    assert [(r.name, r.levelname) for r in caplog.records] == [("mixnet.lr_scheduler", "INFO")] * 2
    assert mx.mod.Module(mx.sym.var("data"), label_names=None).logger is logging.getLogger("mixnet.module")
