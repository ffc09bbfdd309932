"""The concept quizzes (course_lib/quizzes/*.toml, rendered to quizzes/*.ipynb): well formed,
tied to the lectures, graded right by the check and by the grader, and not copied from the
lectures' summaries.
"""

from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from course_lib.checks.quiz import QuizError, check_quiz
from course_lib.quiz import QUIZ_DIR, QuizFormatError, judge, load_quiz, load_quizzes
from tools.notebooks import make_quizzes

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = load_quizzes()
IDS = [q.lecture for q in QUIZZES]


def _lecture_text(quiz) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{quiz.lecture}.ipynb").read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _shingles(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


REQUIRED = range(1, 14)  # lectures 01-13 must have a quiz


def test_lectures_have_a_quiz_of_at_least_8_items():
    numbers = {q.number: len(q.items) for q in QUIZZES}
    for n in REQUIRED:
        assert numbers.get(f"{n:02d}", 0) >= 8, f"lecture {n:02d}: {numbers.get(f'{n:02d}')} items"
    for q in QUIZZES:  # any other quiz (lecture 14) too
        assert len(q.items) >= 8, q.lecture
        assert (ROOT / "notebooks" / f"{q.lecture}.ipynb").exists(), f"{q.lecture}: no lecture"


@pytest.mark.parametrize("quiz", QUIZZES, ids=IDS)
def test_items_are_well_formed(quiz):
    kinds = {i.kind for i in quiz.items}
    assert "numeric" in kinds and kinds & {"choice", "output"}, f"{quiz.lecture}: kinds {kinds}"
    for item in quiz.items:
        if item.choices:
            assert sum(c.right for c in item.choices) == 1, item.number  # exactly one right
            for c in item.choices:
                assert c.right or len(c.why) > 20, f"item {item.number} ({c.letter}): no why"
        else:
            assert item.tolerance is not None and item.mistakes
            for m in item.mistakes:
                assert abs(m.value - item.answer) > item.tolerance


@pytest.mark.parametrize("quiz", QUIZZES, ids=IDS)
def test_every_section_reference_exists_in_the_lecture(quiz):
    text = _lecture_text(quiz)
    sections = {int(n) for n in re.findall(r"^##\s+(\d+)\.\s", text, re.M)}
    for item in quiz.items:
        assert item.section in sections, (
            f"{quiz.lecture} item {item.number} cites section {item.section}; "
            f"the lecture has {sorted(sections)}"
        )


@pytest.mark.parametrize("quiz", QUIZZES, ids=IDS)
def test_right_answers_pass_and_every_wrong_one_fails_with_its_explanation(quiz, capsys):
    for item in quiz.items:
        if item.choices:
            right = item.right
            spellings = (right.letter, right.letter.upper(), f" {right.letter} ",
                         f"({right.letter})", f"{right.letter}.", f"{right.letter})",
                         f"({right.letter.upper()})", f"**{right.letter}**", f"[{right.letter}]")  # fmt: skip
            for answer in spellings:  # the choices are shown as **(a)**: every usual spelling
                assert judge(item, answer) == (True, ""), answer
            for c in item.choices:
                if not c.right:
                    ok, why = judge(item, c.letter)
                    assert not ok and c.why in why and c.text in why
            bad = [None, 1, "z", "ab", "", "(ab)", "a b"]
        else:  # written differently: an int, a float32, a numpy scalar, text, a fraction
            written = (item.answer, np.float32(item.answer), np.float64(item.answer),
                       str(item.answer), f" {item.answer} ", Fraction(str(item.answer)),
                       Decimal(str(item.answer)))  # fmt: skip
            for answer in written:
                assert judge(item, answer) == (True, ""), repr(answer)
            edge = item.answer + item.tolerance * 0.99
            assert judge(item, edge)[0]
            for m in item.mistakes:
                ok, why = judge(item, m.value)
                assert not ok and m.why in why
            far = item.answer + 10 * item.tolerance + 1e6
            assert not judge(item, far)[0]
            bad = [None, "twelve", [item.answer], True, float("nan"), np.array([item.answer])]
        for answer in bad:
            ok, why = judge(item, answer)
            assert not ok and why, answer
        # the check cell: one fixed line when right, a QuizError naming the mistake when wrong
        check_quiz(item.right.letter if item.choices else item.answer, quiz.number, item.number)
        assert capsys.readouterr().out == f"✅ Quiz {quiz.number}, item {item.number}: right.\n"
        wrong = next(c for c in item.choices if not c.right) if item.choices else None
        with pytest.raises(QuizError) as err:
            check_quiz(wrong.letter if wrong else item.mistakes[0].value, quiz.number, item.number)
        assert (wrong.why if wrong else item.mistakes[0].why) in str(err.value)
        assert f"Quiz {quiz.number}, item {item.number} is not right yet." in str(err.value)


