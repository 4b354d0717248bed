"""Runs the notebooks in a real Jupyter kernel and writes their outputs back, or checks that the committed outputs
are current (tests/test_notebooks.py does the check for every notebook).

    python notebooks/run.py                        # execute every notebook here, write each back with its outputs
    python notebooks/run.py gluon_hybridize.ipynb  # only these
    python notebooks/run.py --check                # execute and compare with the committed outputs (exit status
                                                   # 1 if any differ); write nothing

After editing a notebook (in Jupyter or as JSON), run it through this script and commit the result. Each notebook
runs in a fresh IPython kernel of *this* Python (ipykernel's kernel for sys.executable, from a kernelspec written
to a temporary directory, so a `python3` kernel registered elsewhere on the machine is never picked up), over IPC
sockets, with this checkout first on PYTHONPATH, every MIXNET_*/MXNET_* variable removed (all flags at their
defaults, whatever the shell has) and the notebooks folder as its working directory (relative paths such as
../tests/data resolve as in Jupyter). Notebooks are written as nbformat 4.5 (every cell has an id), with
execution counts and without per-cell timing metadata.

What the check compares, per code cell: stdout and stderr each as one text (how a kernel interleaves the two
depends on when it flushes them), then every other output in order by its type, MIME types and text/plain text;
an error by its name and message. Volatile lines: a line that starts with VOLATILE ("⏱", a stopwatch) is a
measurement (a timing) that differs from run to run; it is compared with every number in it replaced by "#"; a
cell tagged "volatile" (a progress bar with its rates) is compared by its output kinds only.
Everything else must match, words and integers exactly and decimals to 1% (another machine's BLAS may sum in
another order and move a printed loss's last digit), so a notebook prints numbers rounded to what is reproducible.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VOLATILE = "⏱"
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:[eE][+-]?\d+)?")


def notebooks():
    return sorted(name for name in os.listdir(HERE) if name.endswith(".ipynb"))


def _kernel_manager(spec_dir, startup):
    """A KernelManager for ipykernel's Python kernel of sys.executable, whatever kernelspecs are installed;
    `startup`: lines of code the kernel runs before the notebook (no cell, no execution count)."""
    from ipykernel.kernelspec import write_kernel_spec
    write_kernel_spec(os.path.join(spec_dir, "python3"),
                      extra_arguments=[f"--IPKernelApp.exec_lines={line}" for line in startup])
    specs = KernelSpecManager(kernel_dirs=[spec_dir], ensure_native_kernel=False)
    # IPC sockets in the temporary directory: no TCP port open to the machine while the notebook runs
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs, transport="ipc",
                         ip=os.path.join(spec_dir, "kernel"))


def execute(name, timeout=120, kernel_dir=None):
    """The notebook `name` (in this folder) executed in a fresh kernel: a new NotebookNode, nothing written.
    Every mixnet flag is at its default there (MIXNET_* and MXNET_* variables are not passed on), so that
    outputs do not depend on the shell; `kernel_dir`: where its generated kernels go (cache.set_cache_dir)
    instead of the default cache directory."""
    nb = nbformat.read(os.path.join(HERE, name), as_version=4)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("MIXNET_", "MXNET_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    startup = [] if kernel_dir is None else \
        [f"from mixnet.codegen import cache as _cache; _cache.set_cache_dir({os.fspath(kernel_dir)!r}); del _cache"]
    spec_dir = tempfile.mkdtemp(prefix="mixnet-kernelspec-")
    km = _kernel_manager(spec_dir, startup)
    try:
        client = NotebookClient(nb, km=km, timeout=timeout, record_timing=False,
                                resources={"metadata": {"path": HERE}})
        client.execute(env=env)
    finally:
        if km.has_kernel:           # a km we pass in is ours to stop: nbclient leaves it running
            km.shutdown_kernel(now=True)
        shutil.rmtree(spec_dir, ignore_errors=True)
    return _tidy(nb)


def _tidy(nb):
    """nbformat 4.5 with ids; consecutive stream outputs of one name merged (how a kernel splits a cell's stream
    into messages depends on timing); the kernel's language_info kept, its volatile version aside."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    for cell in nb.cells:
        cell.setdefault("id", nbformat.v4.new_code_cell().id)
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        merged = []
        for output in cell.outputs:
            if (output.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == output.name):
                merged[-1].text += output.text
            else:
                merged.append(output)
        cell.outputs = merged
    return nb


