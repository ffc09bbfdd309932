"""What the grader reports (issue 42): the class CSV keeps each failure's hint."""

from __future__ import annotations

import csv

import pytest

from course_lib.checks import ExerciseError
from tools.grading.results import REASON_CHARS, Result, csv_reason, write_csv
from tools.grading.verdict import _message


def _reason_of(message: str, hint: str, seed: int = 0) -> str:
    """The reason the grader keeps for a check that raised this (as verdict.run_check does)."""
    hidden = f" (on the grader's hidden inputs, seed={seed})" if seed else ""
    return _message(ExerciseError("14.2", message, hint)) + hidden


HINT = "the scaling is alpha / r (alpha divided by the rank), not r / alpha."


def test_a_short_reason_is_kept_whole_on_one_line():
    why = _reason_of("y:\n  expected [1. 2.]\n  got      [1. 3.]", HINT)
    assert csv_reason(why) == f"y: expected [1. 2.] got [1. 3.] Hint: {HINT}"


@pytest.mark.parametrize("seed", [0, 1804289383])
def test_a_long_reason_keeps_its_first_line_and_its_whole_hint(seed):
    rows = "\n".join(f"  [{', '.join(f'{i * j:.6f}' for j in range(8))}]" for i in range(30))
    message = f"lora_forward(x, W, b, A, B, alpha=16.0), r = 4:\n  expected\n{rows}\n  got\n{rows}"
    why = _reason_of(message, HINT, seed)
    assert len(" ".join(why.split())) > 2 * REASON_CHARS
    kept = csv_reason(why)
    assert len(kept) <= REASON_CHARS
    assert kept.startswith("lora_forward(x, W, b, A, B, alpha=16.0), r = 4: … Hint: ")
    assert kept.endswith(HINT + (f" (on the grader's hidden inputs, seed={seed})" if seed else ""))


def test_a_long_first_line_and_a_long_hint_are_both_cut_with_an_ellipsis():
    why = _reason_of("x" * 2000 + "\nmore", "y" * 2000)
    kept = csv_reason(why)
    assert len(kept) == REASON_CHARS and kept.count("…") == 3  # first line … hint, both cut
    assert kept.startswith("xxx") and "… Hint: yyy" in kept and kept.endswith("y…")
    no_hint = csv_reason("z" * 2000)
    assert len(no_hint) == REASON_CHARS and no_hint.endswith("z…")


def test_the_csv_holds_each_failures_hint(tmp_path):
    rows = "\n".join(f"  {'0.123456 ' * 10}" for _ in range(20))
    why = _reason_of(f"y:\n  expected\n{rows}\n  got\n{rows}", HINT, 7)
    result = Result("ada.ipynb", "14_assistant", {"14.1": (True, ""), "14.2": (False, why)})
    write_csv([result], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["reasons"].startswith("14.2: y: … Hint: ")
    assert row["reasons"].endswith(f"{HINT} (on the grader's hidden inputs, seed=7)")
