"""Checks for the exercises of lecture 02 (Q/K/V self-attention)."""

from __future__ import annotations

import numpy as np

from ..attention import causal_mask, project_qkv, scaled_dot_product_attention
from ..softmax import softmax
from . import (
    ExerciseError,
    call_on_batch,
    call_student,
    check_mistakes,
    check_value,
    hidden_rng,
    passed,
    tokens_around_x0,
)

__all__ = [
    "check_self_attention",
    "check_causal_mask",
    "check_masked_attention",
    "check_attends_elsewhere",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "2.1": (
        "course_lib.attention.scaled_dot_product_attention",
        "course_lib.attention.scaled_dot_product_attention_inplace",
        "course_lib.attention.project_qkv",
        "course_lib.attention.project_qkv_columns",
    ),
    "2.2": ("course_lib.attention.causal_mask", "course_lib.nn.attention.causal_mask_from"),
    "2.3": (
        "course_lib.attention.scaled_dot_product_attention",
        "course_lib.attention.scaled_dot_product_attention_inplace",
    ),
    "2.4": (),
}


def _weights(scores, axis=-1):
    """Softmax that lets a wrong answer's all -inf row become nan instead of raising."""
    with np.errstate(all="ignore"):
        e = np.exp(scores - np.max(scores, axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


BATCH_HINT = (
    "X may have leading (batch) axes: K.T reverses ALL axes of a 3-D array. Swap only the last "
    "two: np.swapaxes(K, -1, -2), and take the softmax over axis=-1."
)


def check_self_attention(student_fn, *, seed: int = 0) -> None:
    """Exercise 2.1: Z = softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V for X (..., n, d_model)."""
    ex = "2.1"
    rng = np.random.default_rng((21, seed))
    # d_model, d_k and d_v all differ, so a scale by the wrong width shows; then batches.
    cases = [((4, 6), 3, 5), ((1, 2), 2, 2), ((5, 4), 9, 3), ((3, 3), 3, 3),
             ((2, 4, 6), 3, 5), ((2, 3, 5, 4), 2, 3)]  # fmt: skip
    for x_shape, d_k, d_v in cases:
        *lead, n, d_model = x_shape
        batched = bool(lead)
        x = rng.normal(size=x_shape)
        w_q, w_k = rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k))
        w_v = rng.normal(size=(d_model, d_v))
        got = call_on_batch(ex, student_fn, x, w_q, w_k, w_v, batched=batched,
                            batch_hint=BATCH_HINT, where=f" (X of shape {x_shape})")  # fmt: skip
        q, k, v = project_qkv(x, w_q, w_k, w_v)
        s = q @ np.swapaxes(k, -1, -2)
        mistakes = {
            "scale by sqrt(d_k), the width of the keys (K.shape[-1]), not by sqrt(d_model).": (
                _weights(s / np.sqrt(d_model)) @ v
            ),
            "divide the scores by the SQUARE ROOT of d_k, not by d_k.": _weights(s / d_k) @ v,
            "divide the scores by sqrt(d_k) before the softmax.": _weights(s) @ v,
            "the softmax runs along each row (axis=-1: one query's weights over the keys), "
            "not down the columns.": _weights(s / np.sqrt(d_k), axis=-2) @ v,
            "scores are Q @ K^T (rows = queries); K @ Q^T transposes the weights.": (
                _weights(np.swapaxes(s, -1, -2) / np.sqrt(d_k)) @ v
            ),
            "return Z = A @ V, not the weights A.": _weights(s / np.sqrt(d_k)),
            "K = X @ W_K: the keys use their own matrix.": (
                _weights(q @ np.swapaxes(q, -1, -2) / np.sqrt(d_k)) @ v
            ),
        }
        expected = scaled_dot_product_attention(q, k, v)[0]
        try:
            check_mistakes(ex, got, expected,
                           what=f"Z for X of shape {x_shape} (d_k={d_k}, d_v={d_v})",
                           hint="Q = X @ W_Q (same for K, V); scores = Q @ K^T / sqrt(d_k); "
                           "softmax along each row; Z = A @ V.", mistakes=mistakes)  # fmt: skip
        except ExerciseError as err:
            if batched and np.shape(got) != expected.shape and err.hint not in mistakes:
                raise ExerciseError(ex, err.message, BATCH_HINT) from None
            raise
    passed(ex, "self-attention from X, W_Q, W_K, W_V")


def check_causal_mask(student_fn, *, seed: int = 0) -> None:
    """Exercise 2.2: a boolean (n, n) mask, True where query i may look at key j (j <= i)."""
    ex = "2.2"
    rng = np.random.default_rng((22, seed))
    for n in (3, 6, 1, int(rng.integers(2, 10))):
        got = call_student(ex, student_fn, n)
        arr = np.asarray(got)
        check_value(ex, arr.shape, (n, n), what=f"shape of the mask for n={n}")
        i, j = np.indices((n, n))
        known = {
            "opposite convention: in this course True = MAY attend (like PyTorch's "
            "scaled_dot_product_attention); you marked the hidden positions.": j > i,
            "a token may attend to itself: the diagonal must be True (j <= i, not j < i).": j < i,
            "row i is the query and may see keys 0..i: that is on and BELOW the diagonal; you "
            "built the upper triangle.": j >= i,
        }
        expected = causal_mask(n)
        if not np.array_equal(arr.astype(bool), expected):
            hint = "row i is the query; it may see keys 0..i (on and below the diagonal)."
            for mistake, wrong in known.items():
                if np.array_equal(arr.astype(bool), wrong) and n > 1:
                    hint = mistake
                    break
            raise ExerciseError(
                ex,
                f"for n={n}:\n  expected\n{expected.astype(int)}\n  got\n{arr.astype(int)}",
                hint,
            )
        if arr.dtype != bool:
            raise ExerciseError(
                ex,
                f"for n={n} the mask has dtype {arr.dtype}, expected bool.",
                "np.where(mask, ...) and ~mask need booleans: compare numbers (`j <= i`) "
                "or use .astype(bool).",
            )
    passed(ex, "causal mask")


