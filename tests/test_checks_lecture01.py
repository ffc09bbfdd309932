"""Lecture 01 checks: right answers pass, each usual mistake fails with the hint naming it."""

import numpy as np
import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib import softmax
from course_lib.checks import (
    Built,
    ExerciseError,
    RemoteFunction,
    call_student,
    call_student_frozen,
    check_array,
    check_mistakes,
    check_value,
    frozen,
    passed,
)
from course_lib.checks.lecture01 import (
    check_attention_weights,
    check_saturation,
    check_softmax_temperature,
    check_stable_softmax,
)

SEEDS = (0, 1, 2024)

# --- right answers: the solution's way and a differently written one ---------------------------


def stable_softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def stable_softmax_loop(x):  # row by row, float32-proof, never touches x
    out = np.empty(np.shape(x))
    for idx in np.ndindex(*np.shape(x)[:-1]):
        row = np.asarray(x[idx], dtype=np.float64)
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return out


def softmax_temperature(x, t):
    if t <= 0:
        raise ValueError(f"temperature must be positive, got {t}")
    return stable_softmax(x / t)


def softmax_temperature_alt(x, t):
    if not t > 0:
        raise ValueError("T > 0 needed")
    return softmax(np.asarray(x) * (1.0 / t))


def attention_weights(scores, d_k):
    return stable_softmax(scores / np.sqrt(d_k))


def attention_weights_alt(scores, d_k):
    return stable_softmax_loop(np.asarray(scores) / d_k**0.5)


# --- wrong answers: (mistake, answer, fragment of the hint it must get) ------------------------


def _naive(x):
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def _global_max(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=-1, keepdims=True)


def _axis0(x):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def _no_keepdims(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1)


def _in_place(x):
    x -= np.max(x, axis=-1, keepdims=True)
    return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)


WRONG_1_1 = [
    ("no max subtracted", _naive, "Subtract the maximum of each row"),
    ("global max", _global_max, "maximum of the WHOLE array"),
    ("softmax along axis 0", _axis0, "not axis 0"),
    ("sum without keepdims", _no_keepdims, "keepdims=True"),
    ("changes its input in place", _in_place, "changes the caller's array in place"),
    ("returns a scalar", lambda x: np.float64(1.0), "expected an array of shape"),
    ("the stub", _stub, STUB_MESSAGE),
]