@pytest.mark.parametrize("quiz", QUIZZES, ids=IDS)
def test_items_do_not_give_their_answers_away_in_the_summary_wording(quiz):
    """A right choice must not repeat five words in a row of the lecture's Summary (the
    student would answer by pattern-matching the summary), nor be the longest choice in most
    items (a length cue)."""
    text = _lecture_text(quiz)
    summary = text.split("## Summary", 1)[1] if "## Summary" in text else ""
    assert summary.strip(), f"{quiz.lecture}: no Summary section to compare with"
    said = _shingles(_words(summary), 5)
    longest = 0
    for item in quiz.items:
        if not item.choices:
            continue
        right = item.right
        copied = _shingles(_words(right.text), 5) & said
        assert not copied, (
            f"{quiz.lecture} item {item.number}: the right choice repeats the summary's "
            f"words {[' '.join(c) for c in copied]}"
        )
        if len(right.text) > max(len(c.text) for c in item.choices if not c.right):
            longest += 1
    with_choices = sum(1 for i in quiz.items if i.choices)
    assert longest <= with_choices / 2 + 0.5, (
        f"{quiz.lecture}: the right choice is the longest in {longest} of {with_choices} items"
    )


MAX_LONGEST_SHARE = 0.30  # issue 39: it was 33 of 77 (43 %); chance is about 1/4


def test_the_right_choice_is_rarely_the_longest_across_the_course(capsys):
    """A student who always picks the longest choice must not pass: the right choice is the
    strictly longest in at most 30 % of the course's choice items (chance, for 3-5 choices,
    is about 25 %). The share is printed (``pytest -s``)."""
    items = [(q.number, i) for q in QUIZZES for i in q.items if i.choices]
    longest = [
        f"{n}.{i.number}"
        for n, i in items
        if len(i.right.text) > max(len(c.text) for c in i.choices if not c.right)
    ]
    share = len(longest) / len(items)
    with capsys.disabled():
        print(f"\nright choice strictly the longest: {len(longest)} of {len(items)} choice items "
              f"({share:.0%}): {' '.join(longest)}")  # fmt: skip
    assert share <= MAX_LONGEST_SHARE, (len(longest), len(items), longest)


def test_no_numeric_item_has_tolerance_zero():
    """A student computes with floats: an exact answer needs room for float rounding (an integer
    key gets 0.5, every other integer is still wrong)."""
    for quiz in QUIZZES:
        for item in quiz.items:
            if not item.choices:
                assert item.tolerance > 0, f"{quiz.lecture} item {item.number}"
                assert judge(item, item.answer * (1 + 1e-12) + 1e-12)[0]


def test_a_number_on_the_wrong_scale_is_told_so():
    for quiz in QUIZZES:
        for item in quiz.items:
            if item.choices:
                continue
            if item.unit in ("percent", "%"):
                ok, why = judge(item, item.answer / 100)
                assert not ok and "wrong scale" in why and "percent" in why, (quiz.lecture, item)
            elif 0 < item.answer <= 1 and not any(abs(m.value - 100 * item.answer) <= item.tolerance
                                                   for m in item.mistakes):  # fmt: skip
                ok, why = judge(item, item.answer * 100)
                assert not ok and "wrong scale" in why, (quiz.lecture, item.number, why)
    percent = [(q, i) for q in QUIZZES for i in q.items if "percent" in i.question.lower()]
    assert percent and all(i.unit in ("percent", "%") for _, i in percent if not i.choices)


def test_a_number_copied_from_the_question_is_named_as_such():
    """Issue 42: answering with a number the question states was "not a mistake we know"."""
    from course_lib.quiz import _given_numbers

    assert _given_numbers("scores 95.6 %, r = 8, 2,048 tokens, 1e-5, W_2 and x0 (3, 4)") == [
        95.6, 8.0, 2048.0, 1e-5, 3.0, 4.0]  # fmt: skip
    named = 0
    for quiz in QUIZZES:
        for item in quiz.items:
            if item.choices:
                continue
            for given in _given_numbers(item.question):
                ok, why = judge(item, given)
                if ok or "you gave" not in why or any(m.why in why for m in item.mistakes):
                    continue  # right, or a mistake the item names itself
                if "wrong scale" not in why:
                    assert "given in the question" in why, (quiz.lecture, item.number, why)
                    assert f"section {item.section}" in why
                    named += 1
    assert named, "no numeric item states a number that is not its answer"


