"""A notebook's result, and how results are reported: the summary a student reads and the
class CSV an instructor gets (one row per notebook).
"""

from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Result:
    notebook: str
    lecture: str | None
    exercises: dict[str, tuple[bool, str]] = field(default_factory=dict)  # id -> (ok, reason)
    error: str | None = None  # the notebook could not be graded at all
    uses_course_lib: list[str] = field(default_factory=list)  # exercises flagged (reach.py)
    course_lib: dict[str, list[str]] = field(default_factory=dict)  # exercise -> why flagged
    notes: list[str] = field(default_factory=list)
    warning: str | None = None  # graded, but e.g. the file name names another lecture
    seconds: float = 0.0
    hidden_seed: int | None = None  # the seed of the hidden inputs: `--hidden-seed` reproduces it
    stages: dict[str, float] = field(default_factory=dict)  # wall seconds: start-up, imports, ...

    @property
    def all_passed(self) -> bool:
        return (
            self.error is None
            and bool(self.exercises)
            and all(ok for ok, _ in self.exercises.values())
        )


# Characters that redraw, reorder or split a terminal line, a CSV row or a log line: controls
# (Cc: C0, C1, DEL), format characters (Cf: the bidirectional overrides and isolates, U+061C,
# zero-width characters, tag characters), the line and paragraph separators (Zl U+2028, Zp
# U+2029: ``str.splitlines`` splits there) and lone surrogates (Cs: they cannot be printed).
ESCAPED = ("Cc", "Cf", "Zl", "Zp", "Cs")


def clean(text: object, keep_newlines: bool = False) -> str:
    """``text`` with every character of :data:`ESCAPED` shown as an escape (``\\r``,
    ``\\x1b``, ``\\u202e``, ``\\u2028``, ``\\U000e0041``): whatever a notebook puts in a
    message or a file name cannot rewrite the instructor's terminal, CSV or log. Newlines stay
    only where the caller lays lines out itself (``keep_newlines``)."""
    out = []
    for ch in str(text):
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif unicodedata.category(ch) in ESCAPED:
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _order(ex: str) -> list[int]:
    """Exercises in lecture order, then quiz items (ids ``QN.k``)."""
    return [int(ex.startswith("Q")), *(int(x) for x in ex.removeprefix("Q").split("."))]


def label(ex: str) -> str:
    """``"1.2"`` -> ``"exercise 1.2"``, ``"Q1.2"`` -> ``"quiz 1 item 2"``."""
    if ex.startswith("Q"):
        lecture, _, item = ex[1:].partition(".")
        return f"quiz {lecture} item {item}"
    return f"exercise {ex}"


def _result_from(data: dict) -> Result:
    data["exercises"] = {k: tuple(v) for k, v in data["exercises"].items()}
    return Result(**data)


def print_summary(r: Result) -> None:
    print(f"\n{clean(r.notebook)}  ({clean(r.lecture or '?')})")
    if r.error:
        print(f"  ❌ {clean(r.error)}")
        return
    if r.warning:
        print(f"  ⚠️  {clean(r.warning)}")
    for ex, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0])):
        print(f"  {'✅' if ok else '❌'} {label(ex).capitalize()}" + ("" if ok else ":"))
        if not ok:
            print("     " + clean(why, keep_newlines=True).replace("\n", "\n     "))
    for ex in r.uses_course_lib:
        why = "; ".join(r.course_lib.get(ex, []))
        print(f"  ⚠️  {label(ex).capitalize()} uses the course's reference: {clean(why)}")
    passed = sum(ok for ok, _ in r.exercises.values())
    what = "items" if all(e.startswith("Q") for e in r.exercises) else "exercises"
    print(f"  {passed}/{len(r.exercises)} {what} passed")
    if r.hidden_seed is not None and passed < len(r.exercises):
        print(
            f"  (hidden inputs: seed {r.hidden_seed}; `--hidden-seed {r.hidden_seed}` grades "
            "on the same ones again)"
        )


REASON_CHARS = 600  # one exercise's reason in the CSV, at most (a notebook's text is in it)


def csv_reason(why: str, limit: int = REASON_CHARS) -> str:
    """One exercise's reason on one CSV line: whole when it fits in ``limit`` characters;
    otherwise the message's first line and its hint (which comes last: what the student is
    told to do), each cut with "…" where it had to be."""
    whole = _one_line(why)
    if len(whole) <= limit:
        return whole
    head, found, hint = why.rpartition("\nHint:")
    if not found:
        return _cut(whole, limit)
    tail = _cut(_one_line("Hint:" + hint), limit // 2)
    first = _one_line(head.split("\n", 1)[0])
    return f"{_cut(first, limit - len(tail) - 3)} … {tail}"


def _one_line(text: str) -> str:
    return clean(" ".join(text.split()))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_csv(results: list[Result], out: Path) -> None:
    ids = sorted({e for r in results for e in r.exercises}, key=_order)
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["notebook", "lecture", *[label(e) for e in ids], "passed", "total",
                    "error", "warning", "uses course_lib", "course_lib evidence", "reasons",
                    "seconds", "hidden seed"])  # fmt: skip
        for r in results:
            cells = [
                ("" if e not in r.exercises else "pass" if r.exercises[e][0] else "fail")
                for e in ids
            ]
            reasons = "; ".join(
                f"{e}: {csv_reason(why)}"
                for e, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0]))
                if not ok
            )
            w.writerow([clean(r.notebook), clean(r.lecture or ""), *cells,
                        sum(ok for ok, _ in r.exercises.values()), len(r.exercises),
                        clean(" ".join((r.error or "").split())),
                        clean(" ".join((r.warning or "").split())), " ".join(r.uses_course_lib),
                        clean("; ".join(f"{e}: {', '.join(r.course_lib.get(e, []))}"
                                        for e in r.uses_course_lib))[:1000],
                        reasons, r.seconds,
                        "" if r.hidden_seed is None else r.hidden_seed])  # fmt: skip
