"""Concept quizzes: one small TOML file per lecture (``course_lib/quizzes/NN_topic.toml``, shipped
with the library so that the check works on Colab too), read into typed,
validated items.

A quiz file names its lecture and holds ``[[items]]`` of three kinds:

* ``choice`` — a question and 3-5 ``[[items.choices]]``; ``right`` names the right one by its
  letter (``"a"``, ``"b"``, ...). Every other choice carries ``why``: what is wrong with it, naming
  the misconception it stands for (and optionally ``see = "lecture01:HINT_AXIS"``, a hint of an
  exercise check's mistake table that says the same, appended to it).
* ``output`` — "which of these outputs": like ``choice``, with ``code`` shown above the choices,
  which are outputs (printed as code).
* ``numeric`` — a number: ``answer`` and ``tolerance`` (absolute), and ``[[items.mistakes]]``,
  the values the usual mistakes give (each with ``why``), all outside the tolerance.

Every item has ``section``: the number of the lecture's ``## N.`` section that answers it, and
``explain``: why the right answer is right. The lecture's notebook renders the quiz
(``tools/notebooks/make_quizzes.py``), the grader grades it (:func:`course_lib.checks.quiz.check_quiz`),
the site and the decks show it (``tools/site``).
"""

from __future__ import annotations

import importlib
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Choice", "Mistake", "Item", "Quiz", "QuizFormatError", "QUIZ_DIR", "load_quiz",
           "load_quizzes", "quiz_path", "judge"]  # fmt: skip

QUIZ_DIR = Path(__file__).resolve().parent / "quizzes"
LETTERS = "abcde"
KINDS = ("choice", "output", "numeric")


class QuizFormatError(ValueError):
    """A quiz file does not say what it must (the message names the file, item and field)."""


@dataclass(frozen=True)
class Choice:
    letter: str
    text: str
    why: str  # for a wrong choice: the misconception; for the right one: "" (see Item.explain)
    right: bool


@dataclass(frozen=True)
class Mistake:
    value: float
    why: str


@dataclass(frozen=True)
class Item:
    number: int  # 1, 2, ... in file order
    kind: str
    section: int
    question: str
    explain: str
    code: str = ""  # "output" items: the code whose output is asked for
    choices: tuple[Choice, ...] = ()
    answer: float | None = None  # numeric items
    tolerance: float | None = None
    mistakes: tuple[Mistake, ...] = ()
    unit: str = ""  # numeric items: what the number counts (shown next to the answer cell)

    @property
    def right(self) -> Choice | None:
        return next((c for c in self.choices if c.right), None)


@dataclass(frozen=True)
class Quiz:
    lecture: str  # the lecture notebook's stem, e.g. "01_softmax"
    title: str
    items: tuple[Item, ...]
    source: Path

    @property
    def number(self) -> str:
        return self.lecture[:2]

    @property
    def notebook_name(self) -> str:
        return f"{self.lecture}_quiz.ipynb"


def _hint(ref: str, where: str) -> str:
    """The text of a check's hint, ``"lecture01:HINT_AXIS"`` -> ``course_lib.checks.lecture01``."""
    module, _, name = ref.partition(":")
    if not re.fullmatch(r"lecture\d\d", module) or not name.isidentifier():
        raise QuizFormatError(f"{where}: see must look like 'lecture01:HINT_NAME', got {ref!r}")
    try:
        value = getattr(importlib.import_module(f"course_lib.checks.{module}"), name)
    except (ImportError, AttributeError):
        raise QuizFormatError(f"{where}: see names {ref!r}, which does not exist") from None
    if not isinstance(value, str):
        raise QuizFormatError(f"{where}: see names {ref!r}, which is not a hint (a str)")
    return value


def _text(table: dict, key: str, where: str, *, required: bool = True) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise QuizFormatError(f"{where}: {key} must be text, got {type(value).__name__}")
    value = value.strip()
    if required and not value:
        raise QuizFormatError(f"{where}: {key} is missing or empty")
    return value


