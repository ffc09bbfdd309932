"""Repository hygiene: pinned, consistent set-up files; tidy notebooks; documented public API.

These run on every notebook and every public name of the tree they are in, so a new lecture or
function that breaks a convention fails with a message saying which one and where. `make test`
runs them in a clean clone of HEAD (tools/dev/in_clean_clone.py), i.e. on what is committed, never on
a student's saved notebooks; `make check` and `make hygiene` run them on the working tree.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

import course_lib
from tools.dev import sync_environment

ROOT = Path(__file__).resolve().parents[1]

LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXERCISE_NBS = sorted((ROOT / "solutions").glob("*.ipynb")) + sorted(
    (ROOT / "exercises").glob("*.ipynb")
)
ALL_NBS = LECTURES + EXERCISE_NBS
MAX_OUTPUT_BYTES = 150_000  # per output; a cell tagged "large-output" may exceed it


def _tracked(pattern: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.split()


# --- set-up files ---------------------------------------------------------------------------


def test_requirements_pin_every_package_exactly():
    pins = sync_environment.read_pins()
    assert pins["torch"] == "2.13.0", "torch must stay at 2.13.0 (the local CPU wheel)"
    for name in (
        "numpy",
        "jupyterlab",
        "ipykernel",
        "nbval",
        "pytest",
        "tqdm",
        "ipywidgets",
        "matplotlib",
        "ruff",
    ):
        assert name in pins, f"{name} is not pinned in requirements.txt"


def test_environment_yml_agrees_with_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = sync_environment.read_pins()
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "python=3.11" in conda
    assert f"pytorch-cpu={pins['torch']}" in conda
    listed = dict(line.split("==") for line in pip if "==" in line)
    expected = {k: v for k, v in pins.items() if k != "torch"}
    differ = {k: (listed.get(k), v) for k, v in expected.items() if listed.get(k) != v}
    assert not differ, f"environment.yml and requirements.txt disagree: {differ}"
    assert set(listed) == set(expected), set(listed) ^ set(expected)


def test_pyproject_declares_lower_bounds_only():
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"dependencies = \[(.*?)\]", text, re.S).group(1)
    assert "==" not in deps and ">=" in deps


def test_ci_runs_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", script, re.M)


def test_make_test_runs_the_full_check_in_a_clean_clone():
    """CI's `make test` gets every check: `make check` (lint, unit, notebooks) in the clone."""
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^TEST_TARGETS \?= check$", make, re.M)
    recipe = re.search(r"^test: .*\n\t(.*)$", make, re.M).group(1)
    assert "tools/dev/in_clean_clone.py" in recipe and "$(TEST_TARGETS)" in recipe, recipe
    check = re.search(r"^CHECK_TIERS := (.*)$", make, re.M).group(1).split()
    assert {"lint", "unit", "notebooks"} <= set(check), check
    recipe = re.search(r"^check: .*\n((?:\t.*\n)+)", make, re.M).group(1)
    assert "for tier in $(CHECK_TIERS)" in recipe and "exit $$status" in recipe, recipe


@pytest.mark.skipif(
    not (ROOT / ".venv" / ".installed").exists() or not (ROOT / ".git").exists(),
    reason="needs `make venv` and a git clone",
)
def test_make_in_the_clean_clone_never_reinstalls_the_linked_venv(tmp_path):
    """Every `make` target run inside `make test`'s clean clone (the tests run `make lab`,
    `make grade`, `make start` there) must use the linked .venv as it is. A fresh checkout's
    requirements.txt is newer than the venv's stamp; re-installing would point the student's
    editable course_lib at the temporary clone, deleted afterwards, and every kernel of their
    next `make lab` would fail with "No module named 'course_lib'"."""
    from tools.dev.in_clean_clone import clean_clone

    clone = tmp_path / "clone"
    clean_clone(clone)
    assert (clone / ".venv").is_symlink()
    for target in ("venv", "lab", "unit", "grade"):
        dry = subprocess.run(["make", "-n", target, "NB=x.ipynb"], cwd=clone,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert "pip install" not in dry.stdout, (target, dry.stdout)
        assert dry.returncode == 0, (target, dry.stdout + dry.stderr)


# --- notebooks ------------------------------------------------------------------------------


@pytest.fixture(params=ALL_NBS, ids=lambda p: f"{p.parent.name}/{p.name}")
def notebook(request):
    return request.param, json.loads(request.param.read_text())


def _text(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


# What JupyterLab 4.6.6 wrote when it opened and saved the lectures (measured in a real browser,
# tests/test_browser_lectures.py), minus the kernel's exact Python version, which `make lab`
# does not save (tools/dev/lab.py).
JUPYTERLAB_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
    },
}


