"""positional_encoding against the notes' worked example and an independent torch formula."""

import math

import numpy as np
import pytest
import torch

from course_lib import positional_encoding


def test_notes_worked_example_d_model_4():
    # "I love to play soccer", d_model = 4, values worked by hand in the notes.
    pe = positional_encoding(5, 4)
    assert pe.shape == (5, 4)
    assert pe.dtype == np.float64
    np.testing.assert_array_equal(pe[0], [0.0, 1.0, 0.0, 1.0])
    expected_1 = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    np.testing.assert_allclose(pe[1], expected_1, rtol=0, atol=1e-15)


def test_matches_formula_written_with_python_math():
    d = 6
    pe = positional_encoding(7, d)
    for pos in range(7):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-14)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-14)


def test_matches_annotated_transformer_torch_formula():
    # The exp/log form used by the Annotated Transformer, computed in torch float64.
    n, d = 50, 32
    position = torch.arange(n, dtype=torch.float64)[:, None]
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
    ref = torch.zeros(n, d, dtype=torch.float64)
    ref[:, 0::2] = torch.sin(position * div_term)
    ref[:, 1::2] = torch.cos(position * div_term)
    np.testing.assert_allclose(positional_encoding(n, d), ref.numpy(), atol=1e-12)


def test_empty_table_and_bounds():
    assert positional_encoding(0, 8).shape == (0, 8)
    pe = positional_encoding(100, 16)
    assert np.all(np.abs(pe) <= 1.0)
    # Each sin/cos pair lies on the unit circle.
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0, atol=1e-12)


@pytest.mark.parametrize("d_model", [3, 5, 0])
def test_odd_or_zero_d_model_is_refused(d_model):
    with pytest.raises(ValueError, match=f"d_model must be a positive even number.*got {d_model}"):
        positional_encoding(4, d_model)


def test_negative_sizes_are_refused():
    with pytest.raises(ValueError, match="num_positions must be >= 0, got -1"):
        positional_encoding(-1, 4)
    with pytest.raises(ValueError, match="d_model must be >= 0, got -4"):
        positional_encoding(3, -4)


def test_non_integer_sizes_are_refused():
    with pytest.raises(TypeError, match="num_positions must be an integer"):
        positional_encoding(2.5, 4)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        positional_encoding(2, "4")
