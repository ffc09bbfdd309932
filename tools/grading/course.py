"""What the grader trusts, read once before any student code runs: the official exercise
templates (as committed), their check calls, and the library and kernel files the sandbox gets.

**Identity**: :meth:`Course.identify` names the lecture of a notebook by its content (the
official cells it holds), never by its file name or metadata.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tools.notebooks.make_exercises import CODE_STUB, MARKDOWN_STUB

from .grade_kernel import library_fingerprints
from .notebook import Cell, NotGradable, exercise_id

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
QUIZZES = (
    ROOT / "quizzes"
)  # the concept quizzes (tools/notebooks/make_quizzes.py), graded the same way


@dataclass
class Check:
    exercise: str
    function: object  # the official check function
    args: list  # ("name", student name) or ("value", literal)


@dataclass
class Template:
    name: str
    cells: list[Cell]
    checks: dict[str, Check]  # exercise id -> check
    problem: str | None = None  # why the grader refuses this template (a check it cannot grade)
    imported_checks: dict[str, str] = field(
        default_factory=dict
    )  # name -> course_lib.checks module
    # the checks modules' FIXTURES (called in the student's process before its cells) and
    # precompute() functions (called once in the grader before a class is graded)
    fixtures: tuple[str, ...] = ()
    precompute: tuple = ()

    @property
    def lecture(self) -> str:
        return self.name[:2]


def _check_call(source: str, imports: dict[str, str], exercise: str) -> Check:
    """The check a template check cell calls, and where each of its arguments comes from."""
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    call = next(c for c in calls if isinstance(c.func, ast.Name) and c.func.id in imports)
    module = importlib.import_module(imports[call.func.id])
    args = [
        ("name", a.id) if isinstance(a, ast.Name) else ("value", ast.literal_eval(a))
        for a in call.args
    ]
    return Check(exercise, getattr(module, call.func.id), args)


def load_template(path: Path, text: str | None = None) -> Template:
    nb = json.loads(path.read_text() if text is None else text)
    imports = {}
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            for node in ast.walk(ast.parse("".join(c["source"]))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "course_lib.checks"
                ):
                    imports.update({a.asname or a.name: node.module for a in node.names})
    cells, checks, untagged = [], {}, []
    for i, c in enumerate(nb["cells"]):
        src = "".join(c["source"])
        cell = Cell(c["cell_type"], src, c.get("id"), exercise_id(c))
        cell.answer = CODE_STUB in src or MARKDOWN_STUB in src
        if cell.exercise and c["cell_type"] == "code":
            checks[cell.exercise] = _check_call(src, imports, cell.exercise)
        elif c["cell_type"] == "code" and (called := calls_a_check(src, imports)):
            untagged.append(f"cell {i} calls {called}")
        cells.append(cell)
    problem = None
    if untagged:
        problem = (
            f"the course's template {path.name} has a check the grader would not grade "
            f"({'; '.join(untagged)}, without an exercise-N.k tag): tell the instructor"
        )
    modules = [importlib.import_module(m) for m in sorted(set(imports.values()))]
    fixtures = tuple(f for m in modules for f in getattr(m, "FIXTURES", ()))
    precompute = tuple(m.precompute for m in modules if callable(getattr(m, "precompute", None)))
    return Template(path.stem, cells, checks, problem, imports, fixtures, precompute)


def calls_a_check(source: str, imports: dict[str, str] | None = None) -> str | None:
    """The name of the first `check_*` function ``source`` calls (None if it calls none)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name.startswith("check_"):
                return name
    return None


