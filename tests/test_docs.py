"""The documentation site (mkdocs.yml, docs/): every page the nav names exists, every page under docs/ is in the
nav, snippet includes point at files that exist, and the code of the user guide runs as shown.

A ```python block in a page of the nav's "Home" or "User guide" sections is run; the blocks of one page run in
order in one fresh interpreter (in a temporary directory, so files they write go there), like a reader pasting
them one after another. A block whose first line is `# not run: <why>` is only compiled (it needs an MPI launch, a
GPU or the reader's own data); the reason is shown on the page. The full site build (`mkdocs build --strict`,
which also checks links and the API reference's docstrings) runs in .ci/run: it needs the `docs` extra.
"""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN_SECTIONS = ("Home", "User guide")
NOT_RUN = "# not run:"
PAGE_TIMEOUT_S = 120            # a page's blocks take 1-3 s; the limit only stops a hang


def nav_pages():
    """(section, page path relative to docs/) for each page in mkdocs.yml's nav, read without a YAML parser
    (the test extra has none): a top-level `  - Section:` line opens a section, `- [Title: ]path.md` is a page."""
    pages, section, in_nav = [], None, False
    for line in (ROOT / "mkdocs.yml").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            in_nav = line.startswith("nav:")
            continue
        if not in_nav:
            continue
        item = re.match(r'(\s*)- (?:("[^"]*"|[^":]+):\s*)?(\S+\.md)?\s*$', line)
        assert item, f"mkdocs.yml: nav line not understood: {line!r}"
        indent, title, path = item.groups()
        title = title and title.strip('"')
        if path is None:
            if len(indent) == 2:
                section = title
            continue
        pages.append((title if len(indent) == 2 else section, path))
    return pages


def python_blocks(text):
    """(first line number of the code, code) of each ```python fenced block, in order (dedented: a block inside a
    list item is indented on the page)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, i = i + 1, i + 1
            while lines[i].strip() != "```":
                i += 1
            blocks.append((start + 1, textwrap.dedent("\n".join(lines[start:i]))))
        i += 1
    return blocks


GUIDE_PAGES = [path for section, path in nav_pages() if section in RUN_SECTIONS]
# the pages with code to run (a guide page of prose and tables only has nothing to check here)
CODE_PAGES = [path for path in GUIDE_PAGES if (DOCS / path).is_file() and python_blocks((DOCS / path).read_text())]


def test_nav_pages_exist_and_every_page_is_in_the_nav():
    pages = [path for _, path in nav_pages()]
    assert "index.md" in pages and len(pages) == len(set(pages)), pages
    missing = [path for path in pages if not (DOCS / path).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist under docs/: {missing}"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk - set(pages) == set(), "pages under docs/ missing from mkdocs.yml's nav"
    assert any(p.startswith("guide/") for p in GUIDE_PAGES) and any(p.startswith("api/") for p in pages)


def test_snippet_includes_exist():
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r'^--8<-- "([^"]+)"', page.read_text(), flags=re.M):
            assert (ROOT / target).is_file(), f"{page.relative_to(ROOT)} includes {target}, which does not exist"


def test_api_reference_names_importable_objects():
    # mkdocstrings reads the source statically; a page naming a moved or renamed object fails the site build,
    # which needs the docs extra. The same check here, by import.
    import importlib
    for page in (DOCS / "api").glob("*.md"):
        for dotted in re.findall(r"^::: (\S+)", page.read_text(), flags=re.M):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for attr in parts[cut:]:
                    assert hasattr(obj, attr), f"{page.name}: {dotted} does not exist"
                    obj = getattr(obj, attr)
                break
            else:
                raise AssertionError(f"{page.name}: {dotted} does not exist")


_RUNNER = """
import sys
page = sys.argv[1]
namespace = {"__name__": "__main__"}
for line, code in BLOCKS:
    if code.lstrip().startswith(NOT_RUN):
        compile(code, page, "exec")
        continue
    exec(compile("\\n" * (line - 1) + code, page, "exec"), namespace)   # tracebacks give the page's line numbers
"""


@pytest.mark.parametrize("page", CODE_PAGES)
def test_guide_code_blocks_run(page, tmp_path):
    blocks = python_blocks((DOCS / page).read_text())
    script = f"BLOCKS = {blocks!r}\nNOT_RUN = {NOT_RUN!r}\n{_RUNNER}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", script, f"docs/{page}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
    assert proc.returncode == 0, f"a code block of docs/{page} failed:\n{proc.stderr[-4000:]}"


def test_not_run_blocks_say_why():
    for page in GUIDE_PAGES:
        for line, code in python_blocks((DOCS / page).read_text()):
            first = code.lstrip().splitlines()[0] if code.strip() else ""
            if first.startswith(NOT_RUN):
                assert first[len(NOT_RUN):].strip(), f"docs/{page}:{line}: '{NOT_RUN}' without a reason"


def test_operator_page_hook_lists_the_generated_functions():
    # docs/_ext/operators_hook.py writes the Operators page from the imported package at build time
    import importlib.util
    spec = importlib.util.spec_from_file_location("operators_hook", DOCS / "_ext" / "operators_hook.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (DOCS / "api" / "operators.md").read_text()
    assert hook.MARKER in page
    text = hook.on_page_markdown(page, page=None)
    assert hook.MARKER not in text
    for name in ("mx.nd.FullyConnected", "mx.nd.linalg.gemm2", "mx.nd.contrib.foreach", "mx.nd.random.uniform"):
        assert f"### `{name}`" in text, name