def test_quiz_notebooks_are_up_to_date_and_hold_no_answers():
    assert make_quizzes.main(["--check"]) == 0
    for quiz in QUIZZES:
        text = (ROOT / "quizzes" / quiz.notebook_name).read_text(encoding="utf-8")
        assert "This notebook is practice" in text  # issue 39: the keys ship with course_lib
        for item in quiz.items:
            assert item.explain not in text
            for c in item.choices:
                assert not c.why or c.why not in text


def test_the_grader_reads_a_quiz_notebook_as_a_template():
    from tools.grading.course import QUIZZES as FOLDER
    from tools.grading.course import load_template

    quiz = QUIZZES[0]
    template = load_template(FOLDER / quiz.notebook_name)
    assert sorted(template.checks) == [f"Q{int(quiz.number)}.{i.number}" for i in quiz.items]
    check = template.checks[f"Q{int(quiz.number)}.1"]
    assert check.function is check_quiz
    assert check.args == [("name", "answer_1"), ("value", quiz.number), ("value", 1)]
    assert sum(c.answer for c in template.cells) == len(quiz.items)


BAD = [
    ("kind = 'essay'", "kind must be one of"),
    ("section = 0", "section must be a section number"),
    ("right = 'e'", "right must be one letter of 'abc'"),
    ("right = 'ab'", "right must be one letter"),
    ("colour = 'red'", "unknown keys ['colour']"),
]


def _bad_file(tmp_path, extra: str, choices: str | None = None) -> Path:
    choices = choices or "\n".join(
        f"[[items.choices]]\ntext = 't{k}'\n" + ("" if k == 0 else f"why = 'wrong because {k}'\n")
        for k in range(3)
    )
    base = {"kind": "'choice'", "section": "1", "right": "'a'"}
    for line in extra.splitlines():
        key, _, value = line.partition(" = ")
        base[key] = value
    body = "\n".join(f"{k} = {v}" for k, v in base.items())
    text = (
        "lecture = '01_softmax'\ntitle = 't'\n[[items]]\nquestion = 'q?'\nexplain = 'e'\n"
        f"{body}\n{choices}"
    )
    path = tmp_path / "01_softmax.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("extra, message", BAD, ids=[b[1] for b in BAD])
def test_a_malformed_quiz_file_is_refused_with_a_message(tmp_path, extra, message):
    assert load_quiz(_bad_file(tmp_path, "")).items[0].right.letter == "a"  # the base is valid
    with pytest.raises(QuizFormatError, match=re.escape(message)):
        load_quiz(_bad_file(tmp_path, extra))


def test_a_wrong_choice_without_explanation_is_refused(tmp_path):
    choices = "[[items.choices]]\ntext = 'a'\n[[items.choices]]\ntext = 'b'\n" * 1 + (
        "[[items.choices]]\ntext = 'c'\nwhy = 'w'\n"
    )
    with pytest.raises(QuizFormatError, match="choice b: why is missing"):
        load_quiz(_bad_file(tmp_path, "", choices))


def test_a_numeric_mistake_inside_the_tolerance_is_refused(tmp_path):
    text = (
        "lecture = '01_softmax'\ntitle = 't'\n[[items]]\nkind = 'numeric'\nsection = 1\n"
        "question = 'q'\nexplain = 'e'\nanswer = 1.0\ntolerance = 0.1\n"
        "[[items.mistakes]]\nvalue = 1.05\nwhy = 'w'\n"
    )
    path = tmp_path / "01_softmax.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuizFormatError, match="1.05 is within the tolerance"):
        load_quiz(path)


