"""softmax / log_softmax / naive_softmax against torch and against the notes' worked example."""

import math

import numpy as np
import pytest
import torch

from course_lib import log_softmax, naive_softmax, softmax


def _torch_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return torch.softmax(torch.from_numpy(x), dim=axis).numpy()


def _torch_log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return torch.log_softmax(torch.from_numpy(x), dim=axis).numpy()


# --- against torch -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (2, 3, 4), (2, 1, 3, 6)])
def test_softmax_matches_torch_float64(shape):
    x = np.random.default_rng(1).normal(scale=5.0, size=shape)
    got = softmax(x)
    assert got.dtype == np.float64 and got.shape == shape
    np.testing.assert_allclose(got, _torch_softmax(x), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_softmax_axis_argument_matches_torch_dim(axis):
    x = np.random.default_rng(2).normal(size=(3, 4, 5))
    got = softmax(x, axis=axis)
    np.testing.assert_allclose(got, _torch_softmax(x, axis), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=0, atol=1e-12)


def test_softmax_keeps_float32():
    x = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float32)
    got = softmax(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _torch_softmax(x), rtol=1e-6, atol=1e-7)
    lg = log_softmax(x)
    assert lg.dtype == np.float32
    np.testing.assert_allclose(lg, _torch_log_softmax(x), rtol=1e-5, atol=1e-6)


def test_integer_and_list_input_become_float64():
    got = softmax([1, 2, 3])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _torch_softmax(np.array([1.0, 2.0, 3.0])), atol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("axis", [-1, 0])
def test_log_softmax_matches_torch(shape, axis):
    x = np.random.default_rng(4).normal(scale=3.0, size=shape)
    got = log_softmax(x, axis=axis)
    np.testing.assert_allclose(got, _torch_log_softmax(x, axis), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.exp(got), softmax(x, axis=axis), rtol=0, atol=1e-12)


# --- numerical stability -------------------------------------------------------------------


@pytest.mark.parametrize("big", [1e4, -1e4])
def test_no_overflow_for_huge_logits(big):
    x = np.array([[big, big - 1.0, big - 2.0], [big, -big, 0.0]])
    # overflow or inf - inf would raise here (underflow to exactly 0 is fine)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        got = softmax(x)
        lg = log_softmax(x)
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(lg))
    np.testing.assert_allclose(got, _torch_softmax(x), rtol=0, atol=1e-12)
    np.testing.assert_allclose(lg, _torch_log_softmax(x), rtol=1e-12, atol=1e-9)
    # shifting by a constant changes nothing: softmax(x) == softmax(x - big), worked by hand
    e = [math.exp(0.0), math.exp(-1.0), math.exp(-2.0)]
    np.testing.assert_allclose(got[0], [v / sum(e) for v in e], rtol=1e-13)


def test_huge_logits_float32_stay_finite():
    x = np.array([1e4, 1e4 - 1.0, -1e4], dtype=np.float32)
    got = softmax(x)
    assert got.dtype == np.float32 and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, _torch_softmax(x), rtol=1e-6, atol=1e-7)


def test_naive_softmax_overflows_where_stable_does_not():
    x = np.array([1000.0, 999.0, 998.0])
    assert np.all(np.isnan(naive_softmax(x)))  # exp(1000) = inf and inf / inf = nan
    np.testing.assert_allclose(softmax(x), _torch_softmax(x), atol=1e-12)
    small = np.random.default_rng(5).normal(size=(3, 4))
    np.testing.assert_allclose(naive_softmax(small), _torch_softmax(small), atol=1e-12)
    np.testing.assert_allclose(naive_softmax(small, axis=0), _torch_softmax(small, 0), atol=1e-12)


def test_minus_inf_gets_exactly_zero():
    x = np.array([[2.0, -np.inf, 0.5], [-np.inf, 1.0, -np.inf]])
    got = softmax(x)
    assert got[0, 1] == 0.0 and got[1, 0] == 0.0 and got[1, 2] == 0.0
    assert got[1, 1] == 1.0
    np.testing.assert_allclose(got, _torch_softmax(x), rtol=0, atol=1e-12)
    # the unmasked entries behave as if the masked one were not there, worked by hand
    a, b = math.exp(2.0), math.exp(0.5)
    np.testing.assert_allclose(got[0], [a / (a + b), 0.0, b / (a + b)], rtol=1e-13)
    lg = log_softmax(x)
    assert lg[0, 1] == -np.inf and lg[1, 1] == 0.0
    np.testing.assert_allclose(lg, _torch_log_softmax(x), rtol=0, atol=1e-12)


# --- the notes' worked example -----------------------------------------------------------


def test_notes_worked_example_112_96_dk_64():
    # q.k = 112 and 96 with d_k = 64: scaled by sqrt(64) = 8 they become 14 and 12.
    scores = np.array([112.0, 96.0])
    scaled = scores / math.sqrt(64)
    assert scaled.tolist() == [14.0, 12.0]
    e14, e12 = math.exp(14), math.exp(12)
    assert e14 == pytest.approx(1.2026e6, rel=1e-4)
    assert e12 == pytest.approx(1.6275e5, rel=1e-4)
    assert e14 + e12 == pytest.approx(1.3654e6, rel=1e-4)
    got = softmax(scaled)
    np.testing.assert_allclose(got, [e14 / (e14 + e12), e12 / (e14 + e12)], rtol=1e-14)
    assert round(float(got[0]), 2) == 0.88 and round(float(got[1]), 2) == 0.12
    # the same probabilities follow from the difference alone: 1 / (1 + e^-2)
    assert got[0] == pytest.approx(1.0 / (1.0 + math.exp(-2.0)), rel=1e-14)


def test_equal_scores_give_uniform_weights():
    np.testing.assert_array_equal(softmax(np.full(4, 3.0)), np.full(4, 0.25))
    np.testing.assert_allclose(log_softmax(np.full(4, 3.0)), np.full(4, -math.log(4)), rtol=1e-15)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_errors_name_the_argument(fn):
    with pytest.raises(ValueError, match=r"x is empty \(shape \(0,\)\)"):
        fn(np.array([]))
    with pytest.raises(TypeError, match=r"x must contain real numbers, got dtype <U1"):
        fn(["a", "b"])
    with pytest.raises(TypeError, match=r"x must contain real numbers, got dtype complex"):
        fn(np.array([1 + 2j, 3.0]))
    with pytest.raises(ValueError, match=r"x contains nan"):
        fn(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"x contains \+inf"):
        fn(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match=r"x has a row whose entries are all -inf"):
        fn(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match=r"axis=2 is out of range for x of shape \(2, 3\)"):
        fn(np.zeros((2, 3)), axis=2)
    with pytest.raises(ValueError, match=r"axis=-3 is out of range for x of shape \(2, 3\)"):
        fn(np.zeros((2, 3)), axis=-3)
    with pytest.raises(ValueError, match=r"axis=1.0 is out of range"):
        fn(np.zeros((2, 3)), axis=1.0)


def test_naive_softmax_validates_too():
    with pytest.raises(TypeError, match=r"x must contain real numbers"):
        naive_softmax(["a"])
    with pytest.raises(ValueError, match=r"axis=1 is out of range for x of shape \(3,\)"):
        naive_softmax(np.zeros(3), axis=1)
