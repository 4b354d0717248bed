"""The `import mxnet` -> mixnet alias, as an import hook (see mixnet/mxnet_alias.py, which installs it).

This file is copied as is into site-packages (as `_mixnet_mxnet_alias.py`, imported by a `.pth` line at every
interpreter start), so it must stay self-contained and cheap: standard library only, no import of mixnet until
a program imports mxnet.

How it maps: the finder sits first on sys.meta_path and answers only for `mxnet` and `mxnet.*`.
* `mxnet`: if any other finder can import a real MXNet, it steps aside (a real MXNet always wins); otherwise
  `import mxnet` gives the `mixnet` module itself. MIXNET_MXNET_ALIAS=0 in the environment turns it off.
* `mxnet.X.Y`, once `mxnet` is mixnet: the module `mixnet.X.Y` itself, so `mxnet.gluon is mixnet.gluon` and
  classes are never loaded twice; a name mixnet lacks is the usual ModuleNotFoundError for `mxnet.X.Y`.
The loader puts the mixnet module in sys.modules under the mxnet name (importlib then returns that entry), so
mixnet's own modules keep their names, specs and relative imports.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

ALIAS, TARGET = "mxnet", "mixnet"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        sys.modules[module.__name__] = importlib.import_module(self.target)


class MxnetAliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + "."):
            return None
        if fullname == ALIAS:
            if os.environ.get("MIXNET_MXNET_ALIAS", "1") == "0" or self._real_mxnet():
                return None
            name = TARGET
        else:
            parent = sys.modules.get(ALIAS)
            if parent is None or getattr(parent, "__name__", None) != TARGET:
                return None         # a real MXNet (or none yet): not ours to map
            name = TARGET + fullname[len(ALIAS):]
            if name not in sys.modules and importlib.util.find_spec(name) is None:
                return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name), is_package=True)

    def _real_mxnet(self):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            if finder.find_spec(ALIAS, None) is not None:
                return True
        return False


def install():
    """Puts the finder first on sys.meta_path (once per interpreter)."""
    if not any(isinstance(f, MxnetAliasFinder) or type(f).__name__ == "MxnetAliasFinder" for f in sys.meta_path):
        sys.meta_path.insert(0, MxnetAliasFinder())


install()
