"""Checks for the exercises of lecture 04 (positional encoding)."""

from __future__ import annotations

import math

import numpy as np

from ..attention import scaled_dot_product_attention
from ..positional import positional_encoding
from . import ExerciseError, call_student, check_mistakes, check_prediction, hidden_rng, passed
from .given import halves_encoding

__all__ = [
    "check_positional_encoding",
    "check_shift_matrix_halves",
    "check_same_for_attention",
    "check_half_distance",
    "halves_encoding",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "4.1": ("course_lib.positional.positional_encoding",),
    "4.2": (),
    "4.3": (),
    "4.4": (),
}


def _angles(n: int, d: int, exponent) -> np.ndarray:
    return np.arange(n)[:, None] / 10000.0 ** exponent[None, :]


def _interleave(sin, cos) -> np.ndarray:
    out = np.empty((sin.shape[0], 2 * sin.shape[1]))
    out[:, 0::2], out[:, 1::2] = sin, cos
    return out


def _table_mistakes(n: int, d: int) -> dict:
    pairs = np.arange(0, d, 2) / d  # 2i / d
    right = _angles(n, d, pairs)
    by_dim = np.arange(n)[:, None] / 10000.0 ** (np.arange(d) / d)[None, :]
    dims = np.where(np.arange(d) % 2 == 0, np.sin(by_dim), np.cos(by_dim))
    return {
        "i counts PAIRS of columns: columns 2i and 2i+1 share the angle "
        "pos / 10000**(2i/d_model). You used a different exponent in every column.": dims,
        "sin goes in the even columns (2i) and cos in the odd ones (2i+1).": _interleave(
            np.cos(right), np.sin(right)
        ),
        "the columns are interleaved, sin, cos, sin, cos, …, not all sines then all cosines.": (
            np.concatenate([np.sin(right), np.cos(right)], axis=1)
        ),
        "positions start at 0 (the first row is [0, 1, 0, 1, …]).": _interleave(
            np.sin(_angles(n + 1, d, pairs)[1:]), np.cos(_angles(n + 1, d, pairs)[1:])
        ),
        "the exponent is 2i/d_model with i the pair index: 10000**(2*i/d_model), not "
        "10000**(i/d_model).": _interleave(
            np.sin(_angles(n, d, pairs / 2)), np.cos(_angles(n, d, pairs / 2))
        ),
    }


def check_positional_encoding(student_fn, *, seed: int = 0) -> None:
    """Exercise 4.1: the sinusoidal table (num_positions, d_model), on fixed sizes and (seed
    > 0) hidden ones. A float32 table passes at float32's precision."""
    ex = "4.1"
    got = call_student(ex, student_fn, 2, 4)
    check_mistakes(
        ex,
        got,
        [[0.0, 1.0, 0.0, 1.0], [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)]],
        what="the notes' example, positions 0 and 1 with d_model=4",
        hint="column 2i is sin(pos / 10000**(2i/d_model)), column 2i+1 the cos of the SAME "
        "angle; i counts pairs, so columns 2 and 3 both use 10000**(2/4).",
        mistakes=_table_mistakes(2, 4),
        atol=1e-12,
    )
    sizes = [(5, 4), (50, 16), (1, 2), (3, 128)]  # seed 0: the sizes the notebook shows
    if seed:
        rng = hidden_rng(seed, 41)
        sizes = [(int(rng.integers(2, 80)), 2 * int(rng.integers(1, 40))) for _ in range(3)]
    for n, d in sizes:
        got = call_student(ex, student_fn, n, d)
        check_mistakes(ex, got, positional_encoding(n, d),
                       what=f"positional_encoding({n}, {d})", atol=_table_atol(got, n),
                       hint="positions run 0..num_positions-1; the angle of pair i is "
                       "pos / 10000**(2*i/d_model); sin in even columns, cos in odd ones.",
                       mistakes=_table_mistakes(n, d))  # fmt: skip
    passed(ex, "sinusoidal positional encoding")


