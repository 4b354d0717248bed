"""`python -m mixnet.mxnet_alias`: the opt-in `import mxnet` hook, tried in fresh interpreters on a site folder
of our own (site.addsitedir processes its .pth file as site-packages' would be at start-up)."""
import os
import subprocess
import sys

import mixnet
from mixnet import mxnet_alias

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mixnet.__file__)))
SCRIPT = """
import site, sys
site.addsitedir(sys.argv[1])
import mxnet as mx
from mxnet import nd, gluon, autograd
from mxnet.gluon import nn
import mxnet.ndarray.op
import mixnet
net = nn.Dense(2)
net.initialize()
x = nd.ones((1, 3))
x.attach_grad()
with autograd.record():
    y = net(x).sum()
y.backward()
assert mx is mixnet and gluon is mixnet.gluon and mxnet.ndarray.op is mixnet.ndarray.op
import mxnet.gluon.nn
assert nn is mixnet.gluon.nn and sys.modules["mxnet.gluon.nn"] is nn and x.grad.shape == (1, 3)
try:
    import mxnet.no_such_module
except ModuleNotFoundError as err:
    assert "mxnet.no_such_module" in str(err), err
print("alias ok")
"""


def _run(code, folder, extra_path=(), env=None):
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra_path, ROOT]), **(env or {}))
    return subprocess.run([sys.executable, "-c", code, folder], capture_output=True, text=True, env=environ,
                          timeout=120)


def test_install_makes_mxnet_scripts_run_and_uninstall_undoes_it(tmp_path, capsys):
    folder = str(tmp_path / "site")
    assert mxnet_alias.main(["install", "--dir", folder]) == 0
    assert sorted(os.listdir(folder)) == ["_mixnet_mxnet_alias.py", "mixnet-mxnet-alias.pth"]
    result = _run(SCRIPT, folder)
    assert result.stdout.strip() == "alias ok", result.stderr
    assert "alias installed in" in mxnet_alias.status(folder)[0]
    mxnet_alias.main(["uninstall", "--dir", folder])
    assert os.listdir(folder) == [] or os.listdir(folder) == ["__pycache__"]
    assert "removed" in capsys.readouterr().out
    result = _run("import site, sys; site.addsitedir(sys.argv[1]); import mxnet", folder)
    assert "No module named 'mxnet'" in result.stderr


def test_a_real_mxnet_is_never_shadowed_and_the_switch_turns_it_off(tmp_path):
    folder = str(tmp_path / "site")
    mxnet_alias.install(folder)
    real = tmp_path / "real" / "mxnet"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    (real / "gluon.py").write_text("REAL_GLUON = True\n")
    code = ("import site, sys; site.addsitedir(sys.argv[1]); import mxnet, mxnet.gluon; "
            "print(mxnet.REAL, mxnet.gluon.REAL_GLUON, 'mixnet' in sys.modules)")
    result = _run(code, folder, extra_path=[str(tmp_path / "real")])
    assert result.stdout.split() == ["True", "True", "False"], result.stderr
    result = _run("import site, sys; site.addsitedir(sys.argv[1]); import mxnet", folder,
                  env={"MIXNET_MXNET_ALIAS": "0"})
    assert "No module named 'mxnet'" in result.stderr


def test_the_hook_costs_nothing_until_mxnet_is_imported(tmp_path):
    folder = str(tmp_path / "site")
    mxnet_alias.install(folder)
    result = _run("import site, sys; site.addsitedir(sys.argv[1]); import json; "
                  "print('mixnet' in sys.modules, 'numpy' in sys.modules)", folder)
    assert result.stdout.split() == ["False", "False"], result.stderr
