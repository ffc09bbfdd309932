"""Lecture 09 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture09 import (
    check_previous_token_score,
    check_special_token_share,
    check_value_contributions,
)

# --- reference answers, written the way a student would (loops and torch) -------------------


def previous_token_score(a):
    a = np.asarray(a)
    n = a.shape[-1]
    return sum(a[..., i, i - 1] for i in range(1, n)) / (n - 1)


def special_token_share(a):
    t = torch.as_tensor(a)
    return (t[..., 0] + t[..., -1]).mean(dim=-1).numpy()


def value_contributions(weights, values):
    w, v = torch.as_tensor(weights), torch.as_tensor(values)
    terms = w[..., :, :, None] * v[..., None, :, :]  # (..., n_q, n_k, d): each term of w @ v
    return torch.linalg.vector_norm(terms, dim=-1).numpy()


# --- Exercise 9.1 ---------------------------------------------------------------------------


def test_previous_token_score_passes_reference(capsys):
    check_previous_token_score(previous_token_score)
    assert capsys.readouterr().out == "✅ Exercise 9.1 passed: previous-token score\n"


def test_previous_token_score_fails_averaging_over_all_queries():
    def over_n(a):
        return np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(-1) / a.shape[-1]

    with pytest.raises(ExerciseError, match=r"previous-token score of attention") as err:
        check_previous_token_score(over_n)
    text = str(err.value)
    assert "expected" in text and "got" in text and "np.diagonal" in text


def test_previous_token_score_fails_next_token_diagonal():
    with pytest.raises(ExerciseError, match=r"(?s)\n  expected .*\n  got "):
        check_previous_token_score(lambda a: np.diagonal(a, offset=1, axis1=-2, axis2=-1).mean(-1))


def test_previous_token_score_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_previous_token_score(_stub)


# --- Exercise 9.2 ---------------------------------------------------------------------------


def test_special_token_share_passes_reference(capsys):
    check_special_token_share(special_token_share)
    assert (
        capsys.readouterr().out == "✅ Exercise 9.2 passed: share of attention on [CLS] and [SEP]\n"
    )


def test_special_token_share_fails_cls_only():
    with pytest.raises(ExerciseError, match=r"share of attention on \[CLS\] and \[SEP\]") as err:
        check_special_token_share(lambda a: a[..., 0].mean(-1))
    assert "expected" in str(err.value) and "got" in str(err.value)


def test_special_token_share_fails_averaging_over_keys_instead_of_queries():
    # a[..., 0, :] is what query 0 ([CLS]) attends to, not what attends to [CLS].
    with pytest.raises(ExerciseError, match=r"expected"):
        check_special_token_share(lambda a: (a[..., 0, :] + a[..., -1, :]).mean(-1))


def test_special_token_share_reports_wrong_shape():
    with pytest.raises(ExerciseError, match=r"expected an array of shape \(3, 4\)"):
        check_special_token_share(lambda a: float((a[..., 0] + a[..., -1]).mean()))


def test_special_token_share_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_special_token_share(_stub)


# --- Exercise 9.3 ---------------------------------------------------------------------------


def test_value_contributions_passes_reference(capsys):
    check_value_contributions(value_contributions)
    assert capsys.readouterr().out == "✅ Exercise 9.3 passed: value-weighted contributions\n"


def test_value_contributions_fails_norm_over_the_wrong_axis():
    def wrong_axis(weights, values):
        return weights * np.linalg.norm(values, axis=-2)[..., None, :]

    with pytest.raises(ExerciseError, match=r"Exercise 9.3 .*\n.*raised ValueError"):
        check_value_contributions(wrong_axis)


def test_value_contributions_fails_squared_lengths():
    def squared(weights, values):
        return weights * (values**2).sum(-1)[..., None, :]

    with pytest.raises(ExerciseError) as err:
        check_value_contributions(squared)
    text = str(err.value)
    assert "expected" in text and "got" in text and "np.linalg.norm(values, axis=-1)" in text


def test_value_contributions_fails_weights_alone():
    with pytest.raises(ExerciseError, match=r"(?s)contributions for weights .*expected.*got"):
        check_value_contributions(lambda w, v: w)


def test_value_contributions_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_value_contributions(_stub)
