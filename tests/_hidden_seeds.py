"""Every right answer on many hidden seeds: what ``tests/test_hidden_seeds.py`` runs.

The official solutions are read from ``solutions/*.ipynb`` without executing the notebooks: the
set-up cells (before the first exercise) and the answer cells (those holding a ``### BEGIN
SOLUTION`` block) run in one namespace per notebook, in this process; the check cells are read
by the grader's own parser (``tools.grading.course.load_template``), so the check and the names it
is given are the ones the grader calls. The other right answers are the ones the checks' unit
tests already hold (``tests/test_checks_lectureNN.py``): every function given to a passing test
(a test named ``..._pass...``, ``..._accept...`` or ``..._right...``) as ``answer``, ``fn`` or
``first``/``second``, for the check that test calls.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


@dataclass
class Exercise:
    exercise: str  # "5.5"
    check: object  # the official check function
    args: list  # the arguments the notebook passes (the solution's objects)
    answers: dict = field(default_factory=dict)  # name -> another right answer (one function)
    kinds: list = field(default_factory=list)  # per argument: "name" (the student's) or "value"

    @property
    def seeded(self) -> bool:
        p = inspect.signature(self.check).parameters
        return "seed" in p and p["seed"].kind is inspect.Parameter.KEYWORD_ONLY

    def run(self, answer_args: list, seed: int) -> str | None:
        """None if the check passes ``answer_args`` on ``seed``, else its message."""
        from course_lib.checks import ExerciseError

        try:
            with contextlib.redirect_stdout(io.StringIO()):
                self.check(*answer_args, seed=seed)
        except ExerciseError as err:
            return str(err).strip()
        return None


def _code(cell: dict) -> str:
    src = "".join(cell["source"])
    return "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))


@cache
def solution_namespace(path: Path) -> dict:
    """The names the official answers of one solution notebook define (set-up + answer cells)."""
    import matplotlib

    matplotlib.use("Agg")
    nb = json.loads(path.read_text(encoding="utf-8"))
    ns: dict = {"__name__": f"solution_{path.stem}"}
    started = False
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith("## Exercise"):
            started = True
        if cell["cell_type"] != "code" or "check" in cell.get("metadata", {}).get("tags", []):
            continue
        src = _code(cell)
        if started and "### BEGIN SOLUTION" not in src:
            continue  # a demonstration cell: not needed by any check
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(src, str(path), "exec"), ns)
    return ns


RIGHT_TEST = r"pass|accept|right"
WRONG_TEST = r"mistake|wrong|fail"
NOT_A_MISTAKE = (
    r"hidden|lookup|fixed|copied|stub|crash|type"  # wrong only off the notebook's inputs
)


@cache
def _alternatives() -> dict:
    """check function -> {name: another right answer}, from the checks' unit tests."""
    return _collect(RIGHT_TEST, WRONG_TEST)


@cache
def wrong_answers() -> dict:
    """check function -> {name: a wrong answer}, from the checks' unit tests' mistake tables
    (tests named ``..._mistake...``, ``..._wrong...``, ``..._fail...``; not the answers that are
    wrong only on hidden inputs by design: a fixed answer, a look-up of the visible sizes)."""
    return _collect(WRONG_TEST, RIGHT_TEST + "|" + NOT_A_MISTAKE)


def _collect(wanted: str, unwanted: str) -> dict:
    """check -> {label: function} over the parametrized tests whose name matches ``wanted``."""
    found: dict = {}  # tests/ is on the path: pytest puts it there, and so does running a file
    for test_file in sorted((ROOT / "tests").glob("test_checks_lecture[0-9][0-9].py")):
        module = importlib.import_module(test_file.stem)
        for name, test in vars(module).items():
            if not (name.startswith("test_") and callable(test)):
                continue
            if not re.search(wanted, name) or re.search(unwanted, name):
                continue
            for mark in getattr(test, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                names = mark.args[0]
                names = [n.strip() for n in names.split(",")] if isinstance(names, str) else names
                for values in mark.args[1]:
                    row = dict(zip(names, values if len(names) > 1 else [values], strict=True))
                    if "check" in row:
                        checks = [row["check"]]
                    else:
                        called = {n.func.id for n in ast.walk(ast.parse(_body(test)))
                                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                  and n.func.id.startswith("check_")}  # fmt: skip
                        checks = [getattr(module, c) for c in called if hasattr(module, c)]
                    for key in ("answer", "fn", "first", "second", "wrong"):
                        fn = row.get(key)
                        if callable(fn) and len(checks) == 1:
                            label = f"{test_file.stem}:{getattr(fn, '__name__', key)}"
                            if label.endswith("<lambda>"):
                                label += f"#{len(found.get(checks[0], {}))}"
                            if "mistake" in row:
                                label = f"{test_file.stem}:{row['mistake']}"
                            found.setdefault(checks[0], {})[label] = fn
    return found


def _body(test) -> str:
    import textwrap

    return textwrap.dedent(inspect.getsource(test))


@cache
def exercises() -> list[Exercise]:
    """Every checked exercise of every solution notebook, with its other right answers."""
    from tools.grading.course import load_template

    alternatives = _alternatives()
    out = []
    for path in SOLUTIONS:
        template = load_template(path)
        ns = solution_namespace(path)
        for ex, check in template.checks.items():
            args = [ns[v] if kind == "name" else v for kind, v in check.args]
            answers = {}
            if check.args and check.args[0][0] == "name":  # the answer first: swap in others
                answers = dict(alternatives.get(check.function, {}))
            out.append(Exercise(ex, check.function, args, answers, [k for k, _ in check.args]))
    return out