def _table_atol(got, n: int) -> float:
    """The tolerance of a table of ``n`` positions, derived from the float arithmetic.

    A float64 table is right to 1e-10. A float32 one (the PyTorch tutorial's, computed in float32
    throughout) carries the rounding of its angle pos * 10000**(-2i/d): the divisor is computed
    from an exponent of size up to ln(10000) and multiplied by pos <= n - 1, so the angle (and its
    sin and cos) is off by up to (n - 1)(1 + ln 10000) float32 units; twice that is allowed
    (measured: the tutorial's table and a numpy float32 one stay below 0.17 of it for every
    n < 80, d < 80)."""
    if str(getattr(got, "dtype", "")).rsplit(".", 1)[-1] not in ("float32", "float16", "bfloat16"):
        return 1e-10
    return 2 * 2.0**-24 * max(n - 1, 1) * (1 + math.log(10000.0))


def _interleaved_shift(k: int, d: int) -> np.ndarray:
    m = np.zeros((d, d))
    for i in range(d // 2):
        b = k * 10000.0 ** (-2 * i / d)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[np.cos(b), np.sin(b)], [-np.sin(b), np.cos(b)]]
    return m


def _halves_shift(k: float, d: int, exponent_scale: float = 1.0) -> np.ndarray:
    b = k * 10000.0 ** (-np.arange(0, d, 2) / d * exponent_scale)
    c, s = np.diag(np.cos(b)), np.diag(np.sin(b))
    return np.block([[c, s], [-s, c]])


def check_shift_matrix_halves(student_fn, *, seed: int = 0) -> None:
    """Exercise 4.2: M_k with PEh(pos + k) = M_k @ PEh(pos) for the halves layout (fixed k and
    d_model, and hidden ones for seed > 0)."""
    ex = "4.2"
    cases = [(1, 4), (7, 16), (0, 6), (25, 8), (3, 2)]
    if seed:
        rng = hidden_rng(seed, 42)
        cases = [(int(rng.integers(1, 40)), 2 * int(rng.integers(2, 20))) for _ in range(3)]
    for k, d in cases:
        got = call_student(ex, student_fn, k, d)
        try:
            m = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise ExerciseError(
                ex, f"expected a ({d}, {d}) array, got {type(got).__name__}."
            ) from None
        if m.shape != (d, d):
            raise ExerciseError(
                ex, f"for k={k}, d_model={d}: expected shape ({d}, {d}), got {m.shape}."
            )
        table = halves_encoding(60 + k, d)
        mistakes = {
            "that is the matrix of the INTERLEAVED layout (the lecture's). Here sin(w_i pos) is "
            "column i and cos(w_i pos) is column i + d_model/2: the 2x2 rotation of pair i "
            "links entries i and i + d_model/2.": table[:60] @ _interleaved_shift(k, d).T,
            "this matrix shifts by -k (it is the transpose): sin(a+b) = cos b sin a + sin b cos a.": (
                table[:60] @ _halves_shift(-k, d).T
            ),
            "the frequency of pair i is 10000**(-2i/d_model), with i counting pairs.": (
                table[:60] @ _halves_shift(k, d, 0.5).T
            ),
        }
        check_mistakes(
            ex,
            table[:60] @ m.T,
            table[k:],
            what=f"M_k @ PEh(pos) for k={k}, d_model={d}, compared with PEh(pos + {k}) "
            "(pos = 0..59)",
            hint="for pair i, sin(a+b) = cos b sin a + sin b cos a and cos(a+b) = -sin b sin a + "
            "cos b cos a with b = k * 10000**(-2i/d_model); sin a sits in column i and cos a in "
            "column i + d_model/2.",
            mistakes=mistakes,
            atol=1e-9,
        )
    passed(ex, "PE(pos + k) as a linear map, halves layout")


def _pooled_outputs(sentence, vocab: dict, pe: bool, rng_seed) -> np.ndarray:
    rng = np.random.default_rng(rng_seed)
    d = 16
    emb = rng.normal(size=(len(vocab), d))
    w_q, w_k, w_v = (rng.normal(size=(d, d)) / 4 for _ in range(3))
    x = emb[[vocab[w] for w in sentence]]
    if pe:
        x = x + positional_encoding(len(sentence), d)
    out, _ = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
    return out.mean(axis=0)  # a sentence vector: the mean of the token outputs


