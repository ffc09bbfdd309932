"""Checks for the exercises of lecture 13 (RoPE, RMSNorm, grouped-query attention, KV cache).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import numpy as np

from ..grouped_query import kv_cache_bytes, repeat_kv
from ..rmsnorm import rms_norm
from ..rope import halves_to_interleaved, rope
from . import (
    Built,
    ExerciseError,
    answer_array,
    call_student,
    check_array,
    check_diagnosis,
    hidden_rng,
    passed,
)
from .given import ROPE_FAULTS, mystery_rope, rope_with_fault

__all__ = ["check_rotate_pairs", "check_rms_norm", "check_repeat_kv_heads", "check_cache_values",
           "check_diagnose_rope", "ROPE_FAULTS", "mystery_rope"]  # fmt: skip

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "13.1": (
        "course_lib.rope.rope",
        "course_lib.nn.rope.rotate",
        "course_lib.nn.rope.rope_qk",
        "course_lib.nn.rope.rope_qk_unchecked",
    ),
    "13.2": ("course_lib.rmsnorm.rms_norm", "course_lib.nn.norms.RMSNorm"),
    "13.3": ("course_lib.grouped_query.repeat_kv",),
    "13.4": ("course_lib.grouped_query.kv_cache_bytes",),
    "13.5": (),
}


def _as_array(ex: str, got, what: str, shape: tuple[int, ...]) -> np.ndarray:
    return answer_array(
        ex, got, what, shape, hint="return an array of the same shape as the input."
    )


def _diagnose(ex: str, got: np.ndarray, expected: np.ndarray, what: str, mistakes, default: str):
    """Raise with the hint of the first known mistake that reproduces ``got``, else ``default``."""
    if np.allclose(got, expected, rtol=1e-6, atol=1e-8):
        return
    hint = default
    for wrong, mistake_hint in mistakes:
        if wrong.shape == got.shape and np.allclose(got, wrong, rtol=1e-6, atol=1e-8):
            hint = mistake_hint
            break
    check_array(ex, got, expected, what=what, hint=hint)


# --- 13.1 ----------------------------------------------------------------------------------


def _rope_mistakes(x: np.ndarray, positions: np.ndarray, theta: float):
    d = x.shape[-1]
    perm = halves_to_interleaved(d)
    inverse = np.argsort(perm)
    halves = rope(x[..., perm], positions, theta)[..., inverse]  # pairs (i, i + d/2)
    i = np.arange(d // 2)
    by_dim = positions[:, None] * theta ** (-i / d)  # omega with i/d instead of 2i/d
    even, odd = x[..., 0::2], x[..., 1::2]
    wrong_freq = np.stack(
        [
            even * np.cos(by_dim) - odd * np.sin(by_dim),
            even * np.sin(by_dim) + odd * np.cos(by_dim),
        ],
        axis=-1,
    ).reshape(x.shape)
    return [
        (halves, "pair i is the two NEIGHBOURING coordinates (2i, 2i+1) -- x[..., 0::2] and "
                 "x[..., 1::2] -- not (i, i + d/2) as in transformers' rotate_half."),
        (rope(x, -positions, theta), "the rotation turns the wrong way: x'_2i = x_2i cos a - "
                                     "x_2i+1 sin a and x'_2i+1 = x_2i sin a + x_2i+1 cos a."),
        (wrong_freq, "omega_i = theta ** (-2i / d) with i counting PAIRS (i = 0 .. d/2 - 1), "
                     "as in lecture 04; you used theta ** (-i / d)."),
        (rope(x, positions + 1, theta), "use the positions as given: a row at position 0 is not "
                                        "rotated at all."),
        (x, "your function returns x unchanged: rotate each pair by position * omega_i."),
    ]  # fmt: skip


def check_rotate_pairs(student_fn, *, seed: int = 0) -> None:
    """Exercise 13.1: RoPE on ``x (n, d)`` with interleaved pairs."""
    ex = "13.1"
    rng = np.random.default_rng(seed)
    cases = [
        ("the pair [1, 0] at positions 0, 1, 2 (d = 2)", np.array([[1.0, 0.0]] * 3),
         np.array([0, 1, 2]), 10000.0),
        ("[1, 0, 0, 1] at position 3 with theta = 100 (omega = [1, 0.1])",
         np.array([[1.0, 0.0, 0.0, 1.0]]), np.array([3]), 100.0),
        ("random x (6, 8) at random positions", rng.normal(size=(6, 8)),
         rng.integers(0, 500, size=6), 10000.0),
        ("random x (5, 16) at positions 0..4, theta = 500,000", rng.normal(size=(5, 16)),
         np.arange(5), 500000.0),
    ]  # fmt: skip
    for what, x, positions, theta in cases:
        got = call_student(ex, student_fn, x.copy(), positions.copy(), theta)
        got = _as_array(ex, got, what, x.shape)
        _diagnose(ex, got, rope(x, positions, theta), what, _rope_mistakes(x, positions, theta),
                  "pair i of the row at position m turns by the angle m * theta ** (-2i / d).")  # fmt: skip
    passed(ex, "rotary position embedding")


# --- 13.2 ----------------------------------------------------------------------------------


def check_rms_norm(student_fn, *, seed: int = 0) -> None:
    """Exercise 13.2: RMSNorm over the last axis with gain ``weight``."""
    ex = "13.2"
    rng = np.random.default_rng(seed)
    cases = [
        ("the token [3, 4] (weight 1, eps 0)", np.array([[3.0, 4.0]]), np.ones(2), 0.0),
        ("a token far from mean 0: [10, 11, 12, 13], weight [1, 2, 1, 0.5]",
         np.array([[10.0, 11.0, 12.0, 13.0]]), np.array([1.0, 2.0, 1.0, 0.5]), 1e-6),
        ("random x (2, 3, 8) with a random weight", rng.normal(size=(2, 3, 8)) * 3 + 1,
         rng.normal(size=8), 1e-6),
        ("tiny values [1e-3, -1e-3] with eps = 1e-2", np.array([[1e-3, -1e-3]]), np.ones(2), 1e-2),
        ("an all-zero token (eps keeps it finite)", np.zeros((1, 4)), np.ones(4), 1e-6),
    ]  # fmt: skip
    for what, x, w, eps in cases:
        got = call_student(ex, student_fn, x.copy(), w.copy(), eps)
        got = _as_array(ex, got, what, x.shape)
        centred = x - x.mean(axis=-1, keepdims=True)
        mistakes = [
            (rms_norm(centred, w, eps), "that is LayerNorm: RMSNorm does NOT subtract the mean; "
                                        "divide x itself by sqrt(mean(x**2) + eps)."),
            (w * x / (np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) + eps),
             "eps goes INSIDE the square root: sqrt(mean(x**2) + eps)."),
            (rms_norm(x, np.ones_like(w), eps), "multiply by the gain `weight` at the end."),
            (w * x / np.sqrt(np.sum(x**2, axis=-1, keepdims=True) + eps),
             "the MEAN of the squares (divide the sum by d), not their sum."),
            (w * x / np.sqrt(np.mean(x**2, axis=0, keepdims=True) + eps),
             "normalise each token over its own features: the LAST axis (axis=-1)."),
        ]  # fmt: skip
        _diagnose(ex, got, rms_norm(x, w, eps), what, mistakes,
                  "weight * x / sqrt(mean(x**2 over the last axis, keepdims=True) + eps).")  # fmt: skip
    passed(ex, "RMSNorm by hand")


# --- 13.3 ----------------------------------------------------------------------------------


def check_repeat_kv_heads(student_fn, *, seed: int = 0) -> None:
    """Exercise 13.3: repeat ``(..., num_kv_heads, n, d)`` keys/values for ``num_heads`` heads."""
    ex = "13.3"
    rng = np.random.default_rng(seed)
    labelled = np.arange(2, dtype=float)[:, None, None] * np.ones((2, 1, 1))  # head j holds j
    cases = [
        ("2 KV heads holding 0 and 1, for 4 query heads", labelled, 4),
        ("random keys (2 KV heads, n=3, d=4) for 6 query heads", rng.normal(size=(2, 3, 4)), 6),
        ("one KV head (multi-query) for 3 query heads", rng.normal(size=(1, 5, 2)), 3),
        ("4 KV heads for 4 query heads (plain multi-head)", rng.normal(size=(4, 2, 3)), 4),
        ("a batch (2, 3 KV heads, n=2, d=2) for 6 query heads", rng.normal(size=(2, 3, 2, 2)), 6),
    ]
    for what, kv, num_heads in cases:
        shape = kv.shape[:-3] + (num_heads,) + kv.shape[-2:]
        got = call_student(ex, student_fn, kv.copy(), num_heads)
        got = _as_array(ex, got, what, shape)
        groups = num_heads // kv.shape[-3]
        reps = (1,) * (kv.ndim - 3) + (groups, 1, 1)
        mistakes = [
            (np.tile(kv, reps), "query heads of one group are NEIGHBOURS: head h reads KV head "
                                "h // (num_heads // num_kv_heads), i.e. [k0, k0, k1, k1] "
                                "(np.repeat), not [k0, k1, k0, k1] (np.tile)."),
        ]  # fmt: skip
        _diagnose(ex, got, repeat_kv(kv, groups), what, mistakes,
                  "repeat each KV head num_heads // num_kv_heads times along the head axis "
                  "(axis -3), keeping the order.")  # fmt: skip
    passed(ex, "repeat K/V heads for grouped-query attention")


# --- 13.4 ----------------------------------------------------------------------------------

_EXERCISE_MODEL = {"vocab_size": 50, "d_model": 32, "num_heads": 8, "num_layers": 3, "d_ff": 48}


def _hidden_models(seed: int) -> list[dict]:
    """ModernLM configurations: the exercise's (seed 0) or hidden ones (other sizes)."""
    if seed == 0:
        return [dict(_EXERCISE_MODEL, num_kv_heads=k) for k in (8, 1)]
    rng = hidden_rng(seed, 134)
    models = []
    for _ in range(2):
        heads = int(rng.choice([2, 4, 6]))
        kv = int(rng.choice([k for k in range(1, heads + 1) if heads % k == 0 and k != 2]))
        d_head = int(rng.choice([2, 6]))
        models.append({"vocab_size": 30, "d_model": heads * d_head, "num_heads": heads,
                       "num_kv_heads": kv, "num_layers": int(rng.choice([3, 5])),
                       "d_ff": 16})  # fmt: skip
    return models


