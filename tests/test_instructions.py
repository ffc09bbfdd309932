"""Lecture 14's instruction data: answers by hand, the three held-out kinds kept apart."""

from __future__ import annotations

import pytest

from course_lib.data.instructions import (
    FAMILIES,
    HELD_OUT_KINDS,
    exact_match,
    held_out_instructions,
    instruction_words,
    make_instruction,
    preference_pair,
    solve,
    training_instructions,
    validation_instructions,
)

WORDS = ("open", "file", "read", "data")


def test_answers_by_hand():
    assert [solve(f, WORDS) for f in FAMILIES] == [
        "open", "data", "4", "data read file open", "open, file, read, data"
    ]  # fmt: skip
    x = make_instruction("count", WORDS[:3], 0)
    assert (x.prompt, x.answer) == ("How many words are in: open file read?", "3")
    assert (
        make_instruction("first", WORDS, 3).prompt
        == "Name the word at the start of: open file read data"
    )


def test_preference_pairs_by_rule():
    pairs = [preference_pair(make_instruction(f, WORDS)) for f in FAMILIES]
    assert pairs == [
        ("open", "data"), ("data", "open"), ("4", "5"),
        ("data read file open", "open file read data"),
        ("open, file, read, data", "open file read data"),
    ]  # fmt: skip


def test_exact_match():
    assert exact_match(" open ", "open") and not exact_match("open file", "open")


def test_the_held_out_kinds_are_kept_apart():
    train_words, unseen = instruction_words()
    assert len(train_words) == 3046 and len(unseen) == 100 and not set(train_words) & set(unseen)
    training = training_instructions(5000, seed=0)
    seen_words = {w for x in training for w in x.words}
    seen_lists = {x.words for x in training}
    assert seen_words <= set(train_words)
    assert {x.phrasing for x in training} == {0, 1, 2}
    assert {x.family for x in training} == set(FAMILIES)
    for kind in HELD_OUT_KINDS:
        held = held_out_instructions(kind)
        assert len(held) == 60 * len(FAMILIES)
        assert not {x.words for x in held} & seen_lists
        assert all(x.answer == solve(x.family, x.words) for x in held)
        words = {w for x in held for w in x.words}
        if kind == "unseen_words":
            assert words <= set(unseen)
        else:
            assert words <= set(train_words)
        assert {x.phrasing for x in held} == ({3} if kind == "unseen_phrasing" else {0, 1, 2})
    assert held_out_instructions("unseen_words", 5) == [
        x for i, x in enumerate(held_out_instructions("unseen_words")) if i % 60 < 5
    ]


def test_the_validation_split_comes_from_the_training_side():
    """Settings are chosen on it: training words and phrasings, drawn like the new
    combinations, and no list shared with a held-out set or with training."""
    train_words, _ = instruction_words()
    val = validation_instructions()
    assert len(val) == 200 * len(FAMILIES)
    assert [x.family for x in val[::200]] == list(FAMILIES)
    assert {w for x in val for w in x.words} <= set(train_words)
    assert {x.phrasing for x in val} == {0, 1, 2}
    assert all(x.answer == solve(x.family, x.words) for x in val)
    lists = {x.words for x in val}
    held = {x.words for k in HELD_OUT_KINDS for x in held_out_instructions(k)}
    assert not lists & held
    assert not lists & {x.words for x in training_instructions(20_000, seed=0)}
    assert validation_instructions(3) == [x for i, x in enumerate(val) if i % 200 < 3]
    with pytest.raises(ValueError, match="per_family must be <= 200, got 201"):
        validation_instructions(201)


def test_deterministic():
    assert training_instructions(50, seed=3) == training_instructions(50, seed=3)
    assert training_instructions(50, seed=3) != training_instructions(50, seed=4)


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: solve("upper", WORDS), ValueError, "family must be one of"),
        (lambda: solve("first", ("a", "b")), ValueError, "words must hold 3 to 6 words, got 2"),
        (lambda: make_instruction("first", WORDS, 4), ValueError, "phrasing must be 0, 1, 2"),
        (lambda: held_out_instructions("new_words"), ValueError, "kind must be one of"),
    ],
)
def test_bad_inputs(call, error, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)
