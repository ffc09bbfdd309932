"""INSTRUCTORS.md covers every lecture: the order-and-timing table has a row per lecture, and
"What the exercises assess" a row per exercise of solutions/ (read from its headings)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LECTURES = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _section(title: str) -> str:
    text = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_every_lecture_has_a_row_in_the_order_and_timing_table():
    rows = set(re.findall(r"^\| (\d\d) \| \[", _section("Lecture order and timing"), re.M))
    numbers = {s[:2] for s in LECTURES if s[:2] != "99"}
    assert numbers <= rows, sorted(numbers - rows)


def test_every_exercise_has_a_row_in_what_the_exercises_assess():
    rows = set(re.findall(r"^\| (\d+\.\d+)\b", _section("What the exercises assess"), re.M))
    exercises = set()
    for path in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            m = re.match(r"## Exercise (\d+\.\d+)", cell.source)
            if cell.cell_type == "markdown" and m:
                exercises.add(m.group(1))
    assert len(exercises) > 60 and exercises <= rows, sorted(exercises - rows)