def _number(table: dict, key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise QuizFormatError(f"{where}: {key} must be a finite number, got {value!r}")
    return float(value)


_ITEM_KEYS = {"kind", "section", "question", "explain", "code", "choices", "right", "answer",
              "tolerance", "mistakes", "unit"}  # fmt: skip


def _item(number: int, table: dict, where: str) -> Item:
    where = f"{where}, item {number}"
    unknown = set(table) - _ITEM_KEYS
    if unknown:
        raise QuizFormatError(f"{where}: unknown keys {sorted(unknown)}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise QuizFormatError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    section = table.get("section")
    if isinstance(section, bool) or not isinstance(section, int) or section < 1:
        raise QuizFormatError(f"{where}: section must be a section number >= 1, got {section!r}")
    common = {
        "number": number,
        "kind": kind,
        "section": section,
        "question": _text(table, "question", where),
        "explain": _text(table, "explain", where),
    }
    if kind == "numeric":
        if "choices" in table or "right" in table or "code" in table:
            raise QuizFormatError(f"{where}: a numeric item has answer/tolerance, not choices")
        answer, tol = _number(table, "answer", where), _number(table, "tolerance", where)
        if tol < 0:
            raise QuizFormatError(f"{where}: tolerance must be >= 0, got {tol}")
        mistakes = []
        for j, m in enumerate(table.get("mistakes", []), 1):
            mw = f"{where}, mistake {j}"
            value = _number(m, "value", mw)
            if abs(value - answer) <= tol:
                raise QuizFormatError(f"{mw}: {value} is within the tolerance of the answer")
            mistakes.append(Mistake(value, _text(m, "why", mw)))
        if not mistakes:
            raise QuizFormatError(f"{where}: a numeric item needs at least one [[items.mistakes]]")
        return Item(**common, answer=answer, tolerance=tol, mistakes=tuple(mistakes),
                    unit=_text(table, "unit", where, required=False))  # fmt: skip
    raw = table.get("choices", [])
    if not isinstance(raw, list) or not 3 <= len(raw) <= len(LETTERS):
        raise QuizFormatError(f"{where}: needs 3 to {len(LETTERS)} [[items.choices]]")
    right = table.get("right")
    letters = LETTERS[: len(raw)]
    if not isinstance(right, str) or len(right) != 1 or right not in letters:
        raise QuizFormatError(f"{where}: right must be one letter of {letters!r}, got {right!r}")
    choices = []
    for letter, c in zip(letters, raw, strict=True):
        cw = f"{where}, choice {letter}"
        if not isinstance(c, dict) or set(c) - {"text", "why", "see"}:
            raise QuizFormatError(f"{cw}: a choice has text, why and (optionally) see")
        why = _text(c, "why", cw, required=letter != right)
        if letter == right and why:
            raise QuizFormatError(f"{cw}: the right choice is explained by the item's explain")
        if c.get("see"):
            why += " " + _hint(c["see"], cw)
        choices.append(Choice(letter, _text(c, "text", cw), why, letter == right))
    texts = [c.text for c in choices]
    if len(set(texts)) != len(texts):
        raise QuizFormatError(f"{where}: two choices have the same text")
    code = _text(table, "code", where, required=kind == "output")
    if kind == "choice" and code:
        raise QuizFormatError(f"{where}: code belongs to an 'output' item")
    return Item(**common, code=code, choices=tuple(choices))


def quiz_path(lecture: str, folder: Path = QUIZ_DIR) -> Path:
    """The quiz file of a lecture, given as ``"01"`` or ``"01_softmax"``."""
    if not isinstance(lecture, str) or not re.fullmatch(r"\d\d(_\w+)?", lecture):
        raise ValueError(f"lecture must look like '01' or '01_softmax', got {lecture!r}")
    if not isinstance(folder, str | Path) or not Path(folder).is_dir():
        raise NotADirectoryError(f"folder must be a folder of quiz files, got {folder!r:.60}")
    folder = Path(folder)
    found = sorted(folder.glob(f"{lecture[:2]}_*.toml"))
    if len(found) != 1:
        raise FileNotFoundError(
            f"lecture {lecture!r}: expected one quiz file {folder}/{lecture[:2]}_*.toml, "
            f"found {len(found)}"
        )
    if len(lecture) > 2 and found[0].stem != lecture:
        raise FileNotFoundError(
            f"lecture {lecture!r}: no quiz {lecture}.toml; lecture {lecture[:2]}'s quiz is "
            f"{found[0].stem!r} (or give the number alone, {lecture[:2]!r})"
        )
    return found[0]


def load_quiz(path: Path | str) -> Quiz:
    """Read and validate one quiz file (or the quiz of lecture ``"01"``)."""
    if not isinstance(path, str | Path):
        raise TypeError(
            f"path must be a quiz file or a lecture such as '01', got {type(path).__name__}"
        )
    if isinstance(path, str) and not path.endswith(".toml"):
        if not re.fullmatch(r"\d\d(_\w+)?", path):
            raise ValueError(
                f"path must be a quiz file (.toml) or a lecture such as '01' or '01_softmax', "
                f"got {path!r}"
            )
        path = quiz_path(path)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no quiz file {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise QuizFormatError(f"{path.name}: not valid TOML ({exc})") from None
    where = path.name
    lecture = _text(data, "lecture", where)
    if not re.fullmatch(r"\d\d_\w+", lecture) or path.stem != lecture:
        raise QuizFormatError(f"{where}: lecture must be the file's stem, got {lecture!r}")
    items = data.get("items", [])
    if not isinstance(items, list) or not items:
        raise QuizFormatError(f"{where}: no [[items]]")
    return Quiz(
        lecture,
        _text(data, "title", where),
        tuple(_item(i, t, where) for i, t in enumerate(items, 1)),
        path,
    )


def load_quizzes(folder: Path = QUIZ_DIR) -> list[Quiz]:
    """Every quiz in ``folder``, in lecture order."""
    if not isinstance(folder, str | Path) or not Path(folder).is_dir():
        raise NotADirectoryError(f"folder must be a folder of quiz files, got {folder!r}")
    folder = Path(folder)
    return [load_quiz(p) for p in sorted(folder.glob("[0-9][0-9]_*.toml"))]


_LETTER = re.compile(r"[\s(\[{'\"*]*([a-eA-E])[\s)\]}.:,'\"*]*")  # b, (b), b., b), [b], **b**


def _letter(answer) -> str | None:
    """The letter a choice answer names, written any usual way, or None."""
    if not isinstance(answer, str):
        return None
    m = _LETTER.fullmatch(answer)
    return m.group(1).lower() if m else None


def _as_number(answer) -> float | None:
    """A numeric answer as a float: an int, a float, a Fraction or Decimal, a numpy scalar or 0-d
    array, or a number written as text ("0.198", "1/512", "12 %"); None if it is none of these."""
    import numbers
    from decimal import Decimal
    from fractions import Fraction

    if isinstance(answer, bool):
        return None
    if isinstance(answer, numbers.Real | Decimal):
        return float(answer)
    if isinstance(answer, str):
        text = answer.strip().rstrip("%").strip().replace(",", "").replace("_", "")
        try:
            return float(Fraction(text))
        except (ValueError, ZeroDivisionError):
            return None
    try:
        import numpy as np  # a numpy scalar or 0-d array is a number too

        if isinstance(answer, np.generic | np.ndarray) and np.ndim(answer) == 0:
            value = answer.item()
            return (
                None
                if isinstance(value, bool) or not isinstance(value, int | float)
                else float(value)
            )
    except ImportError:
        pass
    return None


_NUMBER = re.compile(
    r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?![\d.])|(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
)


def _given_numbers(text: str) -> list[float]:
    """The numbers a question states (``95.6``, ``2,048``, ``1e-5``; not the 2 of ``W_2``)."""
    return [float(m.replace(",", "")) for m in _NUMBER.findall(text)]


def _close(value: float, target: float, tolerance: float) -> bool:
    return math.isfinite(value) and abs(value - target) <= tolerance


def judge(item: Item, answer) -> tuple[bool, str]:
    """Is ``answer`` right for ``item``? ``(True, "")`` or ``(False, what is wrong and why)``.

    A choice is a letter in any usual spelling (``"b"``, ``"B"``, ``"(b)"``, ``"b."``, ``"b)"``);
    a numeric answer a number: an int, a float, a Fraction, a Decimal, a numpy scalar, or the
    number written as text (``"0.198"``, ``"1/512"``). A number right but on the other scale
    (a fraction where the item asks for percent, or the reverse) is told so.
    """
    if not isinstance(item, Item):
        raise TypeError(f"item must be a quiz Item, got {type(item).__name__}")
    if item.kind == "numeric":
        value = _as_number(answer)
        if value is None:
            return False, (
                f"expected a number, got {type(answer).__name__} {answer!r:.60}.\n"
                "Hint: write the number itself, e.g. answer = 0.25."
            )
        if _close(value, item.answer, item.tolerance):
            return True, ""
        for m in item.mistakes:
            if _close(value, m.value, max(item.tolerance, 1e-12)):
                return (
                    False,
                    f"you gave {value:g}. {m.why}\n(Section {item.section} of the lecture.)",
                )
        percent = item.unit in ("percent", "%")
        for factor, said, applies in (
            (100, "a fraction where the answer is in percent: multiply by 100", percent),
            (0.01, "a percentage where the answer is a fraction between 0 and 1: divide by 100",
             not percent and 0 < abs(item.answer) <= 1),
        ):  # fmt: skip
            if applies and _close(value * factor, item.answer, item.tolerance):
                return False, f"you gave {value:g}: the right number on the wrong scale, {said}."
        if any(_close(value, given, item.tolerance) for given in _given_numbers(item.question)):
            return False, (
                f"you gave {value:g}: that number is given in the question; what it asks for "
                "is another number.\n"
                f"Hint: section {item.section} of the lecture works it out."
            )
        return False, (
            f"you gave {value:g}, which is not it (nor a mistake we know).\n"
            f"Hint: section {item.section} of the lecture works it out."
        )
    letters = [c.letter for c in item.choices]
    letter = _letter(answer)
    if letter not in letters:
        return False, (
            f"expected one letter of {', '.join(letters)}, got {type(answer).__name__} "
            f'{answer!r:.60}.\nHint: write the letter as text, e.g. answer = "b".'
        )
    chosen = item.choices[letters.index(letter)]
    if chosen.right:
        return True, ""
    return False, (
        f"you chose ({chosen.letter}) {chosen.text}\nWhy not: {chosen.why}\n"
        f"(Section {item.section} of the lecture.)"
    )
