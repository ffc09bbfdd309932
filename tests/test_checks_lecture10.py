"""Lecture 10 checks: right answers pass, each usual mistake fails with the hint naming it."""

import math

import numpy as np
import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.attention import scaled_dot_product_attention
from course_lib.checks import ExerciseError
from course_lib.checks.lecture10 import (
    check_attention_block,
    check_chunked_attention,
    check_online_update,
    check_overflow_points,
)

SEEDS = (0, 1, 2024)


def _ids(table):
    return [row[0] for row in table]


# --- 10.1 --------------------------------------------------------------------------------------


def online_update(m, s, block):
    m_new = max(m, float(np.max(block)))
    ref = 0.0 if m_new == -np.inf else m_new
    return m_new, s * np.exp(m - ref) + np.sum(np.exp(block - ref))


def online_update_loop(m, s, block):  # one logit at a time, with math
    for x in block:
        x = float(x)
        if x == -math.inf:
            continue
        if x > m:
            s, m = s * math.exp(m - x) + 1.0, x
        else:
            s += math.exp(x - m)
    return m, s


def _update(variant):
    def answer(m, s, block):
        if variant == "raw exp":
            total = s * np.exp(m) + np.sum(np.exp(block))
            m_new = max(m, float(np.max(block)))
            return m_new, total / np.exp(m_new)
        m_new = float(np.max(block)) if variant == "block max" else max(m, float(np.max(block)))
        ref = 0.0 if (m_new == -np.inf and variant != "nan") else m_new
        rescale = 1.0 if variant == "no rescale" else np.exp(m - ref)
        return m_new, s * rescale + np.sum(np.exp(block - ref))

    return answer


WRONG_10_1 = [
    ("no rescaling of s", _update("no rescale"), "multiply it by exp\\(m - m_new\\)"),
    ("maximum of the block only", _update("block max"), "not only of this block"),
    ("exponentiates raw logits", _update("raw exp"), "never exponentiate a raw logit"),
    ("nan on a fully masked block", _update("nan"), "subtract 0 instead"),
    ("returns one number", lambda m, s, b: s, "expected a pair"),
    ("the stub", _stub, STUB_MESSAGE),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [online_update, online_update_loop])
def test_online_update_passes_right_answers(answer, seed, capsys):
    check_online_update(answer, seed=seed)
    assert "✅ Exercise 10.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_10_1, ids=_ids(WRONG_10_1))
def test_online_update_names_the_mistake(mistake, answer, hint):
    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=hint):
        check_online_update(answer, seed=1)


# --- 10.2 --------------------------------------------------------------------------------------


def block_update(m, s, acc, qb, kb, vb, variant="right"):
    d = qb.shape[1]
    scale = {"d_k": d, "n_keys": np.sqrt(kb.shape[0]), "none": 1.0}.get(variant, np.sqrt(d))
    scores = qb @ kb.T / scale
    m_new = np.maximum(m, scores.max(axis=1))
    r = np.exp(m - m_new)
    p = np.exp(scores - m_new[:, None])
    s_new = (1.0 if variant == "no rescale" else r) * s + p.sum(axis=1)
    keep_acc = variant in ("no acc rescale", "no rescale")
    acc_new = (1.0 if keep_acc else r[:, None]) * acc + p @ vb
    return m_new, s_new, acc_new


def block_update_per_query(m, s, acc, qb, kb, vb):  # one query row at a time
    out = [], [], []
    for i in range(qb.shape[0]):
        mi, si, ai = m[i], s[i], acc[i]
        scores = kb @ qb[i] / math.sqrt(qb.shape[1])
        new_m = max(mi, scores.max())
        w = np.exp(scores - new_m)
        out[0].append(new_m)
        out[1].append(si * math.exp(mi - new_m) + w.sum())
        out[2].append(ai * math.exp(mi - new_m) + w @ vb)
    return np.array(out[0]), np.array(out[1]), np.array(out[2])


WRONG_10_2 = [
    ("acc not rescaled", lambda *a: block_update(*a, variant="no acc rescale"), "acc was accumulated"),
    ("nothing rescaled", lambda *a: block_update(*a, variant="no rescale"), "rescale BOTH"),
    ("scaled by d_k", lambda *a: block_update(*a, variant="d_k"), "not by d_k"),
    ("scaled by the number of keys", lambda *a: block_update(*a, variant="n_keys"), "not the number of keys"),
    ("not scaled", lambda *a: block_update(*a, variant="none"), "scale the scores"),
    ("returns a pair", lambda *a: block_update(*a)[:2], "expected a triple"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [block_update, block_update_per_query])
def test_attention_block_passes_right_answers(answer, seed, capsys):
    check_attention_block(answer, seed=seed)
    assert "✅ Exercise 10.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_10_2, ids=_ids(WRONG_10_2))
def test_attention_block_names_the_mistake(mistake, answer, hint):
    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=hint):
        check_attention_block(answer, seed=1)


