"""A submitted notebook read as plain data: its cells, checked by hand, and the exercise tags.

Nothing in the file is trusted or executed here; a malformed file raises :class:`NotGradable`
with the reason the student reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_NOTEBOOK_BYTES = 20 * 2**20
_EXERCISE_TAG = re.compile(r"^(exercise|quiz)-(\d+\.\d+)$")  # quiz-1.3: item 3 of quiz 01


class NotGradable(Exception):
    pass


@dataclass
class Cell:
    type: str
    source: str
    id: str | None = None
    exercise: str | None = None  # only for template check cells
    answer: bool = False  # only for template answer cells


def _text(value, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise NotGradable(f"{where}: source is {type(value).__name__}, not text")


def parse_notebook(data: bytes) -> list[Cell]:
    """The cells of a notebook file, checked by hand: nothing in it is trusted or executed."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotGradable(f"the file is {len(data) / 2**20:.0f} MB; a notebook must be < 20 MB")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotGradable(f"not a notebook (invalid JSON: {str(exc)[:120]})") from None
    if not isinstance(nb, dict):
        raise NotGradable(f"not a notebook (a JSON {type(nb).__name__}, not an object)")
    if "worksheets" in nb or nb.get("nbformat") not in (4, None):
        raise NotGradable(
            f"nbformat {nb.get('nbformat')!r} is not supported (save it with Jupyter 4+)"
        )
    if not isinstance(nb.get("cells"), list):
        raise NotGradable("not a notebook (no list of cells)")
    cells = []
    for i, c in enumerate(nb["cells"]):
        if not isinstance(c, dict):
            raise NotGradable(f"cell {i} is a {type(c).__name__}, not an object")
        kind = c.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            raise NotGradable(f"cell {i} has cell_type {str(kind)[:40]!r}")
        cell_id = c.get("id") if isinstance(c.get("id"), str) else None
        cells.append(Cell(kind, _text(c.get("source", ""), f"cell {i}"), cell_id))
    return cells


def _tags(cell: dict) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def exercise_id(cell) -> str | None:
    """The ``exercise-N.k`` tag of a notebook cell (dict or nbformat node) as ``"N.k"``, or its
    ``quiz-N.k`` tag (item k of lecture N's quiz) as ``"QN.k"``, if any."""
    for tag in _tags(cell):
        m = _EXERCISE_TAG.match(tag)
        if m:
            return ("Q" if m.group(1) == "quiz" else "") + m.group(2)
    return None
