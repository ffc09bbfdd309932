"""Lecture 13 checks: right answers (two ways each) pass; realistic mistakes get their hint; the
stub fails; hidden seeds give the same verdicts."""

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib import KVCache
from course_lib.checks import ExerciseError
from course_lib.checks.lecture13 import (
    ROPE_FAULTS,
    check_cache_values,
    check_diagnose_rope,
    check_repeat_kv_heads,
    check_rms_norm,
    check_rotate_pairs,
)

# --- right answers, written independently of course_lib ------------------------------------


def rotate_complex(x, positions, theta):
    # Each pair as a complex number x_2i + j x_2i+1, multiplied by exp(j * m * omega_i).
    d = x.shape[-1]
    omega = theta ** (-np.arange(0, d, 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(positions, omega))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rotate_matrices(x, positions, theta):
    # A d x d block-diagonal rotation matrix per row.
    n, d = x.shape
    out = np.empty_like(x)
    for r in range(n):
        R = np.zeros((d, d))
        for i in range(d // 2):
            a = positions[r] / theta ** (2 * i / d)
            R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [
                [np.cos(a), -np.sin(a)],
                [np.sin(a), np.cos(a)],
            ]
        out[r] = R @ x[r]
    return out


def rms_plain(x, weight, eps):
    return weight * x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps)


def rms_via_norm(x, weight, eps):
    d = x.shape[-1]
    rms = np.sqrt(np.linalg.norm(x, axis=-1, keepdims=True) ** 2 / d + eps)
    return (x / rms) * weight


def repeat_np(kv, num_heads):
    return np.repeat(kv, num_heads // kv.shape[-3], axis=-3)


def repeat_by_index(kv, num_heads):
    group = num_heads // kv.shape[-3]
    return np.stack([kv[..., h // group, :, :] for h in range(num_heads)], axis=-3)


def cache_measured(model, seq_len, batch):
    cache = KVCache()
    with torch.no_grad():
        model(torch.zeros(batch, seq_len, dtype=torch.long), cache)
    return cache.numel()


def cache_formula(model, seq_len, batch):  # the prediction, read off the model it is given
    c = model.config
    return 2 * c.num_layers * c.num_kv_heads * (c.d_model // c.num_heads) * seq_len * batch


def cache_exercise_numbers(model, seq_len, batch):  # the review's: the formula, no model
    return 2 * 3 * model.config.num_kv_heads * 4 * seq_len * batch


# --- mistakes -------------------------------------------------------------------------------


def rotate_halves(x, positions, theta):
    d = x.shape[-1]
    h = d // 2
    omega = theta ** (-np.arange(0, d, 2) / d)
    a = np.outer(positions, omega)
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * np.cos(a) - x2 * np.sin(a), x2 * np.cos(a) + x1 * np.sin(a)], -1)


def rotate_clockwise(x, positions, theta):
    return rotate_complex(x, -np.asarray(positions), theta)


def rotate_i_over_d(x, positions, theta):
    d = x.shape[-1]
    omega = theta ** (-np.arange(d // 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(positions, omega))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rotate_from_one(x, positions, theta):
    return rotate_complex(x, np.asarray(positions) + 1, theta)


PREDICTED_13_4 = (3840, 1920, 480)  # 2 (K, V) x 3 layers x 2 seqs x 10 tokens x k heads x 4


def check_cache_predicted(fn, *, seed=0):  # 13.4 with right predictions written first
    check_cache_values(fn, PREDICTED_13_4, seed=seed)


RIGHT = [
    (check_rotate_pairs, rotate_complex, rotate_matrices, "13.1 passed: rotary position"),
    (check_rms_norm, rms_plain, rms_via_norm, "13.2 passed: RMSNorm by hand"),
    (check_repeat_kv_heads, repeat_np, repeat_by_index, "13.3 passed: repeat K/V heads"),
    (check_cache_predicted, cache_measured, cache_formula, "13.4 passed: the KV cache, measured"),
]


@pytest.mark.parametrize(
    "check,first,second,message", RIGHT, ids=lambda v: getattr(v, "__name__", "")
)
def test_right_answers_pass_for_several_seeds(check, first, second, message, capsys):
    for seed in (0, 1, 7):
        check(first, seed=seed)
        check(second, seed=seed)
    assert capsys.readouterr().out.count(message) == 6


WRONG = [
    (check_rotate_pairs, rotate_halves, "NEIGHBOURING coordinates (2i, 2i+1)"),
    (check_rotate_pairs, rotate_clockwise, "turns the wrong way"),
    (check_rotate_pairs, rotate_i_over_d, "i counting PAIRS"),
    (check_rotate_pairs, rotate_from_one, "position 0 is not rotated"),
    (check_rotate_pairs, lambda x, p, t: x, "returns x unchanged"),
    (check_rotate_pairs, lambda x, p, t: x[:, :1], "shape (3, 2), got shape (3, 1)"),
    (check_rms_norm, lambda x, w, e: rms_plain(x - x.mean(-1, keepdims=True), w, e), "LayerNorm"),
    (check_rms_norm, lambda x, w, e: w * x / (np.sqrt((x**2).mean(-1, keepdims=True)) + e),
     "INSIDE the square root"),
    (check_rms_norm, lambda x, w, e: rms_plain(x, 1.0, e), "gain `weight`"),
    (check_rms_norm, lambda x, w, e: w * x / np.sqrt((x**2).sum(-1, keepdims=True) + e), "MEAN"),
    (check_rms_norm, lambda x, w, e: w * x / np.sqrt((x**2).mean(0, keepdims=True) + e),
     "LAST axis"),
    (check_repeat_kv_heads, lambda kv, h: np.concatenate([kv] * (h // kv.shape[-3]), axis=-3),
     "NEIGHBOURS"),
    (check_repeat_kv_heads, lambda kv, h: np.repeat(kv, h // kv.shape[-3], axis=-1),
     "expected an array of shape (4, 1, 1)"),
    (check_cache_predicted, lambda m, n, b: 4 * cache_formula(m, n, b), "that is bytes"),
    (check_cache_predicted, lambda m, n, b: cache_formula(m, n, b) // 2, "keys AND values"),
    (check_cache_predicted, lambda m, n, b: cache_formula(m, n, b) * m.config.num_heads
     // m.config.num_kv_heads, "BEFORE repeat_kv"),
    (check_cache_predicted, lambda m, n, b: cache_formula(m, n, b) // m.config.num_layers,
     "own cache"),
    (check_cache_predicted, lambda m, n, b: float(cache_formula(m, n, b)), "expected an integer"),
]  # fmt: skip


@pytest.mark.parametrize("check,wrong,fragment", WRONG)
def test_mistakes_get_their_hint(check, wrong, fragment):
    for seed in (0, 3):
        with pytest.raises(ExerciseError) as err:
            check(wrong, seed=seed)
        assert fragment in str(err.value)
        assert "not right yet" in str(err.value)


@pytest.mark.parametrize("check", [c for c, *_ in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)


def test_the_exercise_numbers_without_the_model_fail_on_hidden_models():
    """The review's 13.4 attack: 2·L·k·d_head·n·b with the exercise's L = 3, d_head = 4."""
    check_cache_predicted(cache_exercise_numbers)
    for seed in (1, 3, 7):
        with pytest.raises(ExerciseError, match="too (low|high)"):
            check_cache_predicted(cache_exercise_numbers, seed=seed)


@pytest.mark.parametrize(
    "predicted, fragment",
    [(None, "BEFORE you measure"), ((3840, 1920), "three predictions"), ((3840.0, 1920, 480),
     "positive integers"), ((3840, 3840, 3840), "do not scale"), ((480, 240, 60), "factor of 2 too low"),
     ((1920, 960, 240), None), ((7680, 3840, 960), None), ((30720, 15360, 3840), "too high")],
)  # fmt: skip
def test_the_predictions_of_13_4_are_graded_by_their_reasoning(predicted, fragment):
    """Graded for scaling with k as the cache does, and for k = 8 within a factor of 2 of the
    true 3,840 (forgetting K and V, 1,920, or counting bytes of float16, 7,680, still count)."""
    if fragment is None:
        check_cache_values(cache_measured, predicted)
        return
    with pytest.raises(ExerciseError, match=fragment):
        check_cache_values(cache_measured, predicted)


# --- 13.5 (diagnose a broken RoPE) --------------------------------------------------------------


def diagnose_rope_one_probe(rope):  # e0 + e2 at position 1, d = 4: the five differ (by hand)
    y = rope(np.array([[1.0, 0.0, 1.0, 0.0]]), [1])[0]
    if abs(y[1]) < 1e-9:
        return "halves"  # pair (0, 2) turned: feature 1 untouched
    if y[1] < 0:
        return "clockwise"
    if abs(y[0] - np.cos(2.0)) < 1e-9:
        return "positions_from_1"  # angle 2 at position 1
    return "exponent_i_over_d" if abs(y[3] - np.sin(0.1)) < 1e-9 else "ok"  # pair 1: 0.1 or 0.01


def diagnose_rope_against_mine(rope):  # written differently: compare with 13.1's answer
    x, pos = np.random.default_rng(0).normal(size=(3, 8)), np.array([0, 1, 5])
    got = rope(x, pos)
    candidates = {
        "ok": rotate_complex(x, pos, 10000.0),
        "positions_from_1": rotate_complex(x, pos + 1, 10000.0),
        "clockwise": rotate_clockwise(x, pos, 10000.0),
        "exponent_i_over_d": rotate_i_over_d(x, pos, 10000.0),
        "halves": rotate_halves(x, pos, 10000.0),
    }
    return next(name for name, y in candidates.items() if np.allclose(got, y))


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
@pytest.mark.parametrize("fn", [diagnose_rope_one_probe, diagnose_rope_against_mine])
def test_diagnose_rope_passes_right_answers(fn, seed, capsys):
    check_diagnose_rope(fn, seed=seed)
    assert "✅ Exercise 13.5 passed" in capsys.readouterr().out


def diagnose_by_scores(rope):  # looks only at attention scores: cannot see positions_from_1
    q, k = np.array([[1.0, 0.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0, 0.0]])
    s = (rope(q, [3]) @ rope(k, [1]).T).item()  # cos(2) for ok and positions_from_1 alike
    return "ok" if abs(s - np.cos(2.0)) < 1e-9 else "halves"


@pytest.mark.parametrize(
    ("fn", "hint"),
    [(lambda rope: "ok", "a rope that is 'ok' returns"),
     (diagnose_by_scores, "this one"), (lambda rope: "broken", "expected one of ok")],
)  # fmt: skip
def test_diagnose_rope_wrong_diagnoses_get_evidence(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_diagnose_rope(fn)


def test_every_rope_fault_keeps_attention_scores_relative():
    """Why 13.5 asks to probe the function itself: every fault still gives scores that depend
    only on the distance m - n, and positions_from_1 gives exactly the right scores."""
    from course_lib.checks.given import rope_with_fault
    from course_lib.rope import rope as reference

    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    x = rng.normal(size=(4, 8))
    assert np.allclose(rope_with_fault("ok", x, np.arange(4)), reference(x, np.arange(4)))
    for fault in ROPE_FAULTS:
        s = [(rope_with_fault(fault, q, [m]) @ rope_with_fault(fault, k, [m - 2]).T).item()
             for m in (2, 5, 9)]  # fmt: skip
        assert np.ptp(s) < 1e-9, fault
        right = (reference(q, [5]) @ reference(k, [3]).T).item()
        assert (abs(s[1] - right) < 1e-9) == (fault in ("ok", "positions_from_1")), fault
