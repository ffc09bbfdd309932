"""Checks for the exercises of lecture 07 (machine translation)."""

from __future__ import annotations

import numpy as np
import torch

from ..additive_attention import additive_attention
from ..attention import causal_mask, padding_mask
from ..models.decoding import greedy_decode
from . import (
    Built,
    ExerciseError,
    call_student,
    check_mistakes,
    check_value,
    hidden_rng,
    passed,
)
from .given_torch import scripted_model, tiny_translator

__all__ = [
    "check_additive_attention",
    "check_decoder_self_mask",
    "check_greedy_decode",
    "check_greedy_counterexample",
    "scripted_model",
    "tiny_translator",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "7.1": (
        "course_lib.additive_attention.additive_attention",
        "course_lib.additive_attention.additive_attention_scores",
        "course_lib.models.seq2seq.AdditiveAttention",
    ),
    "7.2": ("course_lib.attention.causal_mask", "course_lib.attention.padding_mask"),
    "7.3": (
        "course_lib.models.decoding.greedy_decode",
        "course_lib.models.decoding.beam_search",
        "course_lib.models.decoding.translate",
    ),
    "7.4": (),
}


def _softmax_or_nan(scores):
    with np.errstate(all="ignore"):
        e = np.exp(scores - np.max(scores))
        return e / e.sum()


def _additive_mistakes(s, h, wq, wk, v, mask) -> dict:
    raw = (s @ wq + h @ wk) @ v
    scores = np.tanh(s @ wq + h @ wk) @ v
    out = {
        "the score is v · tanh(s @ w_query + h_j @ w_key): the tanh comes before the product "
        "with v.": _softmax_or_nan(raw if mask is None else np.where(mask, raw, -np.inf)),
    }
    if mask is not None:
        out["opposite convention: mask True = a real word that may be attended; put -inf where "
            "it is False."] = _softmax_or_nan(np.where(mask, -np.inf, scores))  # fmt: skip
        out["mask BEFORE the softmax (scores = -inf where mask is False); zeroing weights "
            "afterwards leaves a sum below 1."] = _softmax_or_nan(scores) * mask  # fmt: skip
        out["the mask was ignored: padding positions must get weight 0."] = _softmax_or_nan(scores)
    return out


def check_additive_attention(student_fn, *, seed: int = 0) -> None:
    """Exercise 7.1: ``fn(s, h, w_query, w_key, v, mask=None) -> (context, weights)``."""
    ex = "7.1"
    rng = np.random.default_rng((7, seed))
    cases = []
    # a hand-sized case: d_att = 1, W = v = 1, s = 0 -> scores tanh(h_j)
    cases.append(("s = 0, W_s = W_h = v = 1 (scores are tanh(h_j))",
                  (np.array([0.0]), np.array([[0.0], [1.0], [-2.0]]), np.ones((1, 1)),
                   np.ones((1, 1)), np.ones(1)), None))  # fmt: skip
    s, h = rng.normal(size=4), rng.normal(size=(6, 5))
    wq, wk, v = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=3)
    cases.append(
        ("a decoder state of width 4 and 6 encoder states of width 5", (s, h, wq, wk, v), None)
    )
    cases.append(("the same with the last two source words masked out (padding)",
                  (s, h, wq, wk, v), np.array([True] * 4 + [False] * 2)))  # fmt: skip
    cases.append(("a single source word (its weight must be 1)", (s, h[:1], wq, wk, v), None))
    for what, args, mask in cases:
        expected_ctx, expected_w = additive_attention(*args, mask=mask)
        copies = [a.copy() for a in args]
        kwargs = {} if mask is None else {"mask": mask.copy()}
        got = call_student(ex, student_fn, *copies, **kwargs)
        if not isinstance(got, tuple) or len(got) != 2:
            raise ExerciseError(ex, f"expected a tuple (context, weights), got {type(got).__name__}.",
                                "end with `return context, weights`.")  # fmt: skip
        hint = ("scores e_j = v · tanh(s @ w_query + h_j @ w_key); weights = softmax over j "
                "(masked scores set to -inf first); context = weights @ h.")  # fmt: skip
        mistakes = _additive_mistakes(*args, mask)
        mistakes["return (context, weights) in this order."] = expected_ctx
        check_mistakes(ex, got[1], expected_w, what=f"weights for {what}", hint=hint,
                       mistakes=mistakes)  # fmt: skip
        check_mistakes(ex, got[0], expected_ctx, what=f"context for {what}", hint=hint,
                       mistakes={"the context is the weighted sum of the ENCODER states: "
                                 "weights @ h.": expected_w})  # fmt: skip
    passed(ex, "additive (Bahdanau) attention")


