"""What the grader reports and what a class shares (issue 42): the class CSV keeps each
failure's hint; a lecture's fixtures are made once per notebook before its cells, its checks'
references once per class."""

from __future__ import annotations

import csv
import importlib
import shutil
from pathlib import Path

import pytest

from course_lib.checks import ExerciseError, lecture14
from tools.grading import cli as grade_cli
from tools.grading import reach, running
from tools.grading.results import REASON_CHARS, Result, csv_reason, write_csv
from tools.grading.verdict import _message

ROOT = Path(__file__).resolve().parents[1]


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


# --- grading speed: what a class shares (fixtures, precomputed references) --------------------


def _fixture_modules():
    course = grade_cli._course()
    return course, {f for t in course.templates.values() for f in t.fixtures}


def test_fixtures_are_given_cached_functions_and_no_exercises_reference():
    """What the grader calls in the student's process before the student's cells (FIXTURES of a
    lecture's checks): a cached course_lib function of the sandbox's library (never a check
    module, whose stub has nothing), and no exercise's reference: its call, cached, would hide
    a student's later call of it from the record of course_lib functions the answer used."""
    course, fixtures = _fixture_modules()
    assert "course_lib.data.chat:load_chat_tokenizer" in fixtures
    references = {
        n for t in course.templates.values() for c in t.checks.values() for n in reach.references(c)
    }
    for spec in fixtures:
        module, name = spec.split(":")
        assert f"{module.replace('.', '/')}.py" in course.library, spec
        assert not module.startswith("course_lib.checks"), spec
        function = getattr(importlib.import_module(module), name)
        assert hasattr(function, "cache_info"), f"{spec} is not cached: warming it does nothing"
        assert f"{module}.{name}" not in references, spec


def test_a_class_precomputes_each_lecture_once_and_reads_nothing_else(tmp_path, monkeypatch):
    course = grade_cli._course()
    calls = []
    template = course.templates["14_assistant"]
    monkeypatch.setattr(template, "precompute", (lambda: calls.append("14"),))
    solution = ROOT / "solutions" / "14_assistant.ipynb"
    paths = [tmp_path / f"{name}.ipynb" for name in ("a", "b", "c")]
    for p in paths[:2]:
        shutil.copy(solution, p)
    paths[2].write_text("not a notebook")
    running.precompute(course, [*paths, ROOT / "exercises" / "01_softmax.ipynb"])
    assert calls == ["14"]


def test_the_14_4_references_are_computed_once_per_process():
    lecture14._count_tally.cache_clear()
    lecture14.precompute()  # seed 0's tally (what the prediction is graded against)
    before = lecture14._count_tally.cache_info()
    assert before.currsize == 1
    lecture14.check_count_replies(_right_count_replies, "6", seed=0)
    after = lecture14._count_tally.cache_info()
    assert (after.misses, after.hits) == (before.misses, before.hits + 2)


def _right_count_replies(word_lists):
    from collections import Counter

    from course_lib import generate_replies, load_assistant, load_chat_tokenizer
    from course_lib.data.instructions import PHRASINGS

    model, _ = load_assistant("tuned")
    prompts = [PHRASINGS["count"][0].format(words=" ".join(words)) for words in word_lists]
    return Counter(generate_replies(model, load_chat_tokenizer(), prompts))


@pytest.mark.slow  # grades two lecture-14 notebooks in the sandbox
def test_fixtures_are_made_before_the_students_cells_only_where_an_answer_is_written():
    right = running.grade(ROOT / "solutions" / "14_assistant.ipynb", hidden_seed=11)
    assert right.all_passed, right.exercises
    assert list(right.stages)[:2] == ["start-up", "fixtures"]  # before any cell ran
    untouched = running.grade(ROOT / "exercises" / "14_assistant.ipynb", hidden_seed=11)
    assert "fixtures" not in untouched.stages and not any(
        ok for ok, _ in untouched.exercises.values()
    )
