"""Lecture 02 checks: each passes a right answer, and fails wrong answers and stubs loudly."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture02 import (
    check_causal_mask,
    check_masked_attention,
    check_self_attention,
)


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- reference answers, written the way a student would ------------------------------------


def self_attention(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    a = _softmax_rows(q @ k.T / np.sqrt(k.shape[-1]))
    return a @ v


def causal(n):
    i, j = np.indices((n, n))
    return j <= i


def masked_attention(q, k, v, mask):
    scores = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
    a = _softmax_rows(scores)
    return a @ v, a


# --- Exercise 2.1 --------------------------------------------------------------------------


def test_self_attention_passes_reference(capsys):
    check_self_attention(self_attention)
    assert (
        capsys.readouterr().out == "✅ Exercise 2.1 passed: self-attention from X, W_Q, W_K, W_V\n"
    )


def test_self_attention_passes_a_torch_answer_written_differently():
    def with_torch(x, w_q, w_k, w_v):
        t = [torch.from_numpy(a) for a in (x, w_q, w_k, w_v)]
        q, k, v = (t[0] @ w for w in t[1:])
        return F.scaled_dot_product_attention(q, k, v).numpy()

    check_self_attention(with_torch)


def test_self_attention_fails_scaling_by_d_k():
    def by_d_k(x, w_q, w_k, w_v):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        return _softmax_rows(q @ k.T / k.shape[-1]) @ v

    with pytest.raises(ExerciseError, match=r"Z for a sentence of 4 tokens") as err:
        check_self_attention(by_d_k)
    text = str(err.value)
    assert "expected" in text and "got" in text and "sqrt(d_k)" in text


def test_self_attention_fails_softmax_over_the_wrong_axis():
    def columns(x, w_q, w_k, w_v):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        return _softmax_rows((q @ k.T / np.sqrt(k.shape[-1])).T).T @ v

    with pytest.raises(ExerciseError, match=r"(?s)\n  expected .*\n  got "):
        check_self_attention(columns)


def test_self_attention_reports_a_shape_crash():
    def transposed_weights(x, w_q, w_k, w_v):
        return self_attention(x, w_q.T, w_k.T, w_v.T)

    with pytest.raises(ExerciseError, match=r"your function raised ValueError"):
        check_self_attention(transposed_weights)


def test_self_attention_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_self_attention(_stub)


# --- Exercise 2.2 --------------------------------------------------------------------------


def test_causal_mask_passes_reference(capsys):
    check_causal_mask(causal)
    check_causal_mask(lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool)).numpy())
    assert capsys.readouterr().out == "✅ Exercise 2.2 passed: causal mask\n" * 2


def test_causal_mask_fails_when_transposed():
    with pytest.raises(ExerciseError, match=r"for n=3:\n  expected\n") as err:
        check_causal_mask(lambda n: np.triu(np.ones((n, n), dtype=bool)))
    text = str(err.value)
    assert "got\n[[1 1 1]\n [0 1 1]\n [0 0 1]]" in text
    assert "on and below the diagonal" in text


def test_causal_mask_fails_strictly_lower_triangle():
    with pytest.raises(ExerciseError, match=r"for n=1:\n  expected\n\[\[1\]\]\n  got\n\[\[0\]\]"):
        check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1))


def test_causal_mask_fails_integer_mask():
    with pytest.raises(ExerciseError, match=r"dtype (int|float)64, expected bool"):
        check_causal_mask(lambda n: np.tril(np.ones((n, n))))


def test_causal_mask_fails_wrong_shape():
    with pytest.raises(ExerciseError, match=r"shape of the mask for n=3:\n  expected \(3, 3\)"):
        check_causal_mask(lambda n: np.ones((n, n + 1), dtype=bool) if n > 1 else causal(1))


def test_causal_mask_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_causal_mask(_stub)


# --- Exercise 2.3 --------------------------------------------------------------------------


def test_masked_attention_passes_reference(capsys):
    check_masked_attention(masked_attention)
    assert capsys.readouterr().out == "✅ Exercise 2.3 passed: masked attention\n"


def test_masked_attention_passes_renormalising_after_the_softmax():
    # Zeroing masked weights and renormalising each row is the same distribution: accept it.
    def renormalise(q, k, v, mask):
        a = _softmax_rows(q @ k.T / np.sqrt(q.shape[-1])) * mask
        a = a / a.sum(axis=-1, keepdims=True)
        return a @ v, a

    check_masked_attention(renormalise)


def test_masked_attention_fails_mask_applied_after_softmax():
    def after(q, k, v, mask):
        a = _softmax_rows(q @ k.T / np.sqrt(q.shape[-1])) * mask  # rows no longer sum to 1
        return a @ v, a

    with pytest.raises(ExerciseError, match=r"attention weights A with a causal mask") as err:
        check_masked_attention(after)
    text = str(err.value)
    assert "expected" in text and "got" in text and "BEFORE the softmax" in text


def test_masked_attention_fails_transposed_mask():
    with pytest.raises(ExerciseError, match=r"(?s)\n  expected .*\n  got "):
        check_masked_attention(lambda q, k, v, m: masked_attention(q, k, v, m.T))


def test_masked_attention_fails_wrong_return_value():
    with pytest.raises(ExerciseError, match=r"expected a tuple \(Z, A\), got ndarray"):
        check_masked_attention(lambda q, k, v, m: masked_attention(q, k, v, m)[0])
    with pytest.raises(ExerciseError, match=r"output Z with a causal mask"):
        check_masked_attention(lambda q, k, v, m: (q, masked_attention(q, k, v, m)[1]))


def test_masked_attention_fails_stub():
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_masked_attention(_stub)