PREDICTION_MODEL = {"num_layers": 3, "d_model": 32, "num_heads": 8, "seq_len": 10, "batch": 2}


def _check_cache_prediction(ex: str, predicted) -> None:
    """The three predictions of exercise 13.4 (values in the cache for k = 8, 4, 1 KV heads),
    written before the measurement. Graded for their reasoning, not their luck: they must scale
    with k as the cache does (k = 8 twice k = 4, eight times k = 1), and k = 8 must lie within a
    factor of 2 of the true count (one forgotten factor of 2, such as K and V, is allowed)."""
    m = PREDICTION_MODEL
    true = {k: kv_cache_bytes(m["num_layers"], k, m["d_model"] // m["num_heads"], m["seq_len"],
                              m["batch"], bytes_per_value=1) for k in (8, 4, 1)}  # fmt: skip
    if not (isinstance(predicted, (tuple, list)) and len(predicted) == 3 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0
            for v in predicted)):  # fmt: skip
        raise ExerciseError(ex, f"predicted: expected your three predictions (k = 8, k = 4, k = 1) "
                            f"as positive integers, got {predicted!r:.80}.",
                            "write them down BEFORE you measure: predicted = (..., ..., ...).")  # fmt: skip
    p8, p4, p1 = (int(v) for v in predicted)
    if not (p8 == 2 * p4 and p8 == 8 * p1):
        raise ExerciseError(ex, f"your predictions {p8}, {p4}, {p1} for k = 8, 4, 1 do not scale "
                            "as the cache does.", "each KV head keeps its own keys and values, "
                            "and nothing else in the cache depends on k: halve k, halve the "
                            "cache.")  # fmt: skip
    if not true[8] / 2 <= p8 <= true[8] * 2:
        side = "low" if p8 < true[8] else "high"
        raise ExerciseError(ex, f"your prediction for k = 8, {p8}, is more than a factor of 2 too "
                            f"{side}.", "count the factors: K and V, layers, batch, tokens, KV "
                            "heads, and the width of one head (d_model / num_heads).")  # fmt: skip


