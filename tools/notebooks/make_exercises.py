"""Generate exercises/ from solutions/: the solutions are the single source of every exercise.

    python -m tools.notebooks.make_exercises          # (re)write exercises/*.ipynb
    python -m tools.notebooks.make_exercises --check  # exit 1 if a committed exercise is out of date

In a solution notebook, the answer to an exercise stands between two marker lines::

    def stable_softmax(x):
        ### BEGIN SOLUTION
        z = x - x.max(axis=-1, keepdims=True)
        ...
        ### END SOLUTION

The generated exercise keeps everything else and replaces each marked block by one line,
``raise NotImplementedError(...)`` at the block's indentation (in a markdown cell, by an
"answer here" prompt). Outputs and execution counts are cleared: the student runs it. A cell
tagged ``solution-only`` (e.g. a summary sentence that states a think exercise's answer) is left
out of the exercise altogether.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the grader imports the stubs only (nbformat takes ~1.7 s)
    import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = 'raise NotImplementedError("Exercise: replace this line with your answer")'
MARKDOWN_STUB = "_Write your answer here._"
SOLUTION_ONLY = "solution-only"  # tag of a cell that the exercise leaves out
_BLOCK = re.compile(
    rf"^(?P<indent>[ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*(?:\n|$)",
    re.DOTALL | re.MULTILINE,
)


def strip_solutions(source: str, cell_type: str) -> str:
    """Replace every marked answer block in ``source`` by the stub for ``cell_type``."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(f"unbalanced solution markers in cell:\n{source}")

    def stub(m: re.Match) -> str:
        text = CODE_STUB if cell_type == "code" else MARKDOWN_STUB
        return f"{m.group('indent')}{text}\n"

    return _BLOCK.sub(stub, source).rstrip("\n")


def make_exercise(solution: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Return the exercise notebook generated from one solution notebook."""
    nb = copy.deepcopy(solution)
    nb.cells = [c for c in nb.cells if SOLUTION_ONLY not in c.get("metadata", {}).get("tags", [])]
    for cell in nb.cells:
        cell.source = strip_solutions(cell.source, cell.cell_type)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata["course"] = {"exercise": name}
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    """The exercise file's text, in the form JupyterLab saves on opening it (tools/notebooks/nbbuild.py)."""
    try:
        from tools.notebooks.notebook_form import writes
    except (
        ImportError
    ):  # run as a script (python tools/notebooks/make_exercises.py): tools/ is on sys.path
        from notebook_form import writes

    return writes(nb)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    import nbformat

    try:
        from tools.notebooks.notebook_form import sync_folder
    except ImportError:  # run as a script
        from notebook_form import sync_folder

    texts = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        solution = nbformat.read(path, as_version=4)
        if not any(BEGIN in c.source for c in solution.cells):
            raise SystemExit(f"{path.name}: no '{BEGIN}' marker, so no exercise to generate")
        texts[path.name] = render(make_exercise(solution, path.stem))
    return sync_folder(EXERCISES, texts, check="--check" in argv, make_target="exercises")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
