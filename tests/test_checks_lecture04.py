"""Lecture 04 checks: right answers pass, each usual mistake fails with the hint naming it."""

import math

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture04 import (
    check_half_distance,
    check_positional_encoding,
    check_same_for_attention,
    check_shift_matrix_halves,
    halves_encoding,
)


def _ids(table):
    return [row[0] for row in table]


# --- 4.1 ---------------------------------------------------------------------------------------


def pe_vectorised(n, d):
    angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d, 2)[None, :] / d)
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def pe_loops(n, d):  # the formula cell by cell, with math
    return [[(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / d)) for j in range(d)]
            for p in range(n)]  # fmt: skip


def _pe(angle_fn, layout="interleaved", swap=False):
    def answer(n, d):
        angle = angle_fn(np.arange(n)[:, None], np.arange(0, d, 2)[None, :], d)
        s, c = (np.cos(angle), np.sin(angle)) if swap else (np.sin(angle), np.cos(angle))
        if layout == "halves":
            return np.concatenate([s, c], axis=1)
        pe = np.zeros((n, d))
        pe[:, 0::2], pe[:, 1::2] = s, c
        return pe

    return answer


def _per_dimension(n, d):
    j = np.arange(d)
    angle = np.arange(n)[:, None] / 10000.0 ** (j / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))


RIGHT_ANGLE = lambda p, two_i, d: p / 10000.0 ** (two_i / d)  # noqa: E731

