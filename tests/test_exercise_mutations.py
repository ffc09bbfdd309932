"""Every function a student writes is checked closely enough that a slightly wrong one fails.

For each solution notebook, every function an answer cell defines (``def name`` between the
solution markers) is wrapped, in a cell added right after it, by :func:`perturb`: numbers and
float arrays/tensors become ``x * 1.1 + 0.01``, booleans flip, lists and strings are reversed
(their items perturbed too), tuples and dicts have their items perturbed. The notebook is then
graded like a student's: the exercise of every wrapped function must fail. Slow: one sandboxed
grading run per lecture.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tools.grading import cli as grade

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
_DEF = re.compile(r"^def (\w+)\(", re.M)

PERTURB = """
def _perturb_output(f):
    import functools

    import numpy as np

    def bend(x):
        try:
            import torch
        except ImportError:
            torch = None
        if isinstance(x, (bool, np.bool_)):
            return not x
        if isinstance(x, (int, float, np.integer, np.floating)):
            return x * 1.1 + 0.01
        if isinstance(x, str):
            return x[::-1] + "x"
        if isinstance(x, np.ndarray):
            return ~x if x.dtype == bool else x * 1.1 + 0.01
        if torch is not None and isinstance(x, torch.Tensor):
            return ~x if x.dtype == torch.bool else x * 1.1 + 0.01
        if isinstance(x, list):
            return [bend(v) for v in reversed(x)]
        if isinstance(x, tuple):
            return tuple(bend(v) for v in x)
        if isinstance(x, dict):
            return {k: bend(v) for k, v in x.items()}
        return x

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return bend(f(*args, **kwargs))

    return wrapper
"""


def student_functions(nb) -> list[tuple[int, str]]:
    """(cell index, name) of every function defined inside an answer block."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "### BEGIN SOLUTION" not in cell.source:
            continue
        out += [
            (i, m.group(1)) for m in _DEF.finditer(cell.source) if not m.group(1).startswith("_")
        ]
    return out


def mutated(nb) -> tuple[nbformat.NotebookNode, list[str]]:
    nb = nbformat.from_dict(nb)
    functions = student_functions(nb)
    for i, name in sorted(functions, reverse=True):
        wrap = nbformat.v4.new_code_cell(f"{PERTURB}\n{name} = _perturb_output({name})")
        nb.cells.insert(i + 1, wrap)
    return nb, [name for _, name in functions]


def checked_by(template, name: str) -> str | None:
    """The exercise whose check takes the student's ``name``."""
    for ex, check in template.checks.items():
        if ("name", name) in check.args:
            return ex
    return None


def test_every_notebook_has_student_functions_that_a_check_takes():
    course = grade._course()
    for path in SOLUTIONS:
        names = [n for _, n in student_functions(nbformat.read(path, as_version=4))]
        template = course.templates[path.stem]
        graded = [n for n in names if checked_by(template, n)]
        assert graded, f"{path.name}: no graded function among {names}"


@pytest.mark.slow
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_a_perturbed_answer_fails_its_exercise(solution, tmp_path):
    nb, names = mutated(nbformat.read(solution, as_version=4))
    template = grade._course().templates[solution.stem]
    path = tmp_path / solution.name
    nbformat.write(nb, path)
    result = grade.grade(path)
    assert result.error is None, result.error
    for name in names:
        ex = checked_by(template, name)
        if ex is None:
            continue  # a helper the student writes for a later exercise (that one fails)
        ok, why = result.exercises[ex]
        assert not ok, f"exercise {ex} passes with {name}'s output perturbed"
