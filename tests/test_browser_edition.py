"""The browser edition: lectures 01-04, 06 and 10 without torch, and the JupyterLite site.

Pyodide (the Python of JupyterLite) has no torch, transformers or tokenizers. A browser cannot
run here (the site loads Pyodide from a CDN), so these tests check what can be checked offline:
the notebooks and their solutions run under CPython with those packages blocked, the cells that
need them say so on their first line (``# needs: torch``) and print a one-line note instead, the
exercise checks give the same verdicts with and without torch, ``make lite`` builds, and every
import of the site's notebooks is in Pyodide's package list (``pyodide-lock.json``) or in a
bundled pure-Python wheel.
"""

from __future__ import annotations

import ast
import html
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

from course_lib import _TORCH_MODULES
from course_lib._lazy import lazy_names
from course_lib._optional import _NEEDS, skip_cells_needing_missing, skip_note
from tools.site.build_lite import LECTURES, browser_imports

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("torch", "transformers", "tokenizers")  # hidden as if not installed: _no_torch.py
HIDE = ROOT / "tests" / "_no_torch.py"
BLOCK_LINE = f"exec(compile(open({str(HIDE)!r}).read(), {str(HIDE)!r}, 'exec'))"
# Names that mean torch in a cell: the packages, their usual aliases, and course_lib's torch half.
TORCH_NAMES = {*BLOCKED, "nn", "F"} | set(lazy_names("course_lib", _TORCH_MODULES))


def _needs(cell) -> list[str] | None:
    m = _NEEDS.fullmatch(cell.source.split("\n", 1)[0].strip())
    return [s.strip() for s in m["modules"].split(",")] if m else None


def _names(source: str) -> set[str]:
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_the_skipper_replaces_only_cells_that_need_a_missing_package():
    cell = ["# needs: torch\n", "import torch\n"]
    assert skip_cells_needing_missing(cell) == cell  # torch is installed here
    note = skip_cells_needing_missing(["# needs: torch, no_such_package\n", "x = 1\n"])
    assert note == [f"print({skip_note(['no_such_package'])!r})\n"]
    assert "needs no_such_package" in note[0] and "course_lib[lectures]" in note[0]
    for untouched in (["x = 1  # needs: no_such_package\n"], ["# needs no_such_package\n"], []):
        assert skip_cells_needing_missing(untouched) == untouched