def test_a_see_reference_appends_an_exercise_checks_hint(tmp_path):
    from course_lib.checks.lecture01 import HINT_AXIS

    choices = (
        "[[items.choices]]\ntext = 'a'\n[[items.choices]]\ntext = 'b'\nwhy = 'Axis.'\n"
        "see = 'lecture01:HINT_AXIS'\n[[items.choices]]\ntext = 'c'\nwhy = 'w'\n"
    )
    item = load_quiz(_bad_file(tmp_path, "", choices)).items[0]
    assert item.choices[1].why == "Axis. " + HINT_AXIS
    with pytest.raises(QuizFormatError, match="does not exist"):
        load_quiz(_bad_file(tmp_path, "", choices.replace("HINT_AXIS", "HINT_NOPE")))


def test_quiz_files_live_in_the_package():
    assert QUIZ_DIR == ROOT / "course_lib" / "quizzes"
    assert sorted(p.stem for p in QUIZ_DIR.glob("*.toml")) == IDS


# -- through the grader (the sandbox): every right answer passes, every wrong one fails -------


def _answered(quiz, answers: dict[int, object]) -> dict:
    nb = json.loads((ROOT / "quizzes" / quiz.notebook_name).read_text(encoding="utf-8"))
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        m = re.match(r"# Item (\d+):", src)
        if m and "NotImplementedError" in src:
            k = int(m.group(1))
            cell["source"] = f"# Item {k}\nanswer_{k} = {answers[k]!r}\n"
    return nb


@pytest.mark.slow
def test_the_grader_passes_right_answers_and_fails_each_wrong_one_with_its_explanation(tmp_path):
    from tools.grading.cli import grade_many

    files, expected = [], {}
    for quiz in QUIZZES:
        right = {i.number: i.right.letter if i.choices else i.answer for i in quiz.items}
        wrongs = {
            i.number: [c for c in i.choices if not c.right] or list(i.mistakes) for i in quiz.items
        }
        rounds = max(len(w) for w in wrongs.values())
        for r in range(rounds + 1):
            answers, whys = {}, {}
            for item in quiz.items:
                if r == 0:
                    answers[item.number] = right[item.number]
                    continue
                w = wrongs[item.number][(r - 1) % len(wrongs[item.number])]
                answers[item.number] = getattr(w, "letter", None) or w.value
                whys[f"Q{int(quiz.number)}.{item.number}"] = w.why
            path = tmp_path / f"{quiz.number}_student_{r}.ipynb"
            path.write_text(json.dumps(_answered(quiz, answers)), encoding="utf-8")
            files.append(path)
            expected[str(path)] = whys
    results = grade_many(files, 2)
    for res in results:
        assert res.error is None, (res.notebook, res.error)
        whys = expected[res.notebook]
        if not whys:
            assert res.all_passed, (res.notebook, res.exercises)
            continue
        for ex, (ok, reason) in res.exercises.items():
            assert not ok and whys[ex] in reason, (res.notebook, ex, reason)


def _contains(text: str, phrase: str) -> bool:
    """Does ``text`` (HTML) say ``phrase``, compared word by word (tags and markup dropped)?"""
    import html as _html

    words = " ".join(_words(_html.unescape(re.sub(r"<[^>]+>", " ", text))))
    return " ".join(_words(phrase)) in words


@pytest.mark.parametrize("solutions", [True, False])
def test_site_page_and_deck_show_answers_only_with_solutions(solutions):
    from tools.site.quiz import quiz_page, quiz_slides

    for quiz in QUIZZES:
        page = quiz_page(quiz, "<nav></nav>", "", "../notebooks/x.html", {}, solutions)
        slides = quiz_slides(quiz, solutions)
        deck = " ".join(p.html for s in slides for p in s.parts)
        notes = " ".join(n for s in slides for n in s.notes)
        assert len(slides) == len(quiz.items) + 1
        assert ("quiz-answer" in page) == solutions
        for item in quiz.items:
            key = f"q{quiz.number}-{item.number}"
            assert f'id="{key}"' in page and f"section {item.section}" in page
            assert f"section {item.section}" in slides[item.number].title
            assert _contains(page, item.question) and _contains(deck, item.question)
            secrets = [c.why for c in item.choices if not c.right]
            secrets += [m.why for m in item.mistakes] + [item.explain]
            for secret in secrets:
                assert _contains(page, secret) == solutions, (quiz.lecture, item.number, secret)
                assert _contains(notes, secret) == solutions
                assert not _contains(deck, secret)
            if item.choices:  # every form control has a label
                for c in item.choices:
                    assert f'<label for="{key}-{c.letter}">' in page
                    assert _contains(page, c.text) and _contains(deck, c.text)
            else:
                assert f'<label for="{key}-value">' in page
