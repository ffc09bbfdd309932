"""Lecture 04 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import math

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture04 import (
    check_dot_by_distance,
    check_positional_encoding,
    check_shift_matrix,
)

# --- reference answers written independently ---------------------------------------------


def pe_torch(num_positions, d_model):
    # The Annotated Transformer's exp/log form, in torch float64.
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    div = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64) * -(math.log(10000.0) / d_model)
    )
    pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe.numpy()


def shift_matrix(k, d_model):
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        b = k / 10000 ** (2 * i / d_model)
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
    return m


def dot_by_distance(k, d_model):
    return np.array(
        [sum(math.cos(kk / 10000 ** (2 * i / d_model)) for i in range(d_model // 2)) for kk in k]
    )


# --- 4.1 ---------------------------------------------------------------------------------


def test_positional_encoding_passes_torch_reference(capsys):
    check_positional_encoding(pe_torch)
    assert capsys.readouterr().out == "✅ Exercise 4.1 passed: sinusoidal positional encoding\n"


def test_positional_encoding_fails_i_as_dimension_index():
    def i_is_dimension(n, d):  # exponent uses the column index itself: the notes' ambiguity
        pos, j = np.arange(n)[:, None], np.arange(d)[None, :]
        angle = pos / 10000 ** (j / d)
        return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))

    with pytest.raises(ExerciseError, match=r"the notes' example") as err:
        check_positional_encoding(i_is_dimension)
    text = str(err.value)
    assert "expected" in text and "got" in text and "i counts pairs" in text


def test_positional_encoding_fails_positions_from_one_and_stub():
    with pytest.raises(ExerciseError, match=r"(?s)expected .*got "):
        check_positional_encoding(lambda n, d: pe_torch(n + 1, d)[1:])
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_positional_encoding(_stub)


# --- 4.2 ---------------------------------------------------------------------------------


def test_shift_matrix_passes_reference(capsys):
    check_shift_matrix(shift_matrix)
    assert (
        capsys.readouterr().out
        == "✅ Exercise 4.2 passed: PE(pos + k) as a linear map of PE(pos)\n"
    )


def test_shift_matrix_fails_transposed_blocks():
    with pytest.raises(ExerciseError, match=r"M_k @ PE\(pos\) for k=1, d_model=4") as err:
        check_shift_matrix(lambda k, d: shift_matrix(k, d).T)
    assert "expected" in str(err.value) and "got" in str(err.value)


def test_shift_matrix_fails_wrong_shape_and_stub():
    with pytest.raises(ExerciseError, match=r"expected shape \(4, 4\), got \(2, 2\)"):
        check_shift_matrix(lambda k, d: np.eye(2))
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_shift_matrix(_stub)


# --- 4.3 ---------------------------------------------------------------------------------


def test_dot_by_distance_passes_reference(capsys):
    check_dot_by_distance(dot_by_distance)
    assert (
        capsys.readouterr().out
        == "✅ Exercise 4.3 passed: dot products depend only on the distance\n"
    )


def test_dot_by_distance_fails_sum_over_all_dimensions():
    def all_dims(k, d):  # sums over d instead of d/2 pairs
        return np.array([sum(math.cos(kk / 10000 ** (j / d)) for j in range(d)) for kk in k])

    with pytest.raises(ExerciseError, match=r"PE\(p\)·PE\(p\+k\) for d_model=4") as err:
        check_dot_by_distance(all_dims)
    assert "expected" in str(err.value) and "got" in str(err.value)


def test_dot_by_distance_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_dot_by_distance(_stub)
