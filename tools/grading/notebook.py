"""A submitted notebook read as plain data: its cells, checked by hand, and the exercise tags.

Nothing in the file is trusted or executed here; a malformed file raises :class:`NotGradable`
with the reason the student reads.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

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


def _not_a_file(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_ISDIR: "a folder", stat.S_ISFIFO: "a named pipe (FIFO)",
             stat.S_ISCHR: "a device", stat.S_ISBLK: "a device", stat.S_ISSOCK: "a socket",
             stat.S_ISLNK: "a symbolic link"}  # fmt: skip
    return next((what for test, what in kinds.items() if test(mode)), "not a regular file")


def read_submission(path: Path) -> bytes:
    """The bytes of a submitted file: a regular file only, never followed through a symbolic link
    (a link named ``….ipynb`` to a solution, ``/dev/zero`` or a FIFO is refused with the reason,
    not read), and at most :data:`MAX_NOTEBOOK_BYTES` + 1 bytes of it. Folders are walked
    without following links (``Path.rglob``), so what is read lies inside the folder given."""
    try:
        mode = os.lstat(path).st_mode
        if (what := _not_a_file(mode)) is not None:
            target = f" to {os.readlink(path)[:200]}" if stat.S_ISLNK(mode) else ""
            raise NotGradable(
                f"it is {what}{target}, not a file: the grader reads only regular files "
                "(hand in the notebook itself, not a link to it)"
            )
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        fd = os.open(path, flags)  # swapped for a link or a FIFO since: refused below
    except OSError as exc:
        raise NotGradable(f"cannot read the file ({exc.strerror})") from None
    try:
        if (what := _not_a_file(os.fstat(fd).st_mode)) is not None:
            raise NotGradable(f"it is {what}, not a file: the grader reads only regular files")
        chunks, got = [], 0
        while got <= MAX_NOTEBOOK_BYTES:
            chunk = os.read(fd, min(MAX_NOTEBOOK_BYTES + 1 - got, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise NotGradable(f"cannot read the file ({exc.strerror})") from None
    finally:
        os.close(fd)


def parse_notebook(data: bytes) -> list[Cell]:
    """The cells of a notebook file, checked by hand: nothing in it is trusted or executed."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotGradable("the file is larger than 20 MB; a notebook must be < 20 MB")
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
