"""The shared input checks: what they accept, what they refuse, and what their messages say."""

import numpy as np
import pytest
import torch

from course_lib._validation import (
    as_bool_mask,
    as_float_array,
    broadcast_shape,
    check_positive_int,
)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        ([1, 2, 3], np.float64),
        (np.array([1, 2], dtype=np.int8), np.float64),
        (np.array([1, 2], dtype=np.uint16), np.float64),
        (np.array([True, False]), np.float64),
        (np.array([1.5], dtype=np.float16), np.float16),
        (np.array([1.5], dtype=np.float32), np.float32),
        (np.array([1.5]), np.float64),
        (3.0, np.float64),
    ],
)
def test_as_float_array_promotes_integers_and_keeps_float_dtypes(value, dtype):
    arr = as_float_array(value, "x")
    assert arr.dtype == dtype
    np.testing.assert_array_equal(arr, np.asarray(value, dtype=dtype))


def test_as_float_array_takes_torch_tensors():
    t = torch.tensor([[1.0, 2.0]], dtype=torch.float32)
    arr = as_float_array(t, "x")
    assert arr.dtype == np.float32
    np.testing.assert_array_equal(arr, [[1.0, 2.0]])


def test_as_float_array_does_not_copy_float_input():
    x = np.zeros(3)
    assert as_float_array(x, "x") is x


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (["a", "b"], r"scores must contain real numbers, got dtype <U1 \(list\)"),
        (np.array([1j]), r"scores must contain real numbers, got dtype complex128"),
        (
            np.array([None, 1.0], dtype=object),
            r"scores must contain real numbers, got dtype object",
        ),
        ("hello", r"scores must contain real numbers, got dtype <U5 \(str\)"),
        ([[1.0, 2.0], [3.0]], r"scores must be an array of numbers, got list"),
    ],
)
def test_as_float_array_refuses_non_numeric(value, pattern):
    with pytest.raises(TypeError, match=pattern):
        as_float_array(value, "scores")


def test_as_float_array_dimension_and_size_errors():
    with pytest.raises(
        ValueError, match=r"q must have at least 2 dimension\(s\), got shape \(3,\)"
    ):
        as_float_array(np.zeros(3), "q", min_ndim=2)
    with pytest.raises(ValueError, match=r"k is empty \(shape \(2, 0\)\)"):
        as_float_array(np.zeros((2, 0)), "k")
    assert as_float_array(np.zeros((1, 1)), "q", min_ndim=2).shape == (1, 1)


def test_as_bool_mask():
    m = np.array([[True, False]])
    assert as_bool_mask(m) is m
    np.testing.assert_array_equal(as_bool_mask([[True, False]]), m)
    np.testing.assert_array_equal(as_bool_mask(torch.tensor([True, False])), [True, False])
    with pytest.raises(TypeError, match=r"mask must be boolean \(True = may attend\), got dtype"):
        as_bool_mask(np.array([1, 0]))
    with pytest.raises(TypeError, match=r"attn_mask must be boolean .* got dtype float64"):
        as_bool_mask(np.array([1.0, 0.0]), "attn_mask")


def test_check_positive_int():
    assert check_positive_int(3, "n") == 3
    value = check_positive_int(np.int64(4), "n")
    assert value == 4 and type(value) is int
    assert check_positive_int(0, "n", allow_zero=True) == 0
    with pytest.raises(ValueError, match=r"n must be >= 1, got 0"):
        check_positive_int(0, "n")
    with pytest.raises(ValueError, match=r"steps must be >= 0, got -1"):
        check_positive_int(-1, "steps", allow_zero=True)
    with pytest.raises(TypeError, match=r"n must be an integer, got float 3.0"):
        check_positive_int(3.0, "n")
    with pytest.raises(TypeError, match=r"n must be an integer, got bool True"):
        check_positive_int(True, "n")
    with pytest.raises(TypeError, match=r"n must be an integer, got str '3'"):
        check_positive_int("3", "n")


def test_broadcast_shape():
    assert broadcast_shape({"a": (2, 1), "b": (3,), "c": ()}) == (2, 3)
    assert broadcast_shape({"a": (2, 1, 4), "b": (5, 1)}) == (2, 5, 4)  # by hand
    with pytest.raises(ValueError, match=r"shapes do not broadcast: q \(2,\), k \(3,\), v \(1,\)"):
        broadcast_shape({"q": (2,), "k": (3,), "v": (1,)})
