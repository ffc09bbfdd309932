"""What runs where: the student's notebook with every official cell restored, and one check
step per exercise (computed in the grader, never run in the sandbox).
"""

from __future__ import annotations

from dataclasses import dataclass

from .course import Template
from .notebook import Cell


@dataclass
class Step:
    kind: str  # "run" (code in the sandbox) or "check" (a verdict computed here)
    source: str = ""
    exercise: str | None = None
    student: bool = False  # code written by the student (answer or extra cell)


def plan(cells: list[Cell], template: Template) -> list[Step]:
    """The student's notebook with every official cell restored; one check step per exercise."""
    by_id = {c.id: (i, c) for i, c in enumerate(template.cells) if c.id}
    used: set[int] = set()
    mapped: list[int | None] = []
    for cell in cells:
        hit = by_id.get(cell.id) if cell.id else None
        if hit and hit[0] not in used and hit[1].type == cell.type:
            used.add(hit[0])
            mapped.append(hit[0])
        else:
            mapped.append(None)
    for j, cell in enumerate(cells):  # no id match (nbformat 4.4, new ids): same official text
        if mapped[j] is None:
            for i, t in enumerate(template.cells):
                if i not in used and not t.answer and t.type == cell.type:
                    if t.source.strip() == cell.source.strip():
                        used.add(i)
                        mapped[j] = i
                        break

    def step(i: int | None, cell: Cell) -> Step | None:
        official = None if i is None else template.cells[i]
        if official is not None and official.exercise and official.type == "code":
            return Step("check", exercise=official.exercise)
        if cell.type != "code":
            return None
        if official is not None and not official.answer:
            return Step("run", official.source)
        return Step("run", cell.source, student=True)

    steps: list[tuple[int | None, Step | None]] = [
        (i, step(i, c)) for i, c in zip(mapped, cells, strict=True)
    ]
    for i, t in enumerate(template.cells):  # official cells the student deleted go back in place
        if i in used or t.answer:
            continue
        pos = max((k + 1 for k, (j, _) in enumerate(steps) if j is not None and j < i), default=0)
        steps.insert(pos, (i, step(i, t)))
    out = [s for _, s in steps if s is not None]
    last = max((k for k, s in enumerate(out) if s.kind == "check"), default=-1)
    return out[: last + 1]  # nothing after the last check can change a verdict
