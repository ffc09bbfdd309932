"""`make start NB=...` (tools/dev/start.py): a lecture by number or name, never the wrong one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.dev.start import choose, exercises, wants_quiz

ROOT = Path(__file__).resolve().parents[1]
STEMS = exercises()


@pytest.mark.parametrize("wanted", ["1", "01", "01_softmax", "01_softmax.ipynb", "exercises/01_softmax.ipynb", "01_soft"])  # fmt: skip
def test_lecture_1_by_number_or_name(wanted):
    assert choose(wanted, STEMS) == "01_softmax"


def test_11_is_lecture_11_not_lecture_1():
    assert choose("11", STEMS) == "11_gpt" and choose("10", STEMS).startswith("10_")


@pytest.mark.parametrize("wanted", ["0", "99", "14x", "softmax", "x;y"])
def test_unknown_is_refused_with_the_list(wanted):
    with pytest.raises(SystemExit, match="no lecture") as info:
        choose(wanted, STEMS)
    assert all(f"make start NB={s[:2]}" in str(info.value) for s in STEMS)


def test_ambiguous_is_refused_with_the_candidates():
    stems = ["01_softmax", "02_self_attention", "02_self_attention_extra"]
    with pytest.raises(SystemExit, match="several lectures: 02_self_attention, 02_self"):
        choose("02", stems)
    assert choose("02_self_attention", stems) == "02_self_attention"  # exact name wins


def test_make_start_copies_lecture_11_for_nb_11(tmp_path):
    clone = tmp_path / "course"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    start = ("tools", "dev", "start.py")
    (clone.joinpath(*start)).write_bytes(ROOT.joinpath(*start).read_bytes())
    out = subprocess.run([sys.executable, "tools/dev/start.py", "11"], cwd=clone,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    copy = clone / "my-work" / "11_gpt_exercises.ipynb"
    assert copy.read_bytes() == (ROOT / "exercises" / "11_gpt.ipynb").read_bytes()
    again = subprocess.run([sys.executable, "tools/dev/start.py", "11"], cwd=clone,
                           capture_output=True, text=True)  # fmt: skip
    assert "already exists" in again.stdout


@pytest.mark.parametrize("wanted", ["q14", "Q14", "q 14", "14_assistant_quiz", "quizzes/14_assistant_quiz.ipynb"])  # fmt: skip
def test_a_quiz_by_q_and_number_or_by_name(wanted):
    assert wants_quiz(wanted)
    assert choose(wanted, exercises("quizzes")) == "14_assistant_quiz"


def test_a_lecture_number_is_not_a_quiz_and_an_unknown_quiz_lists_the_quizzes():
    assert not wants_quiz("14") and not wants_quiz("14_assistant")
    with pytest.raises(SystemExit, match="no lecture") as info:
        choose("q98", exercises("quizzes"))
    assert "make start NB=q01   (01_softmax_quiz)" in str(info.value)


def test_make_start_copies_a_quiz_and_a_refusal_has_no_make_error_line(tmp_path):
    clone = tmp_path / "course"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    for rel in (("tools", "dev", "start.py"), ("Makefile",)):
        clone.joinpath(*rel).write_bytes(ROOT.joinpath(*rel).read_bytes())
    out = subprocess.run(["make", "-s", "start"], cwd=clone, capture_output=True, text=True,
                         env={**__import__("os").environ, "NB": "q14"})  # fmt: skip
    assert "my-work/14_assistant_quiz.ipynb" in out.stdout, out.stderr
    copy = clone / "my-work" / "14_assistant_quiz.ipynb"
    assert copy.read_bytes() == (ROOT / "quizzes" / "14_assistant_quiz.ipynb").read_bytes()
    bad = subprocess.run(["make", "-s", "start"], cwd=clone, capture_output=True, text=True,
                         env={**__import__("os").environ, "NB": "q98"})  # fmt: skip
    assert "matches no lecture" in bad.stderr and "Error" not in bad.stderr