@pytest.mark.parametrize("stem", LECTURES)
def test_every_cell_that_uses_torch_says_so(stem):
    """In the browser lectures a cell that names torch, transformers or a torch-half name of
    course_lib starts with ``# needs: ...``; the others must run without them."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        used = _names(cell.source) & TORCH_NAMES
        if _needs(cell) is None:
            assert not used, f"{stem} cell {cell.id} uses {sorted(used)} without '# needs:'"
    skipped = [c for c in nb.cells if c.cell_type == "code" and _needs(c)]
    assert bool(skipped) == (stem in {"03_multi_head_attention", "04_positional_encoding",
                                      "10_attention_at_scale"}), stem  # fmt: skip


@pytest.mark.slow  # two Python subprocesses run the six solution notebooks
def test_the_checks_give_the_same_verdicts_without_torch():
    """Right answers, answers made wrong and the stubs: the same verdict, word for word."""
    paths = [f"{stem}.ipynb" for stem in LECTURES]

    def verdicts(*flags):
        out = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "_verdicts.py"), *flags, *paths],
            cwd=ROOT / "solutions", capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    with_torch, without = verdicts(), verdicts("--block-torch")
    assert without == with_torch
    runs = [v for nb in with_torch.values() for v in nb.values()]
    assert len(runs) == 26, len(runs)  # every exercise of the six lectures
    assert all(v["solution"] == "pass" for v in runs)
    wrong_failed = sum(v["wrong"] != "pass" for v in runs)
    assert wrong_failed >= 20, f"only {wrong_failed} of {len(runs)} wrong answers failed"


def _run_blocked(path: Path) -> nbformat.NotebookNode:
    from tools.notebooks.nbbuild import run_notebook

    nb = nbformat.read(path, as_version=4)
    run_notebook(nb, path.parent, kernel_args=(f"--IPKernelApp.exec_lines={BLOCK_LINE}",))
    return nb


@pytest.mark.slow  # runs 12 notebooks
@pytest.mark.parametrize(
    "path",
    [ROOT / d / f"{s}.ipynb" for d in ("notebooks", "solutions") for s in LECTURES],
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_the_numpy_lectures_run_with_torch_blocked(path):
    nb = _run_blocked(path)  # raises CellExecutionError if any cell fails
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        needs = _needs(cell)
        if needs is not None and set(needs) & set(BLOCKED):
            missing = [m for m in needs if m in BLOCKED]
            assert text == skip_note(missing) + "\n", (cell.id, text)
        else:
            assert "Skipped" not in text, (cell.id, text)
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    for cell in checks:  # solutions: every exercise passes
        assert "passed" in "".join(o.get("text", "") for o in cell.outputs), cell.id


@pytest.fixture(scope="module")
def lite_site(tmp_path_factory):
    from tools.site.build_lite import build_lite

    out = tmp_path_factory.mktemp("lite") / "site"
    measured = build_lite(out, log=lambda *a: None)
    return out, measured


@pytest.mark.slow  # pip wheel + jupyter lite build (~1 min)
def test_make_lite_builds_the_six_lectures_and_their_exercises(lite_site):
    out, measured = lite_site
    assert (out / "lab" / "index.html").is_file() and (out / "jupyter-lite.json").is_file()
    for folder in ("notebooks", "exercises"):
        served = sorted(p.stem for p in (out / "files" / folder).glob("*.ipynb"))
        assert served == sorted(LECTURES), (folder, served)
    (wheel,) = (out / "pypi").glob("course_lib-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "course_lib/softmax.py" in names and not [n for n in names if n.endswith(".pt")]
    index = json.loads((out / "pypi" / "all.json").read_text())
    assert {"course-lib", "sacrebleu", "ipywidgets"} <= set(index), sorted(index)
    nb = nbformat.read(out / "files" / "notebooks" / "06_bleu.ipynb", as_version=4)
    first = nb.cells[1].source
    assert "await piplite.install(" in first and "'course_lib'" in first and "'sacrebleu'" in first
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    print(f"lite site: {measured['bytes'] / 2**20:.1f} MiB, built in {measured['seconds']:.0f} s")


@pytest.mark.slow  # needs the lite build's wheels and Pyodide's lock (npm)
def test_every_browser_import_is_in_pyodide_or_a_bundled_pure_wheel(lite_site):
    from tools.site.build_lite import pyodide_lock

    out, _ = lite_site
    lock = pyodide_lock()
    shipped = {imp for pkg in lock["packages"].values() for imp in pkg["imports"]}
    bundled = set()
    for wheel in (out / "pypi").glob("*.whl"):
        assert wheel.name.endswith("-none-any.whl"), f"{wheel.name} is not pure Python"
        bundled |= {n.split("/")[0].removesuffix(".py") for n in zipfile.ZipFile(wheel).namelist()}
    for stem in LECTURES:
        for folder in ("notebooks", "exercises", "solutions"):
            nb = nbformat.read(ROOT / folder / f"{stem}.ipynb", as_version=4)
            modules = browser_imports(nb) - set(sys.stdlib_module_names)
            missing = modules - shipped - bundled
            assert not missing, f"{folder}/{stem} imports {missing}: not in Pyodide, not bundled"
    # What course_lib's numpy half imports: its core dependencies must be in Pyodide or bundled.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    assert core <= shipped | bundled, core - shipped - bundled
    assert not {"torch", "transformers", "tokenizers"} & (shipped | bundled)


def test_the_site_links_the_browser_edition_where_it_has_the_lecture(tmp_path):
    """`make site` builds the browser edition into the site (--lite) and each of its lectures and
    exercises links to it; README's "browser" links work in the site, and lose their target in a
    site built without it."""
    from tools.site.links import rewrite_links
    from tools.site.pages import browser_link

    make = (ROOT / "Makefile").read_text()
    assert "tools.site.build_site site build/site --lite" in make
    assert browser_link(Path("notebooks/03_multi_head_attention.ipynb")) == Path(
        "lite/lab/index.html?path=notebooks/03_multi_head_attention.ipynb"
    )
    assert browser_link(Path("exercises/10_attention_at_scale.ipynb")) is not None
    assert browser_link(Path("notebooks/05_transformer_layer.ipynb")) is None
    assert browser_link(Path("solutions/01_softmax.ipynb")) is None
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # in the repository (GitHub, JupyterLab) they open the page that says how to build and
    # serve the browser edition, which has a heading (an anchor) for each of its lectures
    links = set(re.findall(r"\[browser\]\(docs/browser-edition\.md#(\w+)\)", readme))
    assert links == set(LECTURES)
    howto = (ROOT / "docs" / "browser-edition.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^## (\w+)$", howto, re.M)) == set(LECTURES)
    assert "python -m http.server -d build/site" in howto
    page = '<a href="docs/browser-edition.md#01_softmax">browser</a>'
    lite = "lite/lab/index.html?path=notebooks/01_softmax.ipynb"
    broken: list[str] = []
    args = (ROOT / "README.md", Path("index.html"), tmp_path, set(), broken)
    assert f'data-left-out="{lite}"' in rewrite_links(page, *args) and not broken
    (tmp_path / "lite" / "lab").mkdir(parents=True)
    (tmp_path / "lite" / "lab" / "index.html").write_text("")
    assert rewrite_links(page, *args) == f'<a href="{html.escape(lite)}">browser</a>'
    assert not broken


def _run_first_cell(source: str, install) -> tuple[str, BaseException | None]:
    """Run the browser edition's first cell under CPython, with ``install`` as piplite's."""
    import asyncio
    import contextlib
    import io
    import types

    fake = types.ModuleType("piplite")
    fake.install = install
    code = compile(source, "<first cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out, error = io.StringIO(), None
    saved = sys.modules.get("piplite")
    sys.modules["piplite"] = fake
    try:
        with contextlib.redirect_stdout(out):
            result = eval(code, {})  # a coroutine, since the cell awaits
            if result is not None:
                asyncio.run(result)
    except Exception as err:  # the cell's own error, as the notebook would show it
        error = err
    finally:
        sys.modules.pop("piplite")
        if saved is not None:
            sys.modules["piplite"] = saved
    return out.getvalue(), error


def test_the_first_cell_says_plainly_what_did_not_load_and_why():
    """Offline or with the CDN blocked, piplite may report success while numpy did not load:
    the first cell imports each module itself and names what failed, with the reason."""
    from tools.site.build_lite import FIRST_CELL

    async def installs(packages):
        return None

    async def fails(packages):
        raise ValueError("Can't fetch metadata for 'numpy'")

    ok = FIRST_CELL.format(packages=["course_lib", "numpy"], modules=["course_lib", "numpy"])
    out, error = _run_first_cell(ok, installs)
    assert error is None and out == "Ready: course_lib, numpy loaded.\n"
    gone = FIRST_CELL.format(packages=["numpy"], modules=["numpy", "no_such_module_here"])
    for install in (installs, fails):  # piplite quiet, or piplite failing
        out, error = _run_first_cell(gone, install)
        assert isinstance(error, RuntimeError), (out, error)
        message = str(error)
        assert "could not load no_such_module_here (ModuleNotFoundError" in message
        assert "numpy (" not in message  # numpy loaded: not listed
        assert "cdn.jsdelivr.net" in message and "offline" in message and "make lab" in message
    out, _ = _run_first_cell(gone, fails)
    assert "piplite.install reported: ValueError: Can't fetch metadata" in out


def test_every_page_of_the_browser_edition_gets_the_notices(tmp_path):
    from tools.site.build_lite import NOTICE_ID, add_notices

    (tmp_path / "lab").mkdir()
    page = "<!doctype html><html><head><title>JupyterLite</title></head><body></body></html>"
    (tmp_path / "lab" / "index.html").write_text(page)
    (tmp_path / "index.html").write_text(page)
    assert len(add_notices(tmp_path)) == 2 and add_notices(tmp_path) == []  # once
    text = (tmp_path / "lab" / "index.html").read_text()
    assert text.startswith("<!doctype html><html><head><script>") and NOTICE_ID in text
    assert 'location.protocol === "file:"' in text and "python -m http.server" in text


@pytest.mark.slow  # the lite build, an HTTP server and Chromium
def test_the_browser_edition_says_what_is_wrong_offline_and_from_disk(lite_site, chromium):
    """With the network off (no CDN, so no Pyodide), a lecture opened over HTTP gets a
    page-level notice once its kernel has not started within the timeout; the site opened from
    disk (file://) shows how to serve it instead of a blank page."""
    import contextlib
    import socket
    import time

    from _browser import Browser

    from tools.site.build_lite import NOTICE_ID

    out, _ = lite_site
    notice_js = f"(document.getElementById({NOTICE_ID!r}) || {{}}).innerText || ''"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        stack.callback(server.wait, 10)
        stack.callback(server.terminate)
        browser = stack.enter_context(Browser(chromium, timeout=120))
        browser.navigate((out / "lab" / "index.html").as_uri())
        text = browser.wait_for(lambda: browser.evaluate(notice_js), 30, "the file:// notice")
        assert "served over HTTP" in text and "python -m http.server" in text, text
        url = f"http://127.0.0.1:{port}/lab/index.html?path=notebooks/01_softmax.ipynb"
        browser.navigate(url + "&course-kernel-timeout=5")
        started = time.monotonic()
        browser.wait_for(
            lambda: browser.evaluate("!!document.querySelector('.jp-NotebookPanel')"),
            120,
            "the lecture to open",
        )
        text = browser.wait_for(lambda: browser.evaluate(notice_js), 120, "the kernel notice")
        print(f"notice after {time.monotonic() - started:.0f} s: {text[:80]}")
        assert "Python has not started after 5 s" in text and "cdn.jsdelivr.net" in text, text
        status = browser.evaluate(
            "(document.querySelector('.jp-Notebook-ExecutionIndicator') || {getAttribute: "
            "() => null}).getAttribute('data-status')"
        )
        assert status not in ("idle", "busy"), status  # the kernel really had not started
