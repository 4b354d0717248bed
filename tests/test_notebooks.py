"""The notebooks run in a real Jupyter kernel (nbclient + ipykernel, notebooks/run.py) and their committed outputs
are current: each code cell's outputs (types, stream names, MIME types, text) equal a fresh run's, except the
numbers in lines marked volatile (starting with ⏱: timings). Refresh them with `python notebooks/run.py`."""
import importlib.util
import os

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat (the 'test' extra)")
pytest.importorskip("nbclient", reason="the notebook tests need nbclient (the 'test' extra)")
pytest.importorskip("ipykernel", reason="the notebook tests need ipykernel (the 'test' extra)")

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks")
_spec = importlib.util.spec_from_file_location("notebooks_run", os.path.join(NOTEBOOKS, "run.py"))
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)


def _needs(name):
    """Why notebook `name` cannot run here, or None."""
    if name == "distributed.ipynb":
        from mixnet.distributed.comm import available
        from mixnet.tools.launch import mpiexec_path
        if not available() or mpiexec_path() is None:
            return "distributed.ipynb runs a 2-process job: needs mpi4py and mpiexec (the 'dist' extra)"
    return None


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """One kernel cache for the notebooks' kernels (never the user's ~/.cache), shared by them."""
    return tmp_path_factory.mktemp("notebook-kernels")


@pytest.mark.parametrize("name", run.notebooks())
def test_notebook_runs_in_a_kernel_and_its_outputs_are_current(name, kernel_dir):
    reason = _needs(name)
    if reason:
        pytest.skip(reason)
    committed = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    fresh = run.execute(name, timeout=120, kernel_dir=kernel_dir)      # a failing cell raises CellExecutionError
    found = run.differences(committed, fresh)
    assert not found, (f"{name}: the committed outputs are not current; `python notebooks/run.py {name}` "
                       "refreshes them\n" + "\n".join(found))


@pytest.mark.parametrize("name", run.notebooks())
def test_committed_notebooks_are_executed_nbformat_4_5(name):
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    ids = [cell.id for cell in nb.cells]
    assert len(set(ids)) == len(ids)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))    # run in order, once
    assert all("execution" not in cell.metadata for cell in code)                       # no timing metadata


def _notebook(*cells):
    """A notebook of code cells, each given as a list of (stream name or 'result', text) outputs."""
    nb = nbformat.v4.new_notebook()
    for i, outputs in enumerate(cells):
        cell = nbformat.v4.new_code_cell(f"cell_{i}()")
        for kind, text in outputs:
            cell.outputs.append(nbformat.v4.new_output("execute_result", {"text/plain": text}) if kind == "result"
                                else nbformat.v4.new_output("stream", name=kind, text=text))
        nb.cells.append(cell)
    return nb


def test_only_volatile_lines_may_change_their_numbers():
    committed = _notebook([("stdout", "⏱ eager 1.53 ms, hybridized 0.45 ms\nloss 0.52\n")])
    assert run.differences(committed, _notebook([("stdout", "⏱ eager 12.1 ms, hybridized 0.5 ms\nloss 0.52\n")])) \
        == []
    assert len(run.differences(committed, _notebook([("stdout", "⏱ eager 1.53 ms, hybridized 0.45 ms\n"
                                                                 "loss 0.53\n")]))) == 1
    assert len(run.differences(committed, _notebook([("stdout", "⏱ eager 1.53 ms, compiled 0.45 ms\n"
                                                                 "loss 0.52\n")]))) == 1   # words still count


def test_other_lines_allow_the_last_digit_of_a_decimal_but_not_of_an_integer():
    committed = _notebook([("stdout", "loss 0.5213 after 40 steps, shape (2, 3)\n")])
    same = _notebook([("stdout", "loss 0.5214 after 40 steps, shape (2, 3)\n")])   # another BLAS's summation order
    assert run.differences(committed, same) == []
    assert run.differences(_notebook([("stdout", "MXNet 1.9.1\n")]), _notebook([("stdout", "MXNet 1.9.1\n")])) == []
    assert len(run.differences(_notebook([("stdout", "MXNet 1.9.1\n")]), _notebook([("stdout", "MXNet 1.9.2\n")]))) == 1
    for changed in ("loss 0.5313 after 40 steps, shape (2, 3)", "loss 0.5213 after 41 steps, shape (2, 3)",
                    "loss 0.5213 after 40 steps, shape (2, 4)"):
        assert len(run.differences(committed, _notebook([("stdout", changed + "\n")]))) == 1, changed


def test_streams_compare_as_wholes_and_result_types_count():
    committed = _notebook([("stdout", "a\n"), ("stderr", "log line\n"), ("stdout", "b\n")], [("result", "1")])
    assert run.differences(committed, _notebook([("stderr", "log line\n"), ("stdout", "a\nb\n")],
                                                [("result", "1")])) == []
    assert len(run.differences(committed, _notebook([("stdout", "a\nb\n")], [("result", "1")]))) == 1
    assert len(run.differences(committed, _notebook([("stdout", "a\n"), ("stderr", "log line\n"), ("stdout", "b\n")],
                                                    [("stdout", "1\n")]))) == 1
    changed_code = _notebook([("stdout", "a\n")], [("result", "1")])
    changed_code.cells[0].source = "something_else()"
    assert run.differences(committed, changed_code) == [
        "the code cells differ (the notebook changed since it was run?)"]


def test_a_volatile_cell_compares_its_output_kinds_only():
    committed = _notebook([("stderr", "[Epoch 0]: 100%|#| 10/10 [1637.70batch/s]\n"), ("stdout", "done\n")])
    for cell in committed.cells:
        cell.metadata["tags"] = ["volatile"]
    fresh = _notebook([("stderr", "[Epoch 0]: 100%|#| 10/10 [2010.11batch/s]\n"), ("stderr", "more\n"),
                       ("stdout", "done, other text\n")])
    for cell in fresh.cells:
        cell.metadata["tags"] = ["volatile"]
    assert run.differences(committed, fresh) == []
    fresh.cells[0].outputs = fresh.cells[0].outputs[:2]          # the stdout output is gone
    assert len(run.differences(committed, fresh)) == 1