def check_masked_attention(student_fn, *, seed: int = 0) -> None:
    """Exercise 2.3: attention where mask == False gets weight exactly 0."""
    ex = "2.3"
    rng = np.random.default_rng((23, seed))
    n, d = 5, 4
    q, k, v = (rng.normal(size=(n, d)) * 2 for _ in range(3))
    k3, v3 = rng.normal(size=(7, d)) * 2, rng.normal(size=(7, 2))
    random_mask = rng.random((n, 7)) < 0.5
    random_mask[:, 0] = True  # every query may see at least one key
    cases = [
        ("a causal mask", q, k, v, causal_mask(n)),
        ("a padding mask hiding the last two keys", q, k, v, np.array([[True] * 3 + [False] * 2] * n)),
        ("5 queries, 7 keys and a random mask", q, k3, v3, random_mask),
    ]  # fmt: skip
    for what, qq, kk, vv, mask in cases:
        got = call_student(ex, student_fn, qq, kk, vv, mask)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise ExerciseError(
                ex, f"expected a tuple (Z, A), got {type(got).__name__}.", "end with `return Z, A`."
            )
        z_ref, a_ref = scaled_dot_product_attention(qq, kk, vv, mask=mask)
        s = qq @ kk.T / np.sqrt(d)
        flipped = _weights(np.where(mask, -np.inf, s))
        after = softmax(s) * mask
        mistakes = {
            "opposite convention: True means MAY attend, so keep the scores where mask is True "
            "and put -inf where it is False.": flipped,
            "masking after the softmax leaves rows that do not sum to 1: set the hidden scores "
            "to -inf BEFORE the softmax.": after,
            "a boolean mask is not added to the scores: use np.where(mask, scores, -np.inf).": (
                softmax(s + mask)
            ),
            "return (Z, A) in this order: you returned the output first as A.": z_ref,
        }
        check_mistakes(ex, got[1], a_ref, what=f"attention weights A with {what}",
                       hint="set masked scores to -inf (np.where(mask, scores, -np.inf)) BEFORE "
                       "the softmax.", mistakes=mistakes)  # fmt: skip
        check_mistakes(ex, got[0], z_ref, what=f"output Z with {what}", hint="Z = A @ V.",
                       mistakes={"return (Z, A) in this order.": a_ref})  # fmt: skip
    passed(ex, "masked attention")


def _elsewhere_cases(seed: int) -> list[tuple[np.ndarray, float]]:
    """(token 0, share): the notebook's two (seed 0), or hidden ones (other lengths, directions
    and shares: a factor that works for one x_0 fails for a shorter one or a larger share). The
    last hidden case is always short (|x_0| < 0.3) with share 0.999: it needs x_1 = c x_0 with
    c > 100, so no fixed factor of 100 or less passes, whatever the draw."""
    if seed == 0:
        return [(np.array([1.0, 0.0]), 0.9), (np.array([0.0, 2.0]), 0.99)]
    rng = hidden_rng(seed, 24)
    cases = []
    for share, shortest, longest in ((0.9, 0.3, 3.0), (0.99, 0.3, 3.0), (0.999, 0.2, 0.3)):
        angle, length = rng.uniform(0, 2 * np.pi), rng.uniform(shortest, longest)
        cases.append((length * np.array([np.cos(angle), np.sin(angle)]), share))
    return cases


def check_attends_elsewhere(student_fn, *, seed: int = 0) -> None:
    """Exercise 2.4 (construct): ``attends_elsewhere(x0, share) -> X`` (3, 2), with ``X[0] = x0``
    and token 0 putting more than ``share`` of its weight on token 1.

    With W_Q = W_K = W_V = I the weights are softmax(X X^T / sqrt(2)). Every such X is accepted;
    the grader varies token 0 (length, direction) and the share.
    """
    ex = "2.4"
    for x0, share in _elsewhere_cases(seed):
        arr, given = tokens_around_x0(ex, student_fn, x0, share, (3, 2), "3 tokens, 2 features")
        a = softmax(arr @ arr.T / np.sqrt(2), axis=-1)
        if a[0, 1] > share:
            continue
        if np.allclose(arr[0], arr[1]):
            hint = (
                "two equal tokens share the weight equally; token 1 must beat token 0's own score."
            )
        elif arr[0] @ arr[1] <= arr[0] @ arr[0]:
            hint = (
                "token 0's score with itself is |x_0|^2. To beat it, x_1 must point partly the "
                "same way as x_0, enough that x_0 · x_1 > x_0 · x_0 (along x_0 and longer, say)."
            )
        else:
            hint = (
                "x_1 already scores higher than x_0 itself, but not by enough for this x0 and "
                "share: the weights are softmax of the scores / sqrt(2), so the gap "
                "x_0 · x_1 - x_0 · x_0 must grow with the share, and a short x_0 needs a larger "
                "factor. Work out how large from x0 and share."
            )
        raise ExerciseError(
            ex,
            f"{given}, weights of token 0 on tokens (0, 1, 2):\n  expected more than {share} on "
            f"token 1\n  got      {np.round(a[0], 4)}",
            hint,
        )
    passed(ex, "a token that attends to another token more than to itself")
