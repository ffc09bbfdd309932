"""Head summaries against hand-worked matrices and explicit torch loops."""

import numpy as np
import pytest
import torch

from course_lib import attention_to_positions, offset_score, top_attended, weighted_value_norms

# Worked by hand: 3 tokens. Row 0 looks at itself; rows 1 and 2 look one back (0.8, 0.6).
A = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.8, 0.2, 0.0],
        [0.1, 0.6, 0.3],
    ]
)


def test_offset_score_by_hand():
    assert offset_score(A, -1) == pytest.approx((0.8 + 0.6) / 2)
    assert offset_score(A, 0) == pytest.approx((1.0 + 0.2 + 0.3) / 3)
    assert offset_score(A, 1) == pytest.approx((0.0 + 0.0) / 2)
    assert offset_score(A, -2) == pytest.approx(0.1)


def test_offset_score_over_layers_and_heads_matches_a_loop():
    a = torch.softmax(torch.randn(2, 3, 5, 5, dtype=torch.float64), dim=-1)
    got = offset_score(a.numpy(), -1)
    expected = torch.zeros(2, 3, dtype=torch.float64)
    for i in range(1, 5):
        expected += a[:, :, i, i - 1] / 4
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-12)


def test_attention_to_positions_by_hand():
    assert attention_to_positions(A, [0]) == pytest.approx((1.0 + 0.8 + 0.1) / 3)
    assert attention_to_positions(A, [0, -1]) == pytest.approx((1.0 + 0.8 + 0.4) / 3)
    assert attention_to_positions(A, [2, -1]) == pytest.approx(0.3 / 3)  # counted once
    stacked = np.stack([A, A.T])
    np.testing.assert_allclose(attention_to_positions(stacked, 0), [1.9 / 3, 1.0 / 3])


def test_top_attended_by_hand():
    tokens = ["[CLS]", "it", "[SEP]"]
    assert top_attended(A[2], tokens, k=2) == [("it", 0.6), ("[SEP]", 0.3)]
    assert top_attended([0.5, 0.5, 0.0], tokens, k=5) == [
        ("[CLS]", 0.5),
        ("it", 0.5),
        ("[SEP]", 0.0),
    ]


def test_weighted_value_norms_matches_torch_terms():
    w = torch.softmax(torch.randn(2, 4, 4, dtype=torch.float64), dim=-1)
    v = torch.randn(2, 4, 3, dtype=torch.float64)
    terms = w[..., :, :, None] * v[..., None, :, :]  # (2, n_q, n_k, d_v): each term of w @ v
    np.testing.assert_allclose(terms.sum(-2).numpy(), (w @ v).numpy())  # they are the terms
    expected = torch.linalg.vector_norm(terms, dim=-1)
    np.testing.assert_allclose(weighted_value_norms(w.numpy(), v.numpy()), expected.numpy())


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: offset_score(np.ones((2, 3)), 1), ValueError, r"self-attention \(\.\.\., n, n\)"),
        (lambda: offset_score(A, 3), ValueError, r"offset must be between -2 and 2"),
        (lambda: offset_score(A, 1.0), TypeError, r"offset must be an integer"),
        (lambda: attention_to_positions(A, [3]), ValueError, r"position 3 is out of range"),
        (lambda: attention_to_positions(A, []), ValueError, r"positions is empty"),
        (lambda: top_attended(A, ["a", "b", "c"]), ValueError, r"one row \(n_k,\)"),
        (lambda: top_attended(A[0], ["a"]), ValueError, r"tokens has 1 entries but weights has 3"),
        (lambda: top_attended(A[0], ["a", "b", "c"], k=0), ValueError, r"k must be >= 1"),
        (lambda: weighted_value_norms(A, np.ones((2, 4))), ValueError,
         r"weights has 3 keys .* values has 2 rows"),
    ],
)  # fmt: skip
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