def check_cache_values(student_fn, predicted=None, *, seed: int = 0) -> None:
    """Exercise 13.4 (predict, then measure): ``predicted``, three predictions written first
    (see :func:`_check_cache_prediction`), then ``cache_values(model, seq_len, batch)``, the
    number of values in the KV cache of the ModernLM it is given, after one forward pass over a
    (batch, seq_len) input.

    The model is built from a recipe where the student's code runs: the exercise's model (seed
    0) or a hidden configuration (other seeds: other widths, heads, KV heads and depths), so a
    formula with the exercise's numbers fails; the check counts with the library's formula.
    """
    ex = "13.4"
    _check_cache_prediction(ex, predicted)
    rng = np.random.default_rng([13, 4, seed])
    for config in _hidden_models(seed):
        seq_len, batch = int(rng.integers(5, 40)), int(rng.integers(1, 4))
        model = Built("course_lib.checks.given_torch:exercise_model", **config)
        got = call_student(ex, student_fn, model, seq_len, batch)
        layers, heads, kv_heads = config["num_layers"], config["num_heads"], config["num_kv_heads"]
        head_dim = config["d_model"] // heads
        what = (f"values in the cache of a model with {layers} layers, {heads} heads, "
                f"{kv_heads} KV heads, d_model {config['d_model']}, for {seq_len} tokens, "
                f"batch {batch}")  # fmt: skip
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise ExerciseError(ex, f"{what}: expected an integer, got {type(got).__name__} "
                                f"{got!r:.80}.", "return cache.numel(), a Python int.")  # fmt: skip
        expected = kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, bytes_per_value=1)
        mistakes = [
            (expected * 4, "that is bytes (float32: 4 bytes a value); the question asks for the "
                           "number of values."),
            (expected // 2, "the cache holds keys AND values."),
            (expected * heads // kv_heads, "the cache stores K and V BEFORE repeat_kv: one per "
                                           "KV head, not one per query head."),
            (expected // layers, "every layer has its own cache."),
        ]  # fmt: skip
        if got != expected:
            hint = next((h for value, h in mistakes if value == got and value != expected),
                        "run the model you are given once on (batch, seq_len) ids with a fresh "
                        "KVCache and return cache.numel(); the check gives your function other "
                        "models too.")  # fmt: skip
            side = "too low" if got < expected else "too high"
            raise ExerciseError(ex, f"{what}: your {int(got)} is {side}.", hint)
    passed(ex, "the KV cache, measured")


_ROPE_PROBES = (  # (x, positions) on which the faults of exercise 13.5 rotate differently
    (np.array([[1.0, 0.0, 1.0, 0.0]]), [1]),
    (np.array([[0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]), [0, 3]),
)


def _rope_evidence(fault: str, said: str) -> str:
    for x, positions in _ROPE_PROBES:
        real, claimed = rope_with_fault(fault, x, positions), rope_with_fault(said, x, positions)
        if not np.allclose(real, claimed):
            return (f"try x = {x.tolist()}, positions = {positions}: a rope that is {said!r} "
                    f"returns {np.round(claimed, 3).tolist()}, this one "
                    f"{np.round(real, 3).tolist()}.")  # fmt: skip
    return "call it on vectors and positions of your own and compare with 13.1's rotate_pairs."


def check_diagnose_rope(student_fn, *, seed: int = 0) -> None:
    """Exercise 13.5 (diagnose): ``diagnose_rope(rope) -> fault``, the bug of a rotary position
    function found by calling it: one of ``ROPE_FAULTS``. Seed 0 gives the five in this order;
    other seeds five drawn at random (repeats allowed). A wrong diagnosis is shown one input on
    which the function and the diagnosed fault differ, not the answer."""
    check_diagnosis("13.5", student_fn, seed=seed, faults=ROPE_FAULTS,
                    factory="course_lib.checks.given:mystery_rope", salt=135, noun="rope",
                    evidence=_rope_evidence, title="a broken RoPE diagnosed from its outputs")  # fmt: skip
