"""Opt-in `import mxnet` for programs written for MXNet 1.x: `python -m mixnet.mxnet_alias install`.

    python -m mixnet.mxnet_alias install     # this environment's `import mxnet` gives mixnet
    python -m mixnet.mxnet_alias status      # is it installed here, and what does `import mxnet` give?
    python -m mixnet.mxnet_alias uninstall   # removes it

install writes two small files into the site-packages of the Python that runs it (`--user`: the user's site
folder instead; `--dir DIR`: any site folder): `_mixnet_mxnet_alias.py`, a copy of mixnet/_mxnet_alias_finder.py,
and `mixnet-mxnet-alias.pth`, whose one line imports it at interpreter start. The hook answers only for `mxnet`
and `mxnet.*`; it never shadows a real MXNet (when one is importable, `import mxnet` gives it), and
`MIXNET_MXNET_ALIAS=0` turns it off for one run. Nothing of mixnet is imported until a program imports mxnet.
"""
import argparse
import os
import site
import subprocess
import sys
import sysconfig

from ._atomic import write_atomic

PTH_NAME = "mixnet-mxnet-alias.pth"
MODULE_NAME = "_mixnet_mxnet_alias"
_FINDER_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_mxnet_alias_finder.py")


def site_dir(user=False, directory=None):
    """The folder install writes to: `directory`, the user site folder, or this Python's site-packages."""
    if directory:
        return os.path.abspath(directory)
    return site.getusersitepackages() if user else sysconfig.get_paths()["purelib"]


def _files(folder):
    return os.path.join(folder, PTH_NAME), os.path.join(folder, MODULE_NAME + ".py")


def install(folder):
    """Writes the hook's two files into `folder` (atomically; an older copy is replaced). Returns their paths."""
    os.makedirs(folder, exist_ok=True)
    pth, module = _files(folder)
    with open(_FINDER_SOURCE, encoding="utf-8") as f:
        write_atomic(module, f.read())
    write_atomic(pth, f"import {MODULE_NAME}\n")
    return pth, module


def uninstall(folder):
    """Removes the hook's files from `folder`; returns the paths removed."""
    removed = []
    for path in _files(folder):
        if os.path.exists(path):
            os.remove(path)
            removed.append(path)
    cache = os.path.join(folder, "__pycache__")
    if os.path.isdir(cache):
        for name in os.listdir(cache):
            if name.startswith(MODULE_NAME + "."):
                os.remove(os.path.join(cache, name))
    return removed


def status(folder):
    """Lines saying whether the hook is installed in `folder`, whether its copy is current, and what
    `import mxnet` gives a fresh interpreter of this Python."""
    pth, module = _files(folder)
    installed = os.path.exists(pth) and os.path.exists(module)
    lines = [f"alias {'installed' if installed else 'not installed'} in {folder}"]
    if installed:
        with open(module, encoding="utf-8") as a, open(_FINDER_SOURCE, encoding="utf-8") as b:
            if a.read() != b.read():
                lines.append("  its copy is from another mixnet version: run install again")
    probe = subprocess.run([sys.executable, "-c", "import mxnet, os; print(mxnet.__name__, os.path.dirname("
                            "mxnet.__file__))"], capture_output=True, text=True)
    if probe.returncode == 0:
        name, where = probe.stdout.split(maxsplit=1)
        what = "mixnet (the alias)" if name == "mixnet" else "a real MXNet"
        lines.append(f"`import mxnet` gives {what}: {where.strip()}")
    else:
        lines.append("`import mxnet` fails here: " + (probe.stderr.strip().splitlines() or ["?"])[-1])
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mixnet.mxnet_alias",
                                     description="Make `import mxnet` give mixnet in this Python environment "
                                                 "(never shadowing a real MXNet).")
    parser.add_argument("command", choices=("install", "uninstall", "status"))
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="the user's site-packages instead of this Python's")
    where.add_argument("--dir", help="another site folder (one that Python scans for .pth files)")
    args = parser.parse_args(argv)
    folder = site_dir(args.user, args.dir)
    if args.command == "install":
        for path in install(folder):
            print(f"wrote {path}")
        print("`import mxnet` now gives mixnet in new interpreters, unless a real MXNet is installed "
              "(undo: python -m mixnet.mxnet_alias uninstall)")
    elif args.command == "uninstall":
        removed = uninstall(folder)
        print("\n".join(f"removed {p}" for p in removed) or f"nothing to remove in {folder}")
    else:
        print("\n".join(status(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