def check_same_for_attention(sentence_a, sentence_b, *, seed: int = 0) -> None:
    """Exercise 4.3 (construct): two different sentences self-attention cannot tell apart.

    Random word embeddings and projections (from ``seed``); the sentence vector is the mean of
    the self-attention outputs. Any two different word sequences with equal vectors without
    positions, and different vectors with the sinusoidal encoding added, are accepted.
    """
    ex = "4.3"
    for name, s in (("sentence_a", sentence_a), ("sentence_b", sentence_b)):
        if not isinstance(s, (list, tuple)) or not s or not all(isinstance(w, str) for w in s):
            raise ExerciseError(
                ex,
                f"{name}: expected a non-empty list of words (str), got {s!r:.80}.",
                'e.g. "the dog bit the man".split()',
            )
    a, b = list(sentence_a), list(sentence_b)
    if a == b:
        raise ExerciseError(ex, "the two sentences are the same word sequence.",
                            "the point is two DIFFERENT sentences that attention confuses.")  # fmt: skip
    vocab = {w: i for i, w in enumerate(sorted(set(a) | set(b)))}
    va, vb = (_pooled_outputs(s, vocab, False, (43, seed)) for s in (a, b))
    if not np.allclose(va, vb, atol=1e-9):
        raise ExerciseError(
            ex,
            f"without positions the sentence vectors differ (largest difference "
            f"{np.max(np.abs(va - vb)):.3g} when len(a)={len(a)}, len(b)={len(b)}).",
            "self-attention without positions sees a sentence as a BAG of words: its mean "
            "output depends only on which words occur and in what proportions (reordering "
            "the same words is one way to keep both).",
        )
    pa, pb = (_pooled_outputs(s, vocab, True, (43, seed)) for s in (a, b))
    if np.allclose(pa, pb, atol=1e-9):  # pragma: no cover - a reordering always changes them
        raise ExerciseError(ex, "even with positional encodings the two vectors are equal.")
    passed(ex, "two sentences that attention without positions cannot tell apart")


def _first_below_half(d: int, exponent_scale: float = 1.0) -> int:
    omega = 10000.0 ** (-np.arange(0, d, 2) / d * exponent_scale)
    dots = np.cos(np.arange(1000)[:, None] * omega).sum(axis=-1)
    return int(np.argmax(dots < dots[0] / 2))


def check_half_distance(student_fn, *, seed: int = 0) -> None:
    """Exercise 4.4 (predict, then measure): ``half_distance(d_model)``, the first distance k > 0
    at which PE(p)·PE(p+k) falls below half of its value at k = 0, measured with the student's
    table. Seed 0 asks for d_model = 64 (the exercise's), other seeds for hidden widths too; a
    wrong answer is told "too low" or "too high" and why, never the value."""
    ex = "4.4"
    widths = [64]
    if seed:
        rng = hidden_rng(seed, 44)
        widths += [int(rng.choice([16, 24, 32, 48])), int(rng.choice([96, 128]))]
    for d in widths:
        got = call_student(ex, student_fn, d)
        expected = _first_below_half(d)
        hints = {
            expected - 1: "that is the last distance still ABOVE half; the question asks for "
            "the first one below.",
            _first_below_half(d, 0.5): "that distance belongs to a table whose exponent is "
            "i/d_model; use 2i/d_model (i counts pairs).",
        }
        check_prediction(
            ex, got, expected,
            what=f"half_distance({d}), the first k > 0 with PE(p)·PE(p+k) < PE(p)·PE(p) / 2",
            too_low="at that k the product is still above half: the curve falls fast for a few "
            "steps, then lingers on a plateau (the slow pairs still agree), so do not "
            "extrapolate from the first steps; compute it for every k.",
            too_high="a smaller k already falls below half: take the FIRST k > 0 whose product "
            "is below half of the value at k = 0.",
            hints=hints,
        )  # fmt: skip
    passed(ex, "where the positional similarity halves")
