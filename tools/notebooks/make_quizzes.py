"""Render every lecture's quiz (``course_lib/quizzes/NN_topic.toml``) as a notebook the grader grades.

    python -m tools.notebooks.make_quizzes          # (re)write quizzes/NN_topic_quiz.ipynb
    python -m tools.notebooks.make_quizzes --check  # exit 1 if a committed quiz notebook is out of date

One markdown cell per item (the question, the choices, the lecture section that answers it),
then an answer cell holding the exercises' stub line, then a check cell tagged
``quiz-N.k`` (lecture N, item k) that calls ``check_quiz(answer_k, "NN", k)``: the same grader
and sandbox as the exercises grade it (``make grade NB=...``, ``python -m tools.grade DIR --csv``).
The answers are not in the notebook; they are in the quiz file, which only the check reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

from course_lib.quiz import Item, Quiz, load_quizzes
from tools.notebooks.make_exercises import CODE_STUB
from tools.notebooks.notebook_form import sync_folder

ROOT = Path(__file__).resolve().parents[2]
QUIZ_NOTEBOOKS = ROOT / "quizzes"


def _colab_cell(quiz: Quiz) -> str:
    """The Colab cell of the lecture's exercise notebook (the same cell every notebook opens with)."""
    for path in sorted((ROOT / "exercises").glob(f"{quiz.number}_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "code" and '"google.colab" in sys.modules' in src:
                return src
    raise SystemExit(f"no exercise notebook {quiz.number}_*.ipynb with a Colab cell to copy")


def _metadata(quiz: Quiz) -> dict:
    for path in sorted((ROOT / "exercises").glob(f"{quiz.number}_*.ipynb")):
        meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
        meta.pop("course", None)
        return {**meta, "course": {"quiz": quiz.lecture}}
    return {"course": {"quiz": quiz.lecture}}


def item_markdown(quiz: Quiz, item: Item) -> str:
    """An item as the notebook shows it: question, code, choices, and where the answer is."""
    lines = [f"## Item {item.number} · section {item.section} of lecture {quiz.number}", "",
             item.question]  # fmt: skip
    if item.code:
        lines += ["", "```python", item.code, "```"]
    if item.choices:
        lines.append("")
        for c in item.choices:
            if item.kind == "output":
                lines += [f"**({c.letter})**", "", "```text", c.text, "```", ""]
            else:
                lines.append(f"- **({c.letter})** {c.text}")
        how = f'the letter of your choice as text, e.g. `answer_{item.number} = "{item.choices[1].letter}"`'
    else:
        unit = f" ({item.unit})" if item.unit else ""
        how = f"a number{unit}, e.g. `answer_{item.number} = 1.5` (or `1/512`)"
    lines += ["", f"Answer with {how}."]
    return "\n".join(lines).rstrip() + "\n"


def quiz_notebook(quiz: Quiz) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = _metadata(quiz)
    n = 0

    def cell(kind: str, source: str, tags=()):
        nonlocal n
        n += 1
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        c = make(source.rstrip("\n"))
        c.id = f"quiz-{quiz.number}-{n:02d}"
        if tags:
            c.metadata["tags"] = list(tags)
        nb.cells.append(c)

    names = {"choice": "multiple choice", "output": "which-output", "numeric": "numeric"}
    kinds = " and ".join(names[k] for k in sorted({i.kind for i in quiz.items}))
    cell("markdown", (
        f"# {quiz.number} · Quiz: {quiz.title}\n\n"
        f"{len(quiz.items)} questions on lecture {quiz.number} "
        f"([the lecture](../notebooks/{quiz.lecture}.ipynb)), "
        f"{kinds}. "
        "Each names the section of the lecture that answers it. Replace the line "
        "`raise NotImplementedError` in each answer cell by your answer, run it, then run the "
        "check cell below it: it prints a ✅ line when you are right and otherwise says what "
        "your choice gets wrong.\n\n"
        "**This notebook is practice.** Its checks answer at once and as often as you like: the "
        "answers ship with the course library, so the ✅ lines here measure practice, not a "
        "grade. A graded quiz is one your instructor collects and grades with the grader "
        "(`make grade NB=<your copy>` runs the same checks), as INSTRUCTORS.md explains."
    ))  # fmt: skip
    cell("code", _colab_cell(quiz))
    cell("code", "from course_lib.checks.quiz import check_quiz")
    for item in quiz.items:
        cell("markdown", item_markdown(quiz, item))
        what = "a letter" if item.choices else "a number"
        cell("code", f"# Item {item.number}: {what}\n{CODE_STUB}")
        tag = f"quiz-{int(quiz.number)}.{item.number}"
        cell("code", f'check_quiz(answer_{item.number}, "{quiz.number}", {item.number})',
             ("check", tag))  # fmt: skip
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    texts = {quiz.notebook_name: render(quiz_notebook(quiz)) for quiz in load_quizzes()}
    return sync_folder(QUIZ_NOTEBOOKS, texts, check="--check" in argv, make_target="quizzes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
