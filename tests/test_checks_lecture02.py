"""Lecture 02 checks: right answers pass, each usual mistake fails with the hint naming it."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture02 import (
    check_attends_elsewhere,
    check_causal_mask,
    check_masked_attention,
    check_self_attention,
)

SEEDS = (0, 1, 2024)


def _softmax_rows(s, axis=-1):
    with np.errstate(all="ignore"):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


# --- Exercise 2.1 --------------------------------------------------------------------------


def self_attention(x, w_q, w_k, w_v):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return _softmax_rows(q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1])) @ v


def self_attention_2d(x, w_q, w_k, w_v):  # the textbook 2-D version: right only without a batch
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return _softmax_rows(q @ k.T / np.sqrt(k.shape[-1])) @ v


def self_attention_torch(x, w_q, w_k, w_v):
    t = [torch.from_numpy(a) for a in (x, w_q, w_k, w_v)]
    q, k, v = (t[0] @ w for w in t[1:])
    return F.scaled_dot_product_attention(q, k, v).numpy()


def _sa(score_fn, out=lambda a, v: a @ v):
    def answer(x, w_q, w_k, w_v):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        return out(score_fn(q, k, x), v)

    return answer


WRONG_2_1 = [
    ("scales by sqrt(d_model)", _sa(lambda q, k, x: _softmax_rows(q @ k.T / np.sqrt(x.shape[-1]))),
     "not by sqrt\\(d_model\\)"),
    ("divides by d_k", _sa(lambda q, k, x: _softmax_rows(q @ k.T / k.shape[-1])), "SQUARE ROOT"),
    ("no scaling", _sa(lambda q, k, x: _softmax_rows(q @ k.T)), "before the softmax"),
    ("softmax over columns", _sa(lambda q, k, x: _softmax_rows(q @ k.T / np.sqrt(k.shape[-1]), 0)),
     "not down the columns"),
    ("K Q^T", _sa(lambda q, k, x: _softmax_rows(k @ q.T / np.sqrt(k.shape[-1]))), "transposes"),
    ("returns A", _sa(lambda q, k, x: _softmax_rows(q @ k.T / np.sqrt(k.shape[-1])), lambda a, v: a),
     "not the weights A"),
    ("keys from W_Q", lambda x, w_q, w_k, w_v: self_attention(x, w_q, w_q, w_v), "own matrix"),
    ("K.T on a batch", self_attention_2d, "reverses ALL axes"),
    ("loops over batch 1 only", lambda x, w_q, w_k, w_v: self_attention(x.reshape(-1, x.shape[-1]), w_q, w_k, w_v),
     "reverses ALL axes"),
    ("transposed weights crash", lambda x, w_q, w_k, w_v: self_attention(x, w_q.T, w_k.T, w_v.T),
     "raised ValueError"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [self_attention, self_attention_torch])
def test_self_attention_passes_right_answers(answer, seed, capsys):
    check_self_attention(answer, seed=seed)
    assert (
        capsys.readouterr().out == "✅ Exercise 2.1 passed: self-attention from X, W_Q, W_K, W_V\n"
    )


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_2_1, ids=[w[0] for w in WRONG_2_1])
def test_self_attention_names_the_mistake(mistake, answer, hint, seed):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_self_attention(answer, seed=seed)
    assert "is not right yet" in str(err.value)


# --- Exercise 2.2 --------------------------------------------------------------------------


def causal(n):
    i, j = np.indices((n, n))
    return j <= i


WRONG_2_2 = [
    ("opposite convention", lambda n: np.triu(np.ones((n, n), dtype=bool), k=1), "opposite convention"),
    ("strictly lower", lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1), "diagonal must be True"),
    ("upper triangle", lambda n: np.triu(np.ones((n, n), dtype=bool)), "upper triangle"),
    ("all True", lambda n: np.ones((n, n), dtype=bool), "on and below the diagonal"),
    ("float 0/1 mask", lambda n: np.tril(np.ones((n, n))), "expected bool"),
    ("wrong shape", lambda n: np.ones((n, n + 1), dtype=bool), r"expected \(3, 3\)"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "answer", [causal, lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool)).numpy()]
)
def test_causal_mask_passes_right_answers(answer, seed, capsys):
    check_causal_mask(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 2.2 passed: causal mask\n"


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_2_2, ids=[w[0] for w in WRONG_2_2])
def test_causal_mask_names_the_mistake(mistake, answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_causal_mask(answer, seed=5)


def test_causal_mask_shows_expected_and_got():
    with pytest.raises(ExerciseError, match=r"for n=3:\n  expected\n") as err:
        check_causal_mask(lambda n: np.triu(np.ones((n, n), dtype=bool)))
    assert "got\n[[1 1 1]\n [0 1 1]\n [0 0 1]]" in str(err.value)


# --- Exercise 2.3 --------------------------------------------------------------------------


def masked_attention(q, k, v, mask):
    scores = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), -np.inf)
    a = _softmax_rows(scores)
    return a @ v, a


def masked_attention_renormalised(q, k, v, mask):
    # zeroing hidden weights and renormalising each row is the same distribution
    a = _softmax_rows(q @ k.T / np.sqrt(q.shape[-1])) * mask
    a = a / a.sum(axis=-1, keepdims=True)
    return a @ v, a


def _after_softmax(q, k, v, mask):
    a = _softmax_rows(q @ k.T / np.sqrt(q.shape[-1])) * mask
    return a @ v, a


WRONG_2_3 = [
    ("opposite convention", lambda q, k, v, m: masked_attention(q, k, v, ~m), "opposite convention"),
    ("mask after the softmax", _after_softmax, "do not sum to 1"),
    ("adds the mask", lambda q, k, v, m: (lambda a: (a @ v, a))(
        _softmax_rows(q @ k.T / np.sqrt(q.shape[-1]) + m)), "not added to the scores"),
    ("returns (A, Z)", lambda q, k, v, m: masked_attention(q, k, v, m)[::-1], r"in this order"),
    ("returns only Z", lambda q, k, v, m: masked_attention(q, k, v, m)[0], r"expected a tuple \(Z, A\)"),
    ("wrong Z", lambda q, k, v, m: (q, masked_attention(q, k, v, m)[1]), r"Z = A @ V"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [masked_attention, masked_attention_renormalised])
def test_masked_attention_passes_right_answers(answer, seed, capsys):
    check_masked_attention(answer, seed=seed)
    assert capsys.readouterr().out == "✅ Exercise 2.3 passed: masked attention\n"


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_2_3, ids=[w[0] for w in WRONG_2_3])
def test_masked_attention_names_the_mistake(mistake, answer, hint, seed):
    with pytest.raises(ExerciseError, match=hint):
        check_masked_attention(answer, seed=seed)


# --- Exercise 2.4 (construct a counter-example) ----------------------------------------------


def _elsewhere(x0, share):  # the solution: x_1 = c x_0 long enough, x_2 = 0
    s = x0 @ x0 / np.sqrt(2)
    c = (np.log(share / (1 - share)) + np.log1p(np.exp(s)) + 1.0) / s
    return np.array([x0, c * x0, np.zeros_like(x0)])


def _elsewhere_other(x0, share):  # another right answer: x_2 = -x_0 and a generous factor
    return np.array([x0, (1 + 20 / (x0 @ x0)) * x0, -x0], dtype=np.float32)


@pytest.mark.parametrize("fn", [_elsewhere, _elsewhere_other])
@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_attends_elsewhere_accepts_every_right_answer(fn, seed, capsys):
    check_attends_elsewhere(fn, seed=seed)
    assert "✅ Exercise 2.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (
            lambda x0, s: np.array([x0, [-x0[1], x0[0]], [0, 0]]),
            "enough that x_0 · x_1 > x_0 · x_0",
        ),
        (lambda x0, s: np.array([x0, -5 * x0, [0, 0]]), "must point partly the same way"),
        (lambda x0, s: np.array([x0, x0, [0, 0]]), "two equal tokens"),
        (lambda x0, s: np.array([x0, 1.5 * x0, [0, 0]]), "not by enough"),
        (
            lambda x0, s: np.array([[1.0, 0.0], [5.0, 0.0], [0.0, 0.0]]),
            "row 0 of X must be the token x0",
        ),
        (lambda x0, s: np.array([x0, 5 * x0]), r"expected a \(3, 2\) array"),
        (lambda x0, s: np.array([x0, [np.inf, 0.0], [0.0, 0.0]]), "finite"),
        (lambda x0, s: "ab", "expected a"),
    ],
)
def test_attends_elsewhere_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_attends_elsewhere(fn)


def test_attends_elsewhere_a_fixed_factor_fails_on_hidden_inputs():
    fixed = lambda x0, s: np.array([x0, 5 * x0, np.zeros(2)])  # noqa: E731 (the old answer)
    check_attends_elsewhere(fixed)  # the notebook's inputs ...
    with pytest.raises(ExerciseError, match="not by enough"):
        for seed in range(1, 6):  # ... but not a short x_0 or a share of 0.999
            check_attends_elsewhere(fixed, seed=seed)