def _normalised(line):
    return _NUMBER.sub("#", line) if line.lstrip().startswith(VOLATILE) else line


def _summary(output):
    """What is compared of one output: its type, stream name or MIME types, and its text (volatile lines
    normalised). An error is compared by its exception's name and message, not its traceback."""
    kind = output.output_type
    if kind == "stream":
        return kind, output.name, [_normalised(line) for line in output.text.splitlines()]
    if kind == "error":
        return kind, output.ename, [_normalised(line) for line in output.evalue.splitlines()]
    data = output.get("data", {})
    text = data.get("text/plain", "")
    return kind, tuple(sorted(data)), [_normalised(line) for line in "".join(text).splitlines()]


def _summaries(cell):
    """The cell's outputs as compared: stdout and stderr each as one text (how their writes interleave depends on
    when the kernel flushes each stream), then the other outputs in order."""
    if "volatile" in cell.get("metadata", {}).get("tags", []):
        # a cell whose whole output is a measurement (progress bars with rates): only its output kinds count
        return sorted({(output.output_type, output.get("name") or "") for output in cell.outputs})
    streams, others = {}, []
    for output in cell.outputs:
        if output.output_type == "stream":
            streams[output.name] = streams.get(output.name, "") + output.text
        else:
            others.append(_summary(output))
    merged = [_summary(nbformat.v4.new_output("stream", name=name, text=text))
              for name, text in sorted(streams.items())]
    return merged + others


def _numbers_match(a, b):
    """Integers exactly (shapes, counts); decimals to 1% or 1e-6: another CPU's BLAS may sum in another order and
    move the last printed digit of a loss without the notebook being out of date."""
    if not any(c in a + b for c in ".eE"):
        return a == b
    try:
        x, y = float(a.replace(",", "")), float(b.replace(",", ""))
    except ValueError:          # not one number: a version such as 1.9.1
        return a == b
    return abs(x - y) <= 1e-6 + 1e-2 * max(abs(x), abs(y))


def _lines_match(want, got):
    if _NUMBER.sub("#", want) != _NUMBER.sub("#", got):
        return False
    return all(_numbers_match(a, b) for a, b in zip(_NUMBER.findall(want), _NUMBER.findall(got)))


def _outputs_match(want, got):
    """Two cells' summaries agree: the same outputs, types and lines, numbers as `_numbers_match` says."""
    if any(len(summary) == 2 for summary in want + got):     # a volatile cell's: its output kinds only
        return want == got
    if len(want) != len(got):
        return False
    for (kind_a, name_a, lines_a), (kind_b, name_b, lines_b) in zip(want, got):
        if kind_a != kind_b or name_a != name_b or len(lines_a) != len(lines_b):
            return False
        if not all(_lines_match(a, b) for a, b in zip(lines_a, lines_b)):
            return False
    return True


def differences(committed, fresh):
    """Lines describing how `fresh`'s code-cell outputs differ from `committed`'s (empty: they are current)."""
    old = [cell for cell in committed.cells if cell.cell_type == "code"]
    new = [cell for cell in fresh.cells if cell.cell_type == "code"]
    if [c.source for c in old] != [c.source for c in new]:
        return ["the code cells differ (the notebook changed since it was run?)"]
    found = []
    for index, (a, b) in enumerate(zip(old, new)):
        want, got = _summaries(a), _summaries(b)
        if not _outputs_match(want, got):
            found.append(f"cell {a.get('id', index)!r} (code cell {index}):\n  committed: {want}\n  fresh:     {got}")
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all in notebooks/)")
    parser.add_argument("--check", action="store_true", help="compare with the committed outputs; write nothing")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell (default 120)")
    args = parser.parse_args(argv)
    stale = 0
    for name in args.names or notebooks():
        name = os.path.basename(name)
        fresh = execute(name, args.timeout)
        if args.check:
            found = differences(nbformat.read(os.path.join(HERE, name), as_version=4), fresh)
            stale += bool(found)
            print(f"{name}: {'outputs differ' if found else 'current'}", *found, sep="\n  ")
        else:
            nbformat.write(fresh, os.path.join(HERE, name))
            print(f"{name}: written")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
