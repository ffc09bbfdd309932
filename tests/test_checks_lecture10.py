"""The lecture 10 checks pass a right answer, and fail a plausible wrong one and the stub."""

import numpy as np
import pytest

from course_lib.checks import ExerciseError
from course_lib.checks.lecture10 import (
    check_attention_block,
    check_chunked_attention,
    check_online_update,
)


def stub(*args):
    raise NotImplementedError("Exercise: replace this line with your answer")


# Right answers, written out in plain numpy (independent of course_lib's implementation).
def good_update(m, s, block):
    m_new = max(m, float(np.max(block)))
    ref = 0.0 if m_new == -np.inf else m_new
    return m_new, s * np.exp(m - ref) + np.sum(np.exp(block - ref))


def good_block(m, s, acc, q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[1])
    m_new = np.maximum(m, scores.max(axis=1))
    r = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    return m_new, r * s + p.sum(axis=1), r[:, None] * acc + p @ v


def good_chunked(q, k, v, block_size):
    out = np.empty((q.shape[0], v.shape[1]))
    for qs in range(0, q.shape[0], block_size):
        qb = q[qs : qs + block_size]
        m, s, acc = np.full(len(qb), -np.inf), np.zeros(len(qb)), np.zeros((len(qb), v.shape[1]))
        for ks in range(0, k.shape[0], block_size):
            m, s, acc = good_block(m, s, acc, qb, k[ks : ks + block_size], v[ks : ks + block_size])
        out[qs : qs + block_size] = acc / s[:, None]
    return out


# Plausible mistakes.
def update_without_rescale(m, s, block):
    m_new = max(m, float(np.max(block)))
    ref = 0.0 if m_new == -np.inf else m_new
    return m_new, s + np.sum(np.exp(block - ref))


def update_nan_on_masked_block(m, s, block):
    m_new = max(m, float(np.max(block)))
    return m_new, s * np.exp(m - m_new) + np.sum(np.exp(block - m_new))


def block_without_acc_rescale(m, s, acc, q, k, v):
    m_new, s_new, _ = good_block(m, s, acc, q, k, v)
    scores = q @ k.T / np.sqrt(q.shape[1])
    return m_new, s_new, acc + np.exp(scores - m_new[:, None]) @ v


def chunked_dropping_last_partial_block(q, k, v, block_size):
    out = np.zeros((q.shape[0], v.shape[1]))
    for qs in range(0, q.shape[0], block_size):
        qb = q[qs : qs + block_size]
        m, s, acc = np.full(len(qb), -np.inf), np.zeros(len(qb)), np.zeros((len(qb), v.shape[1]))
        full = k.shape[0] // block_size * block_size or block_size
        for ks in range(0, full, block_size):
            m, s, acc = good_block(m, s, acc, qb, k[ks : ks + block_size], v[ks : ks + block_size])
        out[qs : qs + block_size] = acc / s[:, None]
    return out


def test_right_answers_pass(capsys):
    check_online_update(good_update)
    check_attention_block(good_block)
    check_chunked_attention(good_chunked)
    out = capsys.readouterr().out
    for ex in ("10.1", "10.2", "10.3"):
        assert f"✅ Exercise {ex} passed" in out


@pytest.mark.parametrize(
    ("check", "wrong", "match"),
    [
        (
            check_online_update,
            update_without_rescale,
            r"(?s)Exercise 10.1.*s_new.*exp\(m - m_new\)",
        ),
        (check_online_update, update_nan_on_masked_block, r"(?s)fully masked.*nan.*s = 0"),
        (check_attention_block, block_without_acc_rescale, r"(?s)Exercise 10.2.*acc_new"),
        (
            check_chunked_attention,
            chunked_dropping_last_partial_block,
            r"(?s)Exercise 10.3.*n_k = 10, block_size = 4",
        ),
    ],
)
def test_plausible_wrong_answers_fail_with_expected_and_got(check, wrong, match):
    with pytest.raises(ExerciseError, match=match) as info:
        check(wrong)
    text = str(info.value)
    # check_array reports a nan result as such; any other wrong number as expected vs got
    assert ("expected" in text and "got" in text) or "contains nan" in text
    assert "Hint:" in text


@pytest.mark.parametrize(
    "check", [check_online_update, check_attention_block, check_chunked_attention]
)
def test_stubs_fail(check):
    with pytest.raises(ExerciseError, match="still raises NotImplementedError"):
        check(stub)


def test_wrong_return_types_are_explained():
    with pytest.raises(ExerciseError, match=r"expected a pair \(m_new, s_new\)"):
        check_online_update(lambda m, s, block: 1.0)
    with pytest.raises(ExerciseError, match=r"expected a triple"):
        check_attention_block(lambda *a: (1, 2))
