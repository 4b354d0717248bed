import os
import subprocess
import sys


def _run(env_value):
    code = ("import mixnet as mx\n"
            "try:\n    mx.nd.array([1.0, 2.0]) + mx.nd.array([1.0, 2.0, 3.0])\n"
            "except mx.MXNetError as e:\n    print(e.__cause__ is not None)\n")
    env = dict(os.environ, MIXNET_DEBUG_ERRORS=env_value)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.strip()


def test_debug_errors_flag_chains_the_backend_exception():
    assert _run("1") == "True"
    assert _run("0") == "False"