WRONG_1_2 = [
    ("multiplies by T", lambda x, t: stable_softmax(x * t), "you multiplied by T"),
    ("divides after the softmax", lambda x, t: stable_softmax(x) / t, r"not softmax\(x\) / T"),
    ("no guard (T = 0 gives nan)",
     lambda x, t: stable_softmax(x / t), r"for T=0 your function returned .* instead of raising"),
    ("clamps T", lambda x, t: stable_softmax(x / max(t, 1e-3)), "raise ValueError"),
    ("guards T == 0 only",
     lambda x, t: stable_softmax(x / t) if t != 0 else (_ for _ in ()).throw(ValueError("0")),
     "a negative T silently flips"),
    ("raises the wrong error",
     lambda x, t: stable_softmax(x / t) if t > 0 else (_ for _ in ()).throw(ZeroDivisionError("T")),
     "raised ZeroDivisionError"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip

WRONG_1_3 = [
    ("divides by d_k", lambda s, d_k: stable_softmax(s / d_k), "SQUARE ROOT of d_k"),
    ("no scaling", lambda s, d_k: stable_softmax(s), "must be scaled"),
    ("multiplies by sqrt(d_k)", lambda s, d_k: stable_softmax(s * np.sqrt(d_k)), "not multiplying"),
    ("softmax along axis 0", lambda s, d_k: _axis0(s / np.sqrt(d_k)), "not axis 0"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


# --- Exercise 1.1 --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [stable_softmax, stable_softmax_loop, softmax])
def test_stable_softmax_passes_right_answers(answer, seed, capsys):
    check_stable_softmax(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 1.1 passed: stable softmax\n"


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_1_1, ids=[w[0] for w in WRONG_1_1])
def test_stable_softmax_names_the_mistake(mistake, answer, hint, seed):
    with pytest.raises(ExerciseError, match=hint):
        check_stable_softmax(answer, seed=seed)


def test_global_max_fails_on_the_issue_example_with_expected_and_got():
    with pytest.raises(ExerciseError, match=r"\[\[1000, 999\], \[0, -1\]\]") as err:
        check_stable_softmax(_global_max)
    text = str(err.value)
    assert "expected [[0.7311 0.2689]\n" in text and "[   nan    nan]]" in text, text
    assert "Exercise 1.1 is not right yet" in text and "nan or inf" in text


def test_naive_softmax_fails_on_large_logits_with_expected_and_got():
    with pytest.raises(ExerciseError, match=r"large logits \[1000, 999, 998\]") as err:
        check_stable_softmax(_naive)
    assert "expected [0.6652 0.2447 0.09" in str(err.value)
    assert "got      [nan nan nan]" in str(err.value)


# --- Exercise 1.2 --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [softmax_temperature, softmax_temperature_alt])
def test_temperature_passes_right_answers(answer, seed, capsys):
    check_softmax_temperature(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 1.2 passed: softmax with temperature\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_1_2, ids=[w[0] for w in WRONG_1_2])
def test_temperature_names_the_mistake(mistake, answer, hint):
    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=hint):
        check_softmax_temperature(answer, seed=1)


# --- Exercise 1.3 --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [attention_weights, attention_weights_alt])
def test_attention_weights_passes_right_answers(answer, seed, capsys):
    check_attention_weights(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 1.3 passed: attention weights from scores\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_1_3, ids=[w[0] for w in WRONG_1_3])
def test_attention_weights_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_attention_weights(answer, seed=3)


def test_attention_weights_shows_the_notes_values():
    with pytest.raises(ExerciseError, match=r"scores \[112.0, 96.0\] with d_k=64") as err:
        check_attention_weights(lambda s, d_k: stable_softmax(s / d_k))
    assert "expected [0.8808 0.1192]" in str(err.value)  # 1 / (1 + e^-2), the notes' 0.88 / 0.12


# --- Exercise 1.4 (predict, then measure) ----------------------------------------------------


def _mean_top_weight(d_k, scaled, n_keys=100, n_queries=1000, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_queries, 1, d_k))
    k = rng.standard_normal((n_queries, n_keys, d_k))
    s = np.einsum("qid,qkd->qk", q, k) / (np.sqrt(d_k) if scaled else 1.0)
    return softmax(s).max(axis=-1).mean()


def test_saturation_answer_is_what_a_measurement_gives():
    """The facts the check relies on, re-measured (1000 queries: standard error < 0.01)."""
    assert _mean_top_weight(8, False) < 0.45 and _mean_top_weight(16, False) > 0.5
    assert max(_mean_top_weight(d, True, n_queries=300) for d in (1, 16, 256, 1024)) < 0.15
    assert _mean_top_weight(4, False, n_keys=10) < 0.5 < _mean_top_weight(8, False, n_keys=10)


@pytest.mark.parametrize("d_k, n_keys, scaled", [(1, 10, False), (8, 100, False),
                                                 (16, 30, False), (64, 300, True)])  # fmt: skip
def test_the_checks_sampler_has_the_distribution_of_drawn_vectors(d_k, n_keys, scaled):
    """The check samples scores as |q| z (|q|^2 chi-squared, z standard normal) instead of
    drawing q and the keys: the same distribution of the largest weight (two-sample
    Kolmogorov-Smirnov test against drawn vectors, 4,000 queries each)."""
    from scipy.stats import ks_2samp

    from course_lib.checks.lecture01 import _top_weights

    rng = np.random.default_rng(5)
    q = rng.standard_normal((4000, 1, d_k))
    k = rng.standard_normal((4000, n_keys, d_k))
    drawn = softmax((q @ k.transpose(0, 2, 1))[:, 0] / (np.sqrt(d_k) if scaled else 1.0)).max(-1)
    sampled = _top_weights(d_k, n_keys, scaled, 4000, (99, d_k))
    assert ks_2samp(drawn, sampled).pvalue > 0.001
    # and it can fail: the largest weight of the other case (scaled vs not) is told apart
    if d_k > 1:
        assert ks_2samp(drawn, _top_weights(d_k, n_keys, not scaled, 4000, (99, d_k))).pvalue < 1e-6


def mean_top_weight(d_k, n_keys, scaled, rng, n_queries=500):  # the solution's measurement
    tops = []
    for start in range(0, n_queries, 100):
        chunk = min(100, n_queries - start)
        q = rng.standard_normal((chunk, 1, d_k))
        k = rng.standard_normal((chunk, n_keys, d_k))
        s = (q @ k.transpose(0, 2, 1))[:, 0] / (np.sqrt(d_k) if scaled else 1.0)
        tops.append(softmax(s).max(axis=-1))
    return float(np.concatenate(tops).mean())


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_saturation_passes_a_measurement_on_hidden_inputs(seed, capsys):
    check_saturation(mean_top_weight, 16, None, seed=seed)
    check_saturation(mean_top_weight, np.int64(16), None, seed=seed)
    assert capsys.readouterr().out.count("✅ Exercise 1.4 passed") == 2


def test_saturation_fails_copied_numbers_without_a_measurement():
    """The issue's attack: the numbers copied, the measuring function a constant."""
    with pytest.raises(ExerciseError, match="too (low|high)"):
        check_saturation(lambda d_k, n_keys, scaled, rng, n_queries=500: 0.55, 16, None)
    # a function that is right for 100 keys only (a lookup of the visible cases) fails hidden ones
    table = {(d, s): mean_top_weight(d, 100, s, np.random.default_rng(0), 2000)
             for d in (1, 16, 256) for s in (False, True)}  # fmt: skip
    lookup = lambda d_k, n_keys, scaled, rng, n_queries=500: table.get((d_k, scaled), 0.5)  # noqa: E731
    check_saturation(lookup, 16, None)
    with pytest.raises(ExerciseError, match="too (low|high)"):
        check_saturation(lookup, 16, None, seed=3)


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda d, n, s, rng, q=500: mean_top_weight(d, n, not s, rng, q), "the other case"),
        (lambda d, n, s, rng, q=500: 1 / n, "mean of ALL weights"),
        (lambda d, n, s, rng, q=500: 1.1 * mean_top_weight(d, n, s, rng, q) + 0.01, "for each"),
    ],
)
def test_saturation_names_the_measurement_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_saturation(fn, 16, None)


