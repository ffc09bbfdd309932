"""Checks for the exercises of lecture 13 (RoPE, RMSNorm, grouped-query attention, what a KV
cache keeps).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import functools

import numpy as np

from ..grouped_query import repeat_kv
from ..rmsnorm import rms_norm
from ..rope import halves_to_interleaved, rope
from . import (
    Built,
    ExerciseError,
    answer_array,
    call_student,
    check_array,
    check_diagnosis,
    check_prediction,
    hidden_rng,
    passed,
)
from .given import ROPE_FAULTS, mystery_rope, rope_with_fault

__all__ = ["check_rotate_pairs", "check_rms_norm", "check_repeat_kv_heads", "check_cache_contents",
           "check_diagnose_rope", "CACHE_ANSWERS", "ROPE_FAULTS", "mystery_rope"]  # fmt: skip

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
    "13.4": (),
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
        (rope(x, -positions, theta), "your pairs turn clockwise: a pair (1, 0) turned by a small "
                                     "positive angle must gain a POSITIVE second coordinate."),
        (wrong_freq, "your frequencies fall too slowly: the exponent counts the pair's first "
                     "DIMENSION (0, 2, 4, ...), as lecture 04's frequencies do, not the pair's "
                     "number (0, 1, 2, ...)."),
        (rope(x, positions + 1, theta), "use the positions as given: a row at position 0 is not "
                                        "rotated at all."),
        (x, "your function returns x unchanged: rotate each pair by position * omega_i."),
    ]  # fmt: skip


# The prediction of 13.1: Llama 3's heads (width 128, theta 500,000), trained on 8,192 tokens.
SLOW_PAIRS_HEAD = {"d": 128, "theta": 500000.0, "length": 8192}


def slow_pairs(d: int, theta: float, length: int) -> int:
    """How many of a head's d/2 RoPE pairs never complete a full turn (2 pi) between two tokens
    at most ``length - 1`` apart: pair i turns by theta ** (-2i / d) per position."""
    omega = theta ** (-np.arange(0, d, 2) / d)  # (d/2,)
    return int(((length - 1) * omega < 2 * np.pi).sum())


def _check_slow_pairs_prediction(ex: str, predicted) -> None:
    """13.1's prediction, worked out before the rotation is written: the pairs of a Llama 3 head
    that never complete a turn within its training length. Told too low or too high and the
    mistake it matches, never the value."""
    if predicted is None:
        raise ExerciseError(ex, "predicted_slow_pairs: your prediction is missing.",
                            "work it out BEFORE you write the rotation, in the cell above it, "
                            "and pass it to this check.")  # fmt: skip
    if isinstance(predicted, (float, np.floating)) and float(predicted).is_integer():
        predicted = int(predicted)  # 29.0 is a count written differently
    h = SLOW_PAIRS_HEAD
    want = slow_pairs(h["d"], h["theta"], h["length"])
    omega = h["theta"] ** (-np.arange(0, h["d"], 2) / h["d"])  # (d/2,): pair i's frequency
    by_pair_number = h["theta"] ** (-np.arange(h["d"] // 2) / h["d"])  # the exponent i / d
    hints = {
        h["d"] // 2 - want: "that counts the pairs that DO complete a turn.",
        slow_pairs(h["d"], 10000.0, h["length"]): "that is theta = 10,000 (Llama 2's); Llama 3 "
        "rotates with theta = 500,000.",
        int(((h["length"] - 1) * by_pair_number < 2 * np.pi).sum()): "your frequencies fall too "
        "slowly: the exponent counts the pair's first DIMENSION (0, 2, 4, ...), not the pair's "
        "number.",
        int(((h["length"] - 1) * omega < np.pi).sum()): "a full turn is 2 pi, not pi.",
        slow_pairs(16, 10000.0, 64): "that is the lecture's tiny model (width 16, 64 tokens).",
    }  # fmt: skip
    hints.pop(want, None)
    check_prediction(
        ex, predicted, want,
        what="predicted_slow_pairs, the pairs of a Llama 3 head (width 128, theta = 500,000) that "
        "never complete a turn within 8,192 tokens",
        too_low="more pairs than that turn by less than a full circle over 8,191 positions: "
        "find the first pair whose frequency times 8,191 stays below 2 pi.",
        too_high="fewer pairs than that stay below a full turn: find the first pair whose "
        "frequency times 8,191 stays below 2 pi.",
        hints=hints, not_int="write the number of pairs as a Python int.",
    )  # fmt: skip


def check_rotate_pairs(student_fn, predicted_slow_pairs=None, *, seed: int = 0) -> None:
    """Exercise 13.1: RoPE on ``x (n, d)`` with interleaved pairs; then the prediction written
    before it (:func:`_check_slow_pairs_prediction`)."""
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
                  "try the case above by hand: which pair turns, by how much, and which way?")  # fmt: skip
    _check_slow_pairs_prediction(ex, predicted_slow_pairs)
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
            (rms_norm(centred, w, eps), "that is LayerNorm's centring: you subtracted the mean, "
                                        "which is what RMSNorm drops."),
            (w * x / (np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) + eps),
             "you added eps AFTER the square root: find where the lecture's formula puts it "
             "(the case with eps = 1e-2 tells the two apart)."),
            (rms_norm(x, np.ones_like(w), eps), "your result ignores the gain `weight`."),
            (w * x / np.sqrt(np.sum(x**2, axis=-1, keepdims=True) + eps),
             "you used the SUM of the squares: the root mean square averages them."),
            (w * x / np.sqrt(np.mean(x**2, axis=0, keepdims=True) + eps),
             "you normalised along the first axis: each token is normalised over its own "
             "features, the LAST axis."),
        ]  # fmt: skip
        _diagnose(ex, got, rms_norm(x, w, eps), what, mistakes,
                  "work the token [3, 4] by hand with the lecture's formula and compare.")  # fmt: skip
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
            (np.tile(kv, reps), "your copies are in np.tile's order (the whole stack of K/V "
                                "heads, then the whole stack again): that is not how "
                                "MultiHeadAttention groups its query heads. Test which query "
                                "heads really share a K/V head."),
        ]  # fmt: skip
        _diagnose(ex, got, repeat_kv(kv, groups), what, mistakes,
                  "find out which query heads share each K/V head in MultiHeadAttention (the "
                  "first case, K/V heads holding 0 and 1, shows your order).")  # fmt: skip
    passed(ex, "repeat K/V heads for grouped-query attention")


# --- 13.4 ----------------------------------------------------------------------------------

CACHE_ANSWERS = ("keys", "values", "both", "neither")
# The exercise's models (seed 0): the ModernLM the prediction is about, and lecture 11's GPT.
EXERCISE_MODERN = {"vocab_size": 50, "d_model": 32, "num_heads": 8, "num_kv_heads": 2,
                   "num_layers": 3, "d_ff": 48}  # fmt: skip
EXERCISE_GPT = {"vocab_size": 50, "context_length": 16, "d_model": 32, "num_heads": 4,
                "num_layers": 2}  # fmt: skip


def _cache_cases(seed: int) -> list[tuple[str, dict, int, int]]:
    """(kind, config, token id, n): seed 0 the exercise's ModernLM and GPT (token 7, 8 times);
    other seeds two hidden models of each kind (other widths, heads, KV heads, depths), in an
    order drawn from the seed, so that only a measurement tells them apart."""
    if seed == 0:
        return [("modern", EXERCISE_MODERN, 7, 8), ("gpt", EXERCISE_GPT, 7, 8)]
    rng = hidden_rng(seed, 134)
    cases = []
    for kind in ("modern", "gpt", "modern", "gpt"):
        heads, d_head = int(rng.choice([2, 4, 8])), int(rng.choice([2, 4, 6]))
        config = {"vocab_size": 40, "d_model": heads * d_head, "num_heads": heads,
                  "num_layers": int(rng.integers(1, 4))}  # fmt: skip
        if kind == "modern":
            kv = [k for k in (1, 2, 4, 8) if heads % k == 0]
            config |= {"num_kv_heads": int(rng.choice(kv)), "d_ff": 16}
        else:
            config |= {"context_length": 16}
        cases.append((kind, config, int(rng.integers(0, 40)), int(rng.integers(2, 13))))
    return [cases[int(i)] for i in rng.permutation(len(cases))]


def same_in_cache(model, token_id: int, n: int, *, exact: bool = False) -> str:
    """Which of the cached keys and values are the same at every position, in every layer, after
    ``model`` read ``token_id`` repeated ``n`` times: one of :data:`CACHE_ANSWERS`. Equal to
    float32 rounding (``exact=False``) or bit for bit (``exact=True``, a usual mistake)."""
    import torch

    from ..nn.cache import KVCache

    cache = KVCache()
    with torch.inference_mode():
        model(torch.full((1, n), token_id, dtype=torch.long), cache)

    def same(t: torch.Tensor) -> bool:  # (batch, kv_heads, n, d_head): all equal position 0
        first = t[:, :, :1].expand_as(t)
        return torch.equal(t, first) if exact else torch.allclose(t, first, rtol=1e-4, atol=1e-6)

    keys = all(same(layer.keys) for layer in cache.layers)
    values = all(same(layer.values) for layer in cache.layers)
    return {(True, True): "both", (True, False): "keys", (False, True): "values",
            (False, False): "neither"}[keys, values]  # fmt: skip


@functools.cache
def _exercise_measurement() -> str:
    """What the exercise's ModernLM keeps (the prediction's subject), measured once a process."""
    model = Built("course_lib.checks.given_torch:exercise_model", **EXERCISE_MODERN).build()
    return same_in_cache(model, 7, 8)


_PREDICTION_HINTS = {
    "both": "RoPE turns each key by its position before the key is cached: can the key of "
    "position 0 and that of position 5 be one vector?",
    "keys": "which of q, k and v does RoPE turn (section 2), and which does it leave alone?",
    "neither": "ModernLM adds no position vector to its input (section 2): where, then, can a "
    "position enter, and into which of k and v?",
}


def _check_cache_prediction(ex: str, predicted, measured: str) -> None:
    """The prediction of exercise 13.4, written before the measurement: which of the cached keys
    and values of the exercise's ModernLM are the same at every position. Graded against the
    check's own measurement; a wrong one is told what its reasoning missed, not the answer."""
    choices = ", ".join(repr(c) for c in CACHE_ANSWERS)
    if not isinstance(predicted, str) or predicted.strip().lower() not in CACHE_ANSWERS:
        raise ExerciseError(ex, f"predicted: expected one of {choices}, got {predicted!r:.60}.",
                            "write your prediction down BEFORE you measure: predicted = "
                            "'...'.")  # fmt: skip
    said = predicted.strip().lower()
    if said != measured:
        raise ExerciseError(ex, f"your prediction {said!r} is not what the ModernLM's cache "
                            "holds (your measurement below shows it).",
                            _PREDICTION_HINTS.get(said))  # fmt: skip