def check_decoder_self_mask(student_fn, *, seed: int = 0) -> None:
    """Exercise 7.2: ``fn(lengths, n) -> (batch, n, n)`` bool, causal AND target padding."""
    ex = "7.2"
    rng = np.random.default_rng((72, seed))
    random_lengths = [int(x) for x in rng.integers(1, 7, size=3)]
    for lengths, n in (([3, 5, 1], 5), ([4], 4), ([1, 2], 3), (random_lengths, 6)):
        expected = causal_mask(n)[None] & padding_mask(np.array(lengths), n)
        got = call_student(ex, student_fn, np.array(lengths), n)
        got_arr = np.asarray(got)
        i, j = np.indices((n, n))
        real = np.arange(n)[None, :] < np.array(lengths)[:, None]  # (batch, n)
        known = {
            "opposite convention: True = MAY attend; you marked the hidden positions.": ~expected,
            "the padding rule is missing: also require j < lengths[b] (combine with &).": (
                np.broadcast_to(j <= i, expected.shape)
            ),
            "the causal rule is missing: also require j <= i.": np.broadcast_to(
                real[:, None, :], expected.shape
            ),
            "padding hides KEYS (columns j >= lengths[b]), not queries (rows): "
            "real[:, None, :], not real[:, :, None].": (j <= i)[None] & real[:, :, None],
            "a token may attend to itself: j <= i, not j < i.": (j < i)[None] & real[:, None, :],
        }
        hint = ("position i may attend to j when j <= i (causal) AND j < length of its "
                "sentence (padding); combine the two with &. Shape (batch, n, n).")  # fmt: skip
        if got_arr.shape == expected.shape and not np.array_equal(got_arr.astype(bool), expected):
            for mistake, wrong in known.items():
                if np.array_equal(got_arr.astype(bool), wrong):
                    hint = mistake
                    break
        if got_arr.shape != expected.shape and got_arr.shape[-2:] == (n, n) and len(lengths) > 1:
            hint = ("one (n, n) mask per sentence: the result has shape (batch, n, n) — "
                    "use every entry of lengths, not only the first.")  # fmt: skip
        check_mistakes(ex, got_arr.astype(float) if got_arr.dtype == np.bool_ else got_arr,
                       expected, what=f"mask for lengths={lengths}, n={n}", hint=hint)  # fmt: skip
        if got_arr.dtype != np.bool_:
            raise ExerciseError(ex, f"expected a boolean array, got dtype {got_arr.dtype}.",
                                "build it from comparisons such as `j <= i` (True = may attend).")  # fmt: skip
    passed(ex, "the decoder's self-attention mask")


def _check_ids(ex: str, got, expected: torch.Tensor, what: str, hint: str | None = None) -> None:
    if not isinstance(got, torch.Tensor):
        raise ExerciseError(ex, f"{what}: expected a torch tensor of ids, got {type(got).__name__}.",
                            "return the generated ids without the leading <bos>: `ys[:, 1:]`.")  # fmt: skip
    check_value(
        ex, got.tolist(), expected.tolist(), what=what,
        hint=hint or "start from a column of <bos>; at each step take argmax of the LAST "
        "position's logits, put pad_id in rows that already produced <eos>, append, and stop "
        "when every row is done or after max_new_tokens words; return ys[:, 1:].",
    )  # fmt: skip


def _greedy_mistake(model, src, src_mask, max_new_tokens, variant: str) -> list:
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), 1, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_new_tokens):
        logits = model.decode(memory, src_mask, ys)
        nxt = (logits[:, 0] if variant == "first" else logits[:, -1]).argmax(-1)
        if variant != "no pad":
            nxt = nxt.masked_fill(done, 0)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == 2
        if (variant == "any" and done.any()) or (variant != "never stops" and done.all()):
            break
    return (ys if variant == "bos" else ys[:, 1:]).tolist()


_GREEDY_MISTAKES = {
    "bos": "return the generated ids WITHOUT the leading <bos> column: ys[:, 1:].",
    "no pad": "a row that already produced <eos> gets pad_id from then on, not more words.",
    "first": "take the argmax of the LAST position's logits (logits[:, -1]): it predicts the "
    "next word.",
    "never stops": "stop as soon as EVERY row has produced <eos> (do not always run max_new_tokens "
    "steps).",
    "any": "stop when EVERY row is done, not when the first row produces <eos>.",
}