def _official(exercises: Path) -> list[tuple[Path, str | None]]:
    """The exercise templates as committed (``git ls-files``/``git show HEAD:``) when
    ``exercises`` is this repository's folder: a student may answer the exercises in place or
    save notebooks of their own there, and neither must change what the grader trusts. Outside a
    git clone (or for another folder), the files as they are."""
    try:
        rel = exercises.resolve().relative_to(ROOT).as_posix()
        listed = subprocess.run(["git", "ls-files", "-z", "--", f"{rel}/*.ipynb"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        names = sorted(n for n in listed.stdout.split("\0") if n)
        if names:
            shown = [subprocess.run(["git", "show", f"HEAD:{n}"], cwd=ROOT, capture_output=True,
                                    text=True, timeout=60, check=True).stdout for n in names]  # fmt: skip
            return [(ROOT / n, text) for n, text in zip(names, shown, strict=True)]
    except (ValueError, OSError, subprocess.SubprocessError):
        pass
    return [(p, None) for p in sorted(exercises.glob("*.ipynb"))]


class Course:
    """Everything the grader trusts, read once before any student code runs."""

    def __init__(
        self,
        exercises: Path = EXERCISES,
        library: Path = ROOT / "course_lib",
        quizzes: Path | None = QUIZZES,
    ):
        official = _official(exercises) + (_official(quizzes) if quizzes else [])
        self.templates = {p.stem: load_template(p, text) for p, text in official}
        self.library = sandbox_library(library, self.templates.values())
        # who each course_lib function is, by content: the sandbox's record of reached code
        self.fingerprints = library_fingerprints(self.library)
        here = Path(__file__).parent  # the student-side files of this package
        self.kernel_files = {
            name: (here / name).read_bytes() for name in ("grade_kernel.py", "grade_sandbox.py")
        }

    def identify(self, cells: list[Cell], path: Path) -> Template:
        """The template whose official cells this notebook holds (by content, not by name)."""
        sources = {c.source.strip() for c in cells}
        scores = {
            name: sum(1 for c in t.cells if not c.answer and c.source.strip() in sources)
            for name, t in self.templates.items()
        }
        best = max(scores.values(), default=0)
        winners = [n for n, s in scores.items() if s == best]
        if best == 0:
            raise NotGradable("it matches none of the course's exercise notebooks")
        if len(winners) > 1:
            raise NotGradable(f"it matches several exercise notebooks equally: {winners}")
        return self.templates[winners[0]]

    @staticmethod
    def name_warning(template: Template, path: Path) -> str | None:
        """A warning when the file name's lecture number is not the lecture its content is (the
        notebook is graded by content all the same)."""
        m = re.match(r"(\d\d)(?!\d)", path.name)
        if m and m.group(1) != template.lecture:
            return (
                f"graded as lecture {template.lecture} ({template.name}) by its content, but the "
                f"file name says lecture {m.group(1)}"
            )
        return None


# What the sandbox's copy of course_lib holds of course_lib/checks/: the modules of what notebooks are
# given (inputs, shipped data, Built factories); every other module of the package is a stub.
GIVEN = ("given.py", "given_torch.py")
_STUB = '''"""A stub: in the grader's sandbox the checks are not here. They run in the grader's process,
which calls the functions the notebook defines (tools/grading/cli.py)."""
{imports}

def _checked_by_the_grader(*args, **kwargs):
    raise RuntimeError("the checks run in the grader's process, not in the notebook's")

{names}
'''


def sandbox_library(library: Path, templates) -> dict[str, bytes]:
    """The files of the private copy of ``course_lib`` the sandbox gets: the library without its
    checks (each ``course_lib/checks`` module but :data:`GIVEN` is a stub that defines the names
    the templates import from it, check functions that only raise) and without the quizzes'
    answer keys (``course_lib/quizzes/``). So no check function, mistake table or hidden-input
    rule is in the student's process, and no check hands over a reference (``check.__globals__``).
    """
    files: dict[str, bytes] = {}
    for p in sorted(library.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        parts = p.relative_to(library).parts
        if parts[0] == "quizzes" or (parts[0] == "checks" and parts[-1] not in GIVEN):
            continue
        files[str(p.relative_to(library.parent))] = p.read_bytes()
    wanted: dict[str, set[str]] = {}
    for t in templates:
        for name, module in t.imported_checks.items():
            wanted.setdefault(module, set()).add(name)
    given = {m: _public_names(library / "checks" / f"{m}.py") for m in ("given", "given_torch")}
    for p in sorted((library / "checks").glob("*.py")):
        if p.name in GIVEN:
            continue
        module = f"{library.name}.checks" + ("" if p.stem == "__init__" else f".{p.stem}")
        names = sorted(wanted.get(module, ()))
        imports = [f"from {library.name}.checks.{m} import {n}" for n in names
                   for m, public in given.items() if n in public]  # fmt: skip
        stubbed = [n for n in names if not any(n in public for public in given.values())]
        text = _STUB.format(imports="\n".join(imports),
                            names="".join(f"{n} = _checked_by_the_grader\n" for n in stubbed))  # fmt: skip
        files[str(p.relative_to(library.parent))] = text.encode()
    return files


def _public_names(path: Path) -> set[str]:
    """The names a module lists in ``__all__`` (read from its source, never imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _course() -> Course:
    if "course" not in _COURSE:
        _COURSE["course"] = Course()
    return _COURSE["course"]


_COURSE: dict = {}
