"""Every command README.md and INSTRUCTORS.md show still works.

* each ``make TARGET`` they show is a target of the Makefile, and each tool its recipe runs
  (``tools/...py`` or ``-m tools.x``) exists;
* each ``python -m ...`` they show names a module of the course that exists;
* (slow) each of those tools, every benchmark ``make benchmarks`` runs and every other tool with a
  command line (``tools/training/``...) answers ``--help``
  with its usage and exit status 0, and changes no file: a real run is too slow for a test (a
  class graded, a model trained, the whole site built) or is tested for real elsewhere:
  ``make lab`` (tests/test_make_lab.py), ``make start`` (tests/test_start.py), ``make test``,
  ``make grade`` and ``make update`` (tests/test_student_clone.py), ``make site``/``slides``
  (tests/test_site.py), ``make lite`` (tests/test_browser_edition.py), ``make hygiene`` (part
  of ``make unit``: tests/test_repo.py).
* ``make start`` and ``make update`` run with any Python 3, before the venv exists: their
  scripts import the standard library only.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "INSTRUCTORS.md")
# The examples' placeholders: `make grade NB=...` grades a notebook, `make lab LAB_PORT=9000`.
MAKE = re.compile(r"\bmake ([a-z][a-z-]*)((?: [A-Z_]+=\S+)*)")
PYTHON_M = re.compile(r"\bpython3? -m (\w+(?:\.\w+)*)(?![.\w]*<)")  # not `tools.<role>`


def code_of(markdown: str) -> list[str]:
    """The code a Markdown page shows: fenced blocks and inline code (which may wrap a line)."""
    fence = r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```"  # fenced blocks may be indented (in a list)
    fenced = re.findall(fence, markdown, re.M | re.S)
    rest = re.sub(fence, "", markdown, flags=re.M | re.S)
    inline = [" ".join(c.split()) for c in re.findall(r"`([^`]+)`", rest)]
    return fenced + inline


def documented() -> tuple[set[str], set[str]]:
    """(make targets, python -m modules) shown in README.md and INSTRUCTORS.md."""
    targets, modules = set(), set()
    for name in DOCS:
        for code in code_of((ROOT / name).read_text(encoding="utf-8")):
            targets |= {m.group(1) for m in MAKE.finditer(code)}
            modules |= {m.group(1) for m in PYTHON_M.finditer(code)}
    return targets, modules


def makefile_recipes() -> dict[str, list[str]]:
    """Each Makefile target's recipe lines (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    recipes: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if m := re.match(r"^([a-z][a-z-]*):(?!=)", line):
            current = recipes.setdefault(m.group(1), [])
        elif line.startswith("\t") and current is not None:
            current.append(line.strip())
        elif line.strip() and not line.startswith("#"):
            current = None
    return recipes


def tools_run_by(recipe: list[str]) -> set[str]:
    """The course's tools a recipe runs: script paths and ``-m`` modules."""
    found = set()
    for line in recipe:
        found |= set(re.findall(r"\b((?:tools|benchmarks)/[\w/]+\.py)\b", line))
        found |= {m for m in re.findall(r"-m ([\w.]+)", line) if m.startswith("tools.")}
    return found


def module_file(module: str) -> Path | None:
    """The file ``python -m module`` runs, if the course has it."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__main__.py"):
        if path.exists():
            return path
    return None


def test_the_documents_show_commands():
    targets, modules = documented()
    # the commands a student and an instructor type, as the README and INSTRUCTORS name them
    assert {"lab", "test", "start", "update", "grade", "site", "slides", "lite"} <= targets
    assert {"tools.grade", "tools.notebooks.nbbuild"} <= modules


def test_every_documented_make_target_is_in_the_makefile_and_its_tools_exist():
    targets, _ = documented()
    recipes = makefile_recipes()
    missing = sorted(t for t in targets if t not in recipes)
    assert not missing, f"README/INSTRUCTORS show make targets the Makefile lacks: {missing}"
    for target in sorted(targets):
        for tool in tools_run_by(recipes[target]):
            exists = (ROOT / tool).exists() if tool.endswith(".py") else module_file(tool)
            assert exists, f"make {target} runs {tool}, which does not exist"


def test_every_documented_python_module_exists():
    _, modules = documented()
    ours = sorted(m for m in modules if m.split(".")[0] in ("tools", "benchmarks"))
    assert ours
    missing = [m for m in ours if module_file(m) is None]
    assert not missing, f"README/INSTRUCTORS show `python -m` commands of no module: {missing}"


def test_make_start_and_update_need_only_the_standard_library():
    for script in ("tools/dev/start.py", "tools/dev/update.py"):
        tree = ast.parse((ROOT / script).read_text(encoding="utf-8"))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names}  # fmt: skip
        imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module and not n.level}  # fmt: skip
        assert imported <= set(sys.stdlib_module_names), (script, imported)


def entry_points() -> list[str]:
    """Every tool the documented commands and make targets run, and the benchmarks."""
    targets, modules = documented()
    recipes = makefile_recipes()
    found = {m for m in modules if m.split(".")[0] in ("tools", "benchmarks")}
    for target in targets | set(recipes):
        found |= tools_run_by(recipes.get(target, []))
    found |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("bench_*.py")}
    # and every other tool with a command line (the grader's student-side files excepted: only
    # the grader starts them, with a config file, inside the sandbox)
    for path in sorted((ROOT / "tools").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if '__name__ == "__main__"' in text and path.parent.name != "grading":
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if path.relative_to(ROOT).as_posix() not in found:
                found.add(module.removesuffix(".__main__"))
    return sorted(found)


@pytest.mark.slow
@pytest.mark.parametrize("tool", entry_points())
def test_each_documented_tool_answers_help(tool):
    """``--help`` prints the usage and exits 0, and runs nothing: no file of the clone changes."""
    cmd = [sys.executable, tool] if tool.endswith(".py") else [sys.executable, "-m", tool]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    before = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                            capture_output=True, text=True).stdout  # fmt: skip
    out = subprocess.run([*cmd, "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, f"{' '.join(cmd)} --help: exit {out.returncode}\n{out.stderr}"
    assert "usage" in out.stdout.lower() or re.search(
        r"^\s+(\.venv/bin/)?python", out.stdout, re.M
    ), f"{tool} --help printed no usage:\n{out.stdout[:500]}"
    after = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                           capture_output=True, text=True).stdout  # fmt: skip
    assert after == before, f"{tool} --help changed files:\n{after}"