WRONG_4_1 = [
    ("exponent per dimension", _per_dimension, "i counts PAIRS"),
    ("sin and cos swapped", _pe(RIGHT_ANGLE, swap=True), "sin goes in the even columns"),
    ("halves layout", _pe(RIGHT_ANGLE, layout="halves"), "interleaved"),
    ("positions from 1", _pe(lambda p, two_i, d: (p + 1) / 10000.0 ** (two_i / d)), "positions start at 0"),
    ("exponent i/d", _pe(lambda p, two_i, d: p / 10000.0 ** (two_i / 2 / d)), r"not 10000\*\*\(i/d_model\)"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


def pe_float32_torch(n, d):  # the PyTorch tutorial's table: float32 throughout
    position = torch.arange(n).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
    return pe


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("answer", [pe_vectorised, pe_loops, pe_float32_torch])
def test_positional_encoding_passes_right_answers(answer, seed, capsys):
    check_positional_encoding(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 4.1 passed: sinusoidal positional encoding\n"


def test_a_float32_table_passes_but_a_float64_off_by_float32_rounding_is_named():
    check_positional_encoding(lambda n, d: pe_vectorised(n, d).astype(np.float32))
    with pytest.raises(ExerciseError, match="float32 rounding"):
        check_positional_encoding(lambda n, d: pe_vectorised(n, d) + 3e-6)


def test_a_lookup_of_the_visible_sizes_fails_the_hidden_ones():
    seen = {(n, d): pe_vectorised(n, d) for n, d in ((2, 4), (5, 4), (50, 16), (1, 2), (3, 128))}
    check_positional_encoding(lambda n, d: seen[n, d])
    with pytest.raises(ExerciseError, match="raised KeyError"):
        check_positional_encoding(lambda n, d: seen[n, d], seed=5)


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_4_1, ids=_ids(WRONG_4_1))
def test_positional_encoding_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_positional_encoding(answer)


# --- 4.2 ---------------------------------------------------------------------------------------


def shift_halves(k, d, exponent=1.0):
    b = k * 10000.0 ** (-np.arange(0, d, 2) / d * exponent)
    c, s = np.diag(np.cos(b)), np.diag(np.sin(b))
    return np.block([[c, s], [-s, c]])


def shift_halves_by_permutation(k, d):  # the interleaved rotation, re-ordered with a permutation
    m = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        b = torch.tensor(k * 10000.0 ** (-2 * i / d), dtype=torch.float64)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.stack(
            [torch.stack([b.cos(), b.sin()]), torch.stack([-b.sin(), b.cos()])]
        )
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    return m[perm][:, perm].numpy()


def _interleaved(k, d):
    m = np.zeros((d, d))
    for i in range(d // 2):
        b = k * 10000.0 ** (-2 * i / d)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[np.cos(b), np.sin(b)], [-np.sin(b), np.cos(b)]]
    return m


WRONG_4_2 = [
    ("the lecture's interleaved matrix", _interleaved, "INTERLEAVED layout"),
    ("transposed (shifts by -k)", lambda k, d: shift_halves(k, d).T, "shifts by -k"),
    ("pair frequency with i/d", lambda k, d: shift_halves(k, d, exponent=0.5), "the frequency of pair i"),
    ("the identity", lambda k, d: np.eye(d), "sin a sits in column i"),
    ("wrong shape", lambda k, d: np.eye(d + 1), r"expected shape \(4, 4\)"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


def test_halves_encoding_is_the_interleaved_table_reordered():
    pe = halves_encoding(7, 6)
    assert np.allclose(pe[3], [np.sin(3), np.sin(3 / 10000 ** (2 / 6)), np.sin(3 / 10000 ** (4 / 6)),
                               np.cos(3), np.cos(3 / 10000 ** (2 / 6)), np.cos(3 / 10000 ** (4 / 6))])  # fmt: skip


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("answer", [shift_halves, shift_halves_by_permutation])
def test_shift_matrix_passes_right_answers(answer, seed, capsys):
    check_shift_matrix_halves(answer, seed=seed)
    assert "✅ Exercise 4.2 passed" in capsys.readouterr().out


def test_shift_matrix_lookup_of_the_visible_cases_fails_hidden_ones():
    seen = {(k, d): shift_halves(k, d) for k, d in ((1, 4), (7, 16), (0, 6), (25, 8), (3, 2))}
    check_shift_matrix_halves(lambda k, d: seen[k, d])
    with pytest.raises(ExerciseError, match="raised KeyError"):
        check_shift_matrix_halves(lambda k, d: seen[k, d], seed=3)


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_4_2, ids=_ids(WRONG_4_2))
def test_shift_matrix_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_shift_matrix_halves(answer)


# --- 4.3 (construct) ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", (0, 1, 2024))
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("the dog bit the man", "the man bit the dog"),
        ("I ate the apple", "apple ate I the"),
        ("a b a", "a a b"),
        ("a b", "a b a b"),  # a repeated sentence: every token sees the same mixture
    ],
)
def test_same_for_attention_accepts_every_reordering(a, b, seed, capsys):
    check_same_for_attention(a.split(), b.split(), seed=seed)
    assert "✅ Exercise 4.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("a", "b", "hint"),
    [
        ("the dog bit the man", "the dog bit the man", "the same word sequence"),
        ("the dog bit the man", "the man bit a dog", "BAG of words"),
        ("a b a", "a b b", "BAG of words"),
        ("the dog", "", "non-empty list of words"),
    ],
)
def test_same_for_attention_names_the_mistake(a, b, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_same_for_attention(a.split(), b.split(), seed=3)


def test_same_for_attention_refuses_strings():
    with pytest.raises(ExerciseError, match="list of words"):
        check_same_for_attention("the dog bit the man", "the man bit the dog")


# --- 4.4 (predict, then measure) ---------------------------------------------------------------


def half_distance(d_model):  # the solution's measurement
    table = pe_vectorised(1000, d_model)
    dots = table[50] @ table[50:].T
    return int(np.argmax(dots < dots[0] / 2))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_half_distance_passes_a_measurement(seed, capsys):
    table = pe_vectorised(400, 64)
    dots = table[100] @ table[100:400].T  # PE(100) . PE(100 + k), k = 0..299
    k = int(np.argmax(dots < dots[0] / 2))
    assert k == 28 and np.all(dots[1:k] >= dots[0] / 2)
    check_half_distance(half_distance, seed=seed)
    check_half_distance(lambda d: np.int64(half_distance(d)), seed=seed)
    assert capsys.readouterr().out.count("✅ Exercise 4.4 passed") == 2


def test_half_distance_copied_from_a_summary_fails_hidden_widths():
    check_half_distance(lambda d: 28)
    with pytest.raises(ExerciseError, match="too (low|high)"):
        check_half_distance(lambda d: 28, seed=1)


@pytest.mark.parametrize(
    ("k", "hint"),
    [(27, "last distance still ABOVE half"), (5, "exponent is i/d_model"), (3, "too low(?s:.*)plateau"),
     (40, "too high"), (28.0, "expected an integer")],
)  # fmt: skip
def test_half_distance_names_the_mistake_without_the_value(k, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_half_distance(lambda d: k)
    assert "28" not in str(err.value).replace("28.0", "")
