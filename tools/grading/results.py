"""A notebook's result, and how results are reported: the summary a student reads and the
class CSV an instructor gets (one row per notebook).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Result:
    notebook: str
    lecture: str | None
    exercises: dict[str, tuple[bool, str]] = field(default_factory=dict)  # id -> (ok, reason)
    error: str | None = None  # the notebook could not be graded at all
    uses_course_lib: list[str] = field(default_factory=list)  # exercises whose answer imports it
    notes: list[str] = field(default_factory=list)
    warning: str | None = None  # graded, but e.g. the file name names another lecture
    seconds: float = 0.0

    @property
    def all_passed(self) -> bool:
        return (
            self.error is None
            and bool(self.exercises)
            and all(ok for ok, _ in self.exercises.values())
        )


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
    print(f"\n{r.notebook}  ({r.lecture or '?'})")
    if r.error:
        print(f"  ❌ {r.error}")
        return
    if r.warning:
        print(f"  ⚠️  {r.warning}")
    for ex, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0])):
        print(f"  {'✅' if ok else '❌'} {label(ex).capitalize()}" + ("" if ok else ":"))
        if not ok:
            print("     " + why.replace("\n", "\n     "))
    if r.uses_course_lib:
        print(f"  ⚠️  imports course_lib in the answer to {', '.join(r.uses_course_lib)}")
    passed = sum(ok for ok, _ in r.exercises.values())
    what = "items" if all(e.startswith("Q") for e in r.exercises) else "exercises"
    print(f"  {passed}/{len(r.exercises)} {what} passed")


def write_csv(results: list[Result], out: Path) -> None:
    ids = sorted({e for r in results for e in r.exercises}, key=_order)
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["notebook", "lecture", *[label(e) for e in ids], "passed", "total",
                    "error", "warning", "uses course_lib", "reasons", "seconds"])  # fmt: skip
        for r in results:
            cells = [
                ("" if e not in r.exercises else "pass" if r.exercises[e][0] else "fail")
                for e in ids
            ]
            reasons = "; ".join(
                f"{e}: {' '.join(why.split())[:300]}"
                for e, (ok, why) in sorted(r.exercises.items(), key=lambda kv: _order(kv[0]))
                if not ok
            )
            w.writerow([r.notebook, r.lecture or "", *cells,
                        sum(ok for ok, _ in r.exercises.values()), len(r.exercises),
                        r.error or "", r.warning or "", " ".join(r.uses_course_lib), reasons,
                        r.seconds])  # fmt: skip
