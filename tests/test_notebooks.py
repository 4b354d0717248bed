"""The notebooks run: each code cell executes in order (no Jupyter needed)."""
import json
import os

import pytest

NOTEBOOKS = os.path.join(os.path.dirname(__file__), "..", "notebooks")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")))
def test_notebook_cells_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = json.load(open(os.path.join(NOTEBOOKS, name)))["cells"]
    scope = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{name}", "exec"), scope)