def check_greedy_decode(student_fn, *, seed: int = 0) -> None:
    """Exercise 7.3: ``fn(model, src, src_mask, bos_id, eos_id, pad_id, max_new_tokens)``."""
    ex = "7.3"
    src = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1], [2, 1, 1, 1]])
    scripts = [[[4, 5, 2], [3, 2], [6, 6, 6, 6, 6]], [[3, 3, 2], [7, 5, 5, 5, 4, 2], [2]]]
    cases = [(Built("course_lib.checks.given_torch:scripted_model", script=sc), src, src >= 0, m,
              f"output of a model that says {sc} (then <eos>) with max_new_tokens={m}")
             for sc in scripts for m in (10, 3)]  # fmt: skip
    src2 = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]])
    cases.append((Built("course_lib.checks.given_torch:tiny_translator", seed=seed), src2,
                  src2 != 0, 6, "output of a small (untrained) Transformer, max_new_tokens=6"))  # fmt: skip
    for recipe, s, s_mask, max_new_tokens, what in cases:
        model = recipe.build()
        with torch.no_grad():
            expected = greedy_decode(
                model, s, s_mask, bos_id=1, eos_id=2, pad_id=0, max_new_tokens=max_new_tokens
            )
            got = call_student(
                ex, student_fn, recipe, s.clone(), s_mask.clone(), 1, 2, 0, max_new_tokens
            )
            hint = None
            if isinstance(got, torch.Tensor) and got.tolist() != expected.tolist():
                for variant, mistake in _GREEDY_MISTAKES.items():
                    if got.tolist() == _greedy_mistake(model, s, s_mask, max_new_tokens, variant):
                        hint = mistake
                        break
        _check_ids(ex, got, expected, what, hint)
    passed(ex, "greedy decoding")


def _trap_cases(seed: int) -> list[np.ndarray]:
    """First-word distributions: the notebook's (seed 0) or hidden ones (V = 3, 4 or 6), each
    with one largest word and a runner-up above largest / V (so a trap exists)."""
    if seed == 0:
        return [np.array([0.6, 0.4]), np.array([0.5, 0.3, 0.2])]
    rng = hidden_rng(seed, 74)
    cases = []
    for v in (3, 4, 6):
        while True:
            p = rng.dirichlet(np.ones(v))
            top = np.sort(p)[::-1]
            if top[0] - top[1] > 0.02 and top[1] > 1.3 * top[0] / v:
                break
        cases.append(p)
    return cases


def check_greedy_counterexample(student_fn, *, seed: int = 0) -> None:
    """Exercise 7.4 (construct): ``greedy_trap(p_first) -> p_second`` (V, V), the next-word
    probabilities after each first word, for which greedy decoding does not find the most
    probable two-word output. ``p_first[a]`` = P(first word a); ``p_second[a][b]`` = P(second
    word b | first word a). Every such table is accepted; the grader varies p_first and V.
    """
    ex = "7.4"
    for p1 in _trap_cases(seed):
        v = p1.shape[0]
        given = f"for p_first = {np.round(p1, 4).tolist()}"
        got = call_student(ex, student_fn, p1.copy())
        try:
            p2 = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"{given}: expected p_second, a ({v}, {v}) array of "
                                f"numbers, got {type(got).__name__}.") from None  # fmt: skip
        if p2.shape != (v, v):
            raise ExerciseError(
                ex, f"{given}: expected p_second of shape ({v}, {v}), got {p2.shape}.",
                "p_second[a] is the distribution of the second word after first word a.",
            )  # fmt: skip
        if (p2 < 0).any() or not np.allclose(p2.sum(axis=1), 1.0):
            raise ExerciseError(
                ex, f"{given}: the rows of p_second sum to {np.round(p2.sum(axis=1), 4).tolist()}.",
                "these are probabilities: non-negative, and EVERY row of p_second sums to 1.",
            )  # fmt: skip
        a = int(p1.argmax())
        if np.sum(p2[a] == p2[a].max()) > 1:
            raise ExerciseError(ex, f"{given}: after first word {a}, two second words tie.",
                                "make greedy's second choice unambiguous.")  # fmt: skip
        greedy_p = p1[a] * p2[a].max()
        joint = p1[:, None] * p2
        if joint.max() > greedy_p * (1 + 1e-9):
            continue
        best = np.unravel_index(joint.argmax(), joint.shape)
        raise ExerciseError(
            ex,
            f"{given}: greedy picks ({a}, {int(p2[a].argmax())}) with probability "
            f"{greedy_p:.4f}, and that is also the best pair {tuple(int(x) for x in best)}.",
            "greedy commits to the likeliest FIRST word. Make that word's continuations all "
            "unlikely (spread p_second[a] out), and give another first word one near-certain "
            "continuation: which first word can then beat greedy, for THIS p_first?",
        )
    passed(ex, "greedy decoding is not the most probable output")