# --- 10.3 --------------------------------------------------------------------------------------


def chunked(q, k, v, block_size, variant="right"):
    out = np.empty_like(q) if variant == "empty_like q" else np.empty((q.shape[0], v.shape[1]))
    n_k = k.shape[0] - (k.shape[0] % block_size if variant == "drops keys" else 0)
    for qs in range(0, q.shape[0], block_size):
        qb = q[qs : qs + block_size]
        m, s, acc = np.full(len(qb), -np.inf), np.zeros(len(qb)), np.zeros((len(qb), v.shape[1]))
        for ks in range(0, n_k, block_size):
            m, s, acc = block_update(
                m, s, acc, qb, k[ks : ks + block_size], v[ks : ks + block_size]
            )
        out[qs : qs + block_size] = acc if variant == "no division" else acc / s[:, None]
    return out


def chunked_keys_outer(q, k, v, block_size):  # keys in the outer loop, all queries at once
    m, s = np.full(q.shape[0], -np.inf), np.zeros(q.shape[0])
    acc = np.zeros((q.shape[0], v.shape[1]))
    for ks in range(0, k.shape[0], block_size):
        m, s, acc = block_update(m, s, acc, q, k[ks : ks + block_size], v[ks : ks + block_size])
    return acc / s[:, None]


def plain_attention(q, k, v, block_size):  # the review's wrong answer: no chunking at all
    return scaled_dot_product_attention(q, k, v)[0]


def query_blocks_only(q, k, v, block_size):  # the review's other one: query blocks x all keys
    out = np.empty((q.shape[0], v.shape[1]))
    for qs in range(0, q.shape[0], block_size):
        out[qs : qs + block_size] = scaled_dot_product_attention(q[qs : qs + block_size], k, v)[0]
    return out


WRONG_10_3 = [
    ("no chunking", plain_attention, "held .* MB at once: about the full n x n score matrix"),
    ("query blocks only", query_blocks_only, "block_size x n strip"),
    ("keys outer, all queries at once", chunked_keys_outer, "block_size x n strip"),
    ("output shaped like q", lambda *a: chunked(*a, variant="empty_like q"), "np.empty_like\\(q\\)"),
    ("drops the last key block", lambda *a: chunked(*a, variant="drops keys"), "last key block is shorter"),
    ("no division by s", lambda *a: chunked(*a, variant="no division"), "divide acc by"),
    ("the stub", _stub, STUB_MESSAGE),
]  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", [chunked])
def test_chunked_passes_right_answers(answer, seed, capsys):
    check_chunked_attention(answer, seed=seed)
    assert "✅ Exercise 10.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(("mistake", "answer", "hint"), WRONG_10_3, ids=_ids(WRONG_10_3))
def test_chunked_names_the_mistake(mistake, answer, hint):
    with np.errstate(all="ignore"), pytest.raises(ExerciseError, match=hint):
        check_chunked_attention(answer, seed=1)


# --- 10.4 (predict, then measure) --------------------------------------------------------------


def first_inf(dtype):  # the solution's measurement
    with np.errstate(over="ignore"):
        return next(x for x in range(1000) if np.isinf(np.exp(np.dtype(dtype).type(x))))


@pytest.mark.parametrize("seed", SEEDS)
def test_overflow_points_are_what_numpy_measures(seed, capsys):
    assert (first_inf("float32"), first_inf("float64"), first_inf("float16")) == (89, 710, 12)
    assert math.ceil(math.log(np.finfo(np.float32).max)) == 89
    check_overflow_points(first_inf, seed=seed)
    check_overflow_points(lambda d: np.int64(first_inf(d)), seed=seed)
    assert capsys.readouterr().out.count("✅ Exercise 10.4 passed") == 2


def test_the_summary_numbers_fail_on_a_hidden_type():
    table = {"float32": 89, "float64": 710}
    check_overflow_points(table.get)
    with pytest.raises(ExerciseError, match="float16.*got None"):
        check_overflow_points(table.get, seed=1)


@pytest.mark.parametrize(
    ("f32", "f64", "hint"),
    [
        (88, 710, "too low(?s:.*)still finite in float32"),
        (89, 709, "too low(?s:.*)still finite in float64"),
        (710, 89, "where float64 overflows"),
        (100, 710, "too high"),
        (88.7, 709.8, "expected an integer"),
    ],
)
def test_overflow_points_name_the_mistake_without_the_value(f32, f64, hint):
    answer = {"float32": f32, "float64": f64}.get
    with pytest.raises(ExerciseError, match=hint) as err:
        check_overflow_points(answer)
    text = str(err.value).replace(str(f32), "").replace(str(f64), "")
    assert "89" not in text and "710" not in text
