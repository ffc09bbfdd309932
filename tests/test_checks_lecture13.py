"""Lecture 13 checks: right answers (two ways each) pass; realistic mistakes get their hint; the
stub fails; hidden seeds give the same verdicts."""

import math
import re

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib import GPT, GPTConfig, KVCache, ModernConfig, ModernLM
from course_lib.checks import ExerciseError
from course_lib.checks.lecture13 import (
    ROPE_FAULTS,
    check_cache_contents,
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


def cache_same_numpy(model, token_id, n):  # float64 copies, consecutive positions, own tolerance
    cache = KVCache()
    with torch.no_grad():
        model(torch.tensor([[token_id] * n]), cache)

    def same(t):
        a = t.double().numpy()
        return bool(np.all(np.abs(np.diff(a, axis=-2)) <= 1e-5 * (np.abs(a).max() + 1e-12)))

    k = all(same(layer.keys) for layer in cache.layers)
    v = all(same(layer.values) for layer in cache.layers)
    return "both" if k and v else "keys" if k else "values" if v else "neither"


def cache_same_by_spread(model, token_id, n):  # the spread over positions, layer by layer
    cache = KVCache()
    with torch.inference_mode():
        model(torch.full((1, n), token_id), cache=cache)
    spread = {
        name: max((getattr(layer, name).amax(-2) - getattr(layer, name).amin(-2)).max().item()
                  for layer in cache.layers)
        for name in ("keys", "values")
    }  # fmt: skip
    flat = [name for name, s in spread.items() if s < 1e-5]
    return flat[0] if len(flat) == 1 else ("neither", None, "both")[len(flat)]


def cache_same_exactly(model, token_id, n):  # a mistake: float32 averages compared bit for bit
    cache = KVCache()
    with torch.no_grad():
        model(torch.full((1, n), token_id), cache)
    k = all(torch.equal(c.keys, c.keys[:, :, :1].expand_as(c.keys)) for c in cache.layers)
    v = all(torch.equal(c.values, c.values[:, :, :1].expand_as(c.values)) for c in cache.layers)
    return "both" if k and v else "keys" if k else "values" if v else "neither"


def cache_swapped(model, token_id, n):  # a mistake: keys and values read the other way round
    return {"keys": "values", "values": "keys"}.get(r := cache_same_numpy(model, token_id, n), r)


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


RIGHT = [
    (check_rms_norm, rms_plain, rms_via_norm, "13.2 passed: RMSNorm by hand"),
    (check_repeat_kv_heads, repeat_np, repeat_by_index, "13.3 passed: repeat K/V heads"),
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
    (check_rotate_pairs, rotate_clockwise, "turn clockwise"),
    (check_rotate_pairs, rotate_i_over_d, "fall too slowly"),
    (check_rotate_pairs, rotate_from_one, "position 0 is not rotated"),
    (check_rotate_pairs, lambda x, p, t: x, "returns x unchanged"),
    (check_rotate_pairs, lambda x, p, t: x[:, :1], "shape (3, 2), got shape (3, 1)"),
    (check_rms_norm, lambda x, w, e: rms_plain(x - x.mean(-1, keepdims=True), w, e), "LayerNorm"),
    (check_rms_norm, lambda x, w, e: w * x / (np.sqrt((x**2).mean(-1, keepdims=True)) + e),
     "AFTER the square root"),
    (check_rms_norm, lambda x, w, e: rms_plain(x, 1.0, e), "gain `weight`"),
    (check_rms_norm, lambda x, w, e: w * x / np.sqrt((x**2).sum(-1, keepdims=True) + e), "SUM of the squares"),
    (check_rms_norm, lambda x, w, e: w * x / np.sqrt((x**2).mean(0, keepdims=True) + e),
     "LAST axis"),
    (check_repeat_kv_heads, lambda kv, h: np.concatenate([kv] * (h // kv.shape[-3]), axis=-3),
     "np.tile's order"),
    (check_repeat_kv_heads, lambda kv, h: np.repeat(kv, h // kv.shape[-3], axis=-1),
     "expected an array of shape (4, 1, 1)"),
]  # fmt: skip


@pytest.mark.parametrize("check,wrong,fragment", WRONG)
def test_mistakes_get_their_hint(check, wrong, fragment):
    for seed in (0, 3):
        with pytest.raises(ExerciseError) as err:
            check(wrong, seed=seed)
        assert fragment in str(err.value)
        assert "not right yet" in str(err.value)


@pytest.mark.parametrize("check", [check_rotate_pairs] + [c for c, *_ in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)


# --- 13.1 (the rotation, then the prediction written before it) --------------------------------


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("fn", [rotate_complex, rotate_matrices])
def test_rotate_pairs_passes_right_answers(fn, seed, capsys):
    check_rotate_pairs(fn, 29, seed=seed)
    check_rotate_pairs(fn, 29.0, seed=seed)  # a count written as a float
    assert capsys.readouterr().out.count("✅ Exercise 13.1 passed: rotary position") == 2


def test_the_slow_pairs_of_a_llama_3_head_by_hand():
    """29, by hand: pair i turns 500,000 ** (-i / 64) rad per position, and 8,191 times that is
    at least 2 pi while i <= 64 ln(8,191 / 2 pi) / ln 500,000 = 34.98: pairs 0..34 turn."""
    from course_lib.checks.lecture13 import slow_pairs

    assert 64 * math.log(8191 / (2 * math.pi)) / math.log(500_000) == pytest.approx(34.98, abs=0.01)
    assert slow_pairs(128, 500_000.0, 8192) == 64 - 35 == 29
    assert slow_pairs(16, 10_000.0, 64) == 5  # the lecture's tiny model (printed in section 2)


@pytest.mark.parametrize(
    ("predicted", "fragment"),
    [(None, "prediction is missing"), ("29", "a Python int"), (35, "DO complete"),
     (14, "theta = 10,000"), (0, "fall too slowly"), (25, "not pi"), (5, "tiny model"),
     (28, "too low"), (30, "too high")],
)  # fmt: skip
def test_the_prediction_of_13_1_is_graded_never_told(predicted, fragment):
    with pytest.raises(ExerciseError, match=fragment) as err:
        check_rotate_pairs(rotate_complex, predicted)
    if isinstance(predicted, int):  # a wrong number is never told the right one
        assert not re.search(r"(?<![\d.])29(?![\d])", str(err.value)), str(err.value)


# --- 13.4 (predict, then measure: what a KV cache keeps of a position) ---------------------------


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
@pytest.mark.parametrize("fn", [cache_same_numpy, cache_same_by_spread])
def test_cache_contents_passes_right_answers(fn, seed, capsys):
    check_cache_contents(fn, "values", seed=seed)
    assert "✅ Exercise 13.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("check", "wrong", "fragment"),
    [(check_cache_contents, cache_same_exactly, "bit for bit"),
     (check_cache_contents, cache_swapped, "swapped keys and values"),
     (check_cache_contents, lambda model, token_id, n: "values", "not what its cache holds"),
     (check_cache_contents, lambda model, token_id, n: "Values", "expected one of")],
)  # fmt: skip
def test_cache_contents_mistakes_get_their_hint(check, wrong, fragment):
    with pytest.raises(ExerciseError, match=fragment):
        check(wrong, "values")


@pytest.mark.parametrize(
    ("predicted", "fragment"),
    [(None, "BEFORE you measure"), ("the keys", "expected one of"), (("values",), "expected one"),
     ("both", "before the key is cached"), ("keys", "which of q, k and v"),
     ("neither", "no position vector"), (" Values ", None)],
)  # fmt: skip
def test_the_prediction_of_13_4_is_graded_against_the_measurement(predicted, fragment, capsys):
    if fragment is None:
        check_cache_contents(cache_same_numpy, predicted)
        assert "13.4 passed" in capsys.readouterr().out
        return
    with pytest.raises(ExerciseError, match=fragment) as err:
        check_cache_contents(cache_same_numpy, predicted)
    if predicted in ("both", "keys", "neither"):  # a wrong prediction is never told the answer
        assert "values" not in str(err.value).split("Hint")[0].replace("predicted", "")


def test_what_the_cache_keeps_by_hand():
    """The reference, by hand: a ModernLM's cached values for one repeated token are the value
    of that token in every layer (layer 0: v = W_V RMSNorm(embedding), exactly); its keys are
    that token's key turned by RoPE; GPT adds a position vector, so nothing repeats."""
    from course_lib.checks.lecture13 import same_in_cache
    from course_lib.nn.rope import rotate

    torch.manual_seed(0)
    model = ModernLM(ModernConfig(50, 32, 8, 2, 3, 48)).eval()
    cache = KVCache()
    with torch.no_grad():
        model(torch.full((1, 5), 7), cache)
        block = model.blocks[0]
        h = block.norm1(
            model.token_embedding(torch.tensor([7]))
        )  # (1, 32): the same at every position
        v = block.attn.w_v(h).view(2, 4)  # 2 KV heads of width 4
        k = block.attn.w_k(h).view(2, 1, 4).expand(2, 5, 4)
    assert torch.allclose(cache.layers[0].values[0], v[:, None].expand(2, 5, 4))
    assert torch.allclose(cache.layers[0].keys[0], rotate(k, torch.arange(5)), atol=1e-6)
    assert same_in_cache(model, 7, 5) == "values"
    assert same_in_cache(model, 7, 5, exact=True) == "neither"  # rounding in layers 1 and 2
    gpt = GPT(GPTConfig(50, 16, 32, 4, 2)).eval()
    assert same_in_cache(gpt, 7, 5) == "neither"


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