@pytest.mark.parametrize(
    ("unscaled", "scaled", "hint"),
    [
        (8, None, "too low(?s:.*)10"),
        (32, None, "too high"),
        (1024, None, "too high"),
        (16, 1024, "never saturates"),
        (16.0, None, "expected an integer"),
        (True, None, "expected an integer"),
    ],
)
def test_saturation_names_the_mistake_without_the_value(unscaled, scaled, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_saturation(mean_top_weight, unscaled, scaled)
    if scaled is None:
        assert "16" not in str(err.value).replace(f"{unscaled}", "")


# --- the helpers in course_lib.checks ------------------------------------------------------


def test_call_student_reports_crashes_and_non_functions():
    with pytest.raises(ExerciseError, match=r"expected a function, got int 3"):
        call_student("9.9", 3)
    with pytest.raises(ExerciseError, match=r"your function raised IndexError: boom") as err:
        call_student("9.9", lambda: (_ for _ in ()).throw(IndexError("boom")))
    assert isinstance(err.value.__cause__, IndexError)
    assert call_student("9.9", lambda a, b=0: a + b, 1, b=2) == 3
    assert "Hint: read the error above" in str(err.value)  # the notebook shows the traceback


def test_call_student_of_a_graded_function_points_at_the_notebook_not_at_an_error_above():
    class Remote(RemoteFunction):  # as the grader's stand-in: its report shows no traceback
        def call(self, *args, **kwargs):
            raise ValueError("shapes (3,) and (4,) not aligned")

    with pytest.raises(ExerciseError, match=r"your function raised ValueError: shapes") as err:
        call_student("9.9", Remote(), 1)
    assert "above" not in str(err.value)
    assert "Hint: run this exercise's check cell in your notebook" in str(err.value)


def test_exercise_error_is_an_assertion_error_with_exercise_and_hint():
    err = ExerciseError("2.1", "something is off.", "try this")
    assert isinstance(err, AssertionError) and err.exercise == "2.1"
    assert (err.message, err.hint) == ("something is off.", "try this")
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


def test_check_mistakes_names_the_matching_mistake_only():
    mistakes = {"mistake A": np.array([1.0, np.nan]), "mistake B": np.array([3.0, 3.0])}
    check_mistakes("0.1", [1.0, 2.0], [1.0, 2.0], what="v", hint="generic", mistakes=mistakes)
    with pytest.raises(ExerciseError, match=r"(?s)got      \[ 1. nan\].*Hint: mistake A"):
        check_mistakes("0.1", [1.0, np.nan], [1.0, 2.0], what="v", hint="g", mistakes=mistakes)
    with pytest.raises(ExerciseError, match=r"Hint: mistake B"):
        check_mistakes("0.1", [3.0, 3.0], [1.0, 2.0], what="v", hint="g", mistakes=mistakes)
    with pytest.raises(ExerciseError, match=r"Hint: generic"):
        check_mistakes("0.1", [5.0, 3.0], [1.0, 2.0], what="v", hint="generic", mistakes=mistakes)
    with pytest.raises(ExerciseError, match=r"Hint: generic"):
        check_mistakes("0.1", "text", [1.0, 2.0], what="v", hint="generic", mistakes=mistakes)


def test_frozen_arrays_are_read_only_copies_built_from_plain_data():
    x = np.array([[1.0, -np.inf]])
    recipe = frozen(x)
    assert isinstance(recipe, Built) and recipe.kwargs == {
        "data": [[1.0, -np.inf]],
        "dtype": "float64",
    }
    built = recipe.build()
    assert np.array_equal(built, x) and not built.flags.writeable
    assert frozen(np.arange(3)).build().dtype == np.int64
    assert call_student_frozen("0.1", lambda a: a.sum(), recipe) == -np.inf

    def writes(a):
        a[0] = 0

    with pytest.raises(ExerciseError, match=r"read-only(?s:.*)changes the caller's array"):
        call_student_frozen("0.1", writes, recipe)
    with pytest.raises(ExerciseError, match=r"raised KeyError"):
        call_student_frozen("0.1", lambda a: {}[1], recipe)


def test_passed_prints_one_fixed_line(capsys):
    passed("4.2", "title")
    assert capsys.readouterr().out == "✅ Exercise 4.2 passed: title\n"