def check_cache_contents(student_fn, predicted=None, *, seed: int = 0) -> None:
    """Exercise 13.4 (predict, then measure): ``predicted``, written first (see
    :func:`_check_cache_prediction`), then ``same_at_every_position(model, token_id, n)``: which
    of the cached keys and values are the same at every position after ``model`` read one token
    ``n`` times, measured on the models it is given.

    The models are built from a recipe where the student's code runs: seed 0 the exercise's
    ModernLM and lecture 11's GPT; other seeds hidden ModernLMs and GPTs in a hidden order (a
    GPT's position vectors make every cached tensor differ; RoPE turns the keys only)."""
    ex = "13.4"
    _check_cache_prediction(ex, predicted, _exercise_measurement())
    for k, (kind, config, token, n) in enumerate(_cache_cases(seed)):
        recipe = Built("course_lib.checks.given_torch:exercise_model", kind=kind, seed=seed + k,
                       **config)  # fmt: skip
        model = recipe.build()
        expected = same_in_cache(model, token, n)
        got = call_student(ex, student_fn, recipe, token, n)
        name = "ModernLM" if kind == "modern" else "GPT (lecture 11)"
        kv = f", {config['num_kv_heads']} KV heads" if kind == "modern" else ""
        what = (f"a {name} with {config['num_layers']} layer(s), {config['num_heads']} heads{kv}, "
                f"d_model {config['d_model']}, token {token} repeated {n} times")  # fmt: skip
        if not isinstance(got, str) or got not in CACHE_ANSWERS:
            raise ExerciseError(ex, f"{what}: expected one of "
                                f"{', '.join(repr(c) for c in CACHE_ANSWERS)}, got {got!r:.60}.",
                                "return the answer as one of these strings.")  # fmt: skip
        if got == expected:
            continue
        hint = ("run the model once on the token repeated n times with a fresh KVCache and "
                "compare, in every layer, the cached keys (and the values) at each position with "
                "those at position 0, to float32 rounding.")  # fmt: skip
        if got == same_in_cache(model, token, n, exact=True):
            hint = ("you compared bit for bit (== or torch.equal): in float32 an average of "
                    "equal values can differ from them in the last bits. Compare to float32 "
                    "rounding (torch.allclose).")  # fmt: skip
        elif {got, expected} == {"keys", "values"}:
            hint = "you swapped keys and values: each layer's cache holds .keys and .values."
        raise ExerciseError(ex, f"{what}: your {got!r} is not what its cache holds.", hint)
    passed(ex, "what a KV cache keeps of a position")


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
