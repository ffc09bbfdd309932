"""Lecture 01 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import numpy as np
import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub
from scipy.special import softmax as scipy_softmax

from course_lib.checks import ExerciseError, call_student, check_array, check_value, passed
from course_lib.checks.lecture01 import (
    check_attention_weights,
    check_softmax_temperature,
    check_stable_softmax,
)

# --- reference answers, written the way a student would ------------------------------------


def stable_softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax_temperature(x, t):
    if t <= 0:
        raise ValueError(f"temperature must be positive, got {t}")
    return stable_softmax(x / t)


def attention_weights(scores, d_k):
    return stable_softmax(scores / np.sqrt(d_k))


# --- Exercise 1.1 --------------------------------------------------------------------------


def test_stable_softmax_passes_reference_and_library(capsys):
    check_stable_softmax(stable_softmax)
    check_stable_softmax(lambda x: scipy_softmax(x, axis=-1))  # independent, written differently
    assert capsys.readouterr().out == "✅ Exercise 1.1 passed: stable softmax\n" * 2


def test_stable_softmax_fails_without_max_subtraction():
    def naive(x):
        e = np.exp(x)
        return e / np.sum(e, axis=-1, keepdims=True)

    with pytest.raises(ExerciseError, match=r"large logits \[1000, 999, 998\]") as err:
        check_stable_softmax(naive)
    text = str(err.value)
    assert "expected [0.6652 0.2447 0.09" in text and "got      [nan nan nan]" in text
    assert "nan or inf" in text and "Subtract the maximum" in text
    assert "Exercise 1.1 is not right yet" in str(err.value)


def test_stable_softmax_fails_wrong_axis_with_expected_and_got():
    def wrong_axis(x):
        e = np.exp(x - np.max(x))
        return e / np.sum(e, axis=0, keepdims=True)

    with pytest.raises(ExerciseError, match=r"2-D batch") as err:
        check_stable_softmax(wrong_axis)
    assert "expected" in str(err.value) and "got" in str(err.value)
    assert "axis=-1" in str(err.value)


def test_stable_softmax_fails_wrong_shape():
    with pytest.raises(ExerciseError, match=r"expected an array of shape \(2,\), got shape \(\)"):
        check_stable_softmax(lambda x: np.float64(1.0))


def test_stable_softmax_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_stable_softmax(_stub)


# --- Exercise 1.2 --------------------------------------------------------------------------


def test_temperature_passes_reference(capsys):
    check_softmax_temperature(softmax_temperature)
    assert capsys.readouterr().out == "✅ Exercise 1.2 passed: softmax with temperature\n"


def test_temperature_fails_when_multiplying_by_t():
    with pytest.raises(ExerciseError, match=r"temperature T=0.5") as err:
        check_softmax_temperature(lambda x, t: stable_softmax(x * t))
    assert "expected" in str(err.value) and "got" in str(err.value)
    assert "softmax(x / T)" in str(err.value)


def test_temperature_fails_when_t_zero_does_not_raise():
    def no_guard(x, t):
        with np.errstate(all="ignore"):
            return stable_softmax(x / t)  # x / 0 = inf, inf - inf = nan: no exception

    with pytest.raises(
        ExerciseError, match=r"for T=0 your function returned .* instead of raising"
    ):
        check_softmax_temperature(no_guard)

    def clamps(x, t):
        return stable_softmax(x / max(t, 1e-3))  # "fixes" T=0 silently

    with pytest.raises(ExerciseError, match=r"raise ValueError"):
        check_softmax_temperature(clamps)


def test_temperature_fails_when_negative_t_does_not_raise():
    def zero_only(x, t):
        if t == 0:
            raise ValueError("T must not be 0")
        return stable_softmax(x / t)  # T = -1 silently flips the distribution

    with pytest.raises(
        ExerciseError, match=r"for T=-1 your function returned .* instead of raising"
    ):
        check_softmax_temperature(zero_only)


def test_temperature_fails_when_t_zero_raises_something_else():
    def wrong_error(x, t):
        if t == 0:
            raise ZeroDivisionError("T is zero")
        return stable_softmax(x / t)

    with pytest.raises(ExerciseError, match=r"raised ZeroDivisionError: T is zero"):
        check_softmax_temperature(wrong_error)


def test_temperature_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_softmax_temperature(_stub)


# --- Exercise 1.3 --------------------------------------------------------------------------


def test_attention_weights_passes_reference(capsys):
    check_attention_weights(attention_weights)
    assert capsys.readouterr().out == "✅ Exercise 1.3 passed: attention weights from scores\n"


def test_attention_weights_fails_scaling_by_d_k():
    with pytest.raises(ExerciseError, match=r"scores \[112.0, 96.0\] with d_k=64") as err:
        check_attention_weights(lambda s, d_k: stable_softmax(s / d_k))
    text = str(err.value)
    assert "expected [0.8808 0.1192]" in text  # 1 / (1 + e^-2), the notes' 0.88 / 0.12
    assert "got" in text and "square root of d_k" in text


def test_attention_weights_fails_without_scaling():
    with pytest.raises(ExerciseError, match=r"(?s)\n  expected .*\n  got "):
        check_attention_weights(lambda s, d_k: stable_softmax(s))


def test_attention_weights_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_attention_weights(_stub)


# --- the helpers in course_lib.checks ------------------------------------------------------


def test_call_student_reports_crashes_and_non_functions():
    with pytest.raises(ExerciseError, match=r"expected a function, got int 3"):
        call_student("9.9", 3)
    with pytest.raises(ExerciseError, match=r"your function raised IndexError: boom") as err:
        call_student("9.9", lambda: (_ for _ in ()).throw(IndexError("boom")))
    assert isinstance(err.value.__cause__, IndexError)
    assert call_student("9.9", lambda a, b=0: a + b, 1, b=2) == 3


def test_exercise_error_is_an_assertion_error_with_exercise_and_hint():
    err = ExerciseError("2.1", "something is off.", "try this")
    assert isinstance(err, AssertionError) and err.exercise == "2.1"
    assert "Exercise 2.1 is not right yet.\nsomething is off.\nHint: try this" in str(err)


def test_check_array_and_check_value():
    check_array("0.1", [1.0, 2.0], np.array([1.0, 2.0 + 1e-9]), what="v")
    with pytest.raises(ExerciseError, match=r"v:\n  expected \[1. 2.\]\n  got      \[1. 3.\]"):
        check_array("0.1", [1.0, 3.0], np.array([1.0, 2.0]), what="v")
    with pytest.raises(ExerciseError, match=r"expected an array of numbers, got str"):
        check_array("0.1", "abc", np.array([1.0]), what="v")
    check_value("0.1", (2, 3), (2, 3), what="shape")
    with pytest.raises(ExerciseError, match=r"shape:\n  expected \(2, 3\)\n  got      \(3, 2\)"):
        check_value("0.1", (3, 2), (2, 3), what="shape")


def test_passed_prints_one_fixed_line(capsys):
    passed("4.2", "title")
    assert capsys.readouterr().out == "✅ Exercise 4.2 passed: title\n"