def test_notebook_is_stored_as_jupyterlab_saves_it(notebook):
    """Opening a notebook in JupyterLab must not change it (else `git pull` refuses updates)."""
    path, nb = notebook
    fix = "; run: .venv/bin/python tools/notebooks/notebook_form.py"
    for key, value in JUPYTERLAB_METADATA.items():
        assert nb["metadata"].get(key) == value, f"{path.name}: metadata {key}" + fix
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5), path.name + fix
    floats = []  # JavaScript writes 10.0 as 10
    json.loads(path.read_text(), parse_float=lambda s: floats.append(s) or float(s))
    integral = [f for f in floats if float(f).is_integer()]
    assert not integral, f"{path.name}: integral floats {integral[:5]}" + fix
    text = path.read_text(encoding="utf-8")  # the server's serialisation: nbformat's
    assert text == nbformat.writes(nbformat.reads(text, as_version=4)) + "\n", path.name + fix


def test_notebook_starts_with_title_and_goals_and_ends_with_summary(notebook):
    path, nb = notebook
    first, last = nb["cells"][0], nb["cells"][-1]
    stem = path.stem[:2]
    assert first["cell_type"] == "markdown" and _text(first).startswith(f"# {stem} · "), path.name
    assert "## Learning goals" in _text(first), f"{path.name}: no learning goals"
    assert last["cell_type"] == "markdown" and "## Summary" in _text(last), (
        f"{path.name}: no summary"
    )


def test_notebook_has_no_empty_cells(notebook):
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        assert _text(cell).strip(), f"{path.name}: cell {i} is empty"


def test_first_code_cell_is_the_colab_installer(notebook):
    path, nb = notebook
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert '"google.colab" in sys.modules' in _text(code), path.name


_MACHINE = re.compile(r"(/home/|/tmp/|/root/|/work/|/Users/|C:\\\\|0x[0-9a-f]{8,})", re.I)


def test_no_machine_specific_paths_or_addresses(notebook):
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        blobs = [_text(cell)]
        for out in cell.get("outputs", []):
            blobs.append(json.dumps({k: v for k, v in out.items() if k != "data"}))
            blobs += [json.dumps(v) for k, v in out.get("data", {}).items() if k.startswith("text")]
        for blob in blobs:
            m = _MACHINE.search(blob)
            assert not m, f"{path.name} cell {i}: machine-specific text {m.group(0)!r}"


def test_outputs_are_small_unless_tagged(notebook):
    path, nb = notebook
    for i, cell in enumerate(nb["cells"]):
        if "large-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            size = len(json.dumps(out))
            assert size <= MAX_OUTPUT_BYTES, f"{path.name} cell {i}: output of {size} bytes"


@pytest.mark.parametrize(
    "path",
    LECTURES + sorted((ROOT / "solutions").glob("*.ipynb")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_executed_top_to_bottom(path):
    nb = json.loads(path.read_text())
    counts = [c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: execution counts {counts}"


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("*.ipynb")), ids=lambda p: p.name)
def test_exercises_are_stored_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


def test_every_lecture_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for path in LECTURES:
        assert f"notebooks/{path.name}" in readme, f"README does not link {path.name}"


def test_notebooks_do_not_read_shared_folder():
    this_file = Path(__file__).relative_to(ROOT).as_posix()
    for path in [*map(str, ALL_NBS), *(p for p in _tracked("*.py") if p != this_file)]:
        text = (ROOT / path).read_text() if not Path(path).is_absolute() else Path(path).read_text()
        assert "../shared" not in text and "lecture-notes" not in text, path


# --- public API -----------------------------------------------------------------------------


def _public_objects():
    for name in sorted(set(dir(course_lib))):
        if name.startswith("_"):
            continue
        obj = getattr(course_lib, name)
        if inspect.ismodule(obj):
            continue
        yield name, obj


def test_every_public_name_has_a_docstring():
    missing = [n for n, o in _public_objects() if not (inspect.getdoc(o) or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_public_functions_have_type_hints():
    """Every parameter (but self/cls and *args/**kwargs) and the return of every public function
    and public class's __init__ is annotated."""
    bare = []
    for name, obj in _public_objects():
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        func = obj.__init__ if inspect.isclass(obj) else obj
        if inspect.isclass(obj) and (func is object.__init__ or not inspect.isfunction(func)):
            continue  # no __init__ of its own (dataclasses and NamedTuples are typed fields)
        sig = inspect.signature(func)
        missing = [
            p.name
            for p in sig.parameters.values()
            if p.annotation is inspect.Parameter.empty
            and p.name not in ("self", "cls")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if sig.return_annotation is inspect.Signature.empty and not inspect.isclass(obj):
            missing.append("return")
        if missing:
            bare.append(f"{name}({', '.join(missing)})")
    assert not bare, f"public functions with unannotated parameters or return: {bare}"


# --- imports ------------------------------------------------------------------------------------


def test_tools_and_tests_import_without_editing_sys_path():
    """tools/ is a package (`python -m tools.x`, `from tools import x`) and pytest puts the root
    on the path (pyproject's pythonpath), so nothing needs `sys.path.insert`."""
    edits = re.compile(r"\bsys\.path\.(insert|append)\(")
    found = set()
    for folder in ("tools", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if edits.search(path.read_text(encoding="utf-8")):
                found.add(path.relative_to(ROOT).as_posix())
    assert not found, f"sys.path edited in {sorted(found)}"
