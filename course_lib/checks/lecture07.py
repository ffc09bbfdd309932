"""Checks for the exercises of lecture 07 (machine translation)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..additive_attention import additive_attention
from ..attention import causal_mask, padding_mask
from ..models.decoding import greedy_decode
from ..models.transformer import TransformerTranslator
from . import Built, ExerciseError, call_student, check_array, check_value, passed

__all__ = ["check_additive_attention", "check_decoder_self_mask", "check_greedy_decode"]


def check_additive_attention(student_fn) -> None:
    """Exercise 7.1: ``fn(s, h, w_query, w_key, v, mask=None) -> (context, weights)``."""
    ex = "7.1"
    rng = np.random.default_rng(7)
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
        check_array(ex, got[1], expected_w, what=f"weights for {what}", hint=hint)
        check_array(ex, got[0], expected_ctx, what=f"context for {what}", hint=hint)
    passed(ex, "additive (Bahdanau) attention")


def check_decoder_self_mask(student_fn) -> None:
    """Exercise 7.2: ``fn(lengths, n) -> (batch, n, n)`` bool, causal AND target padding."""
    ex = "7.2"
    for lengths, n in (([3, 5, 1], 5), ([4], 4), ([1, 2], 3)):
        expected = causal_mask(n)[None] & padding_mask(np.array(lengths), n)
        got = call_student(ex, student_fn, np.array(lengths), n)
        got_arr = np.asarray(got)
        if got_arr.dtype != np.bool_:
            raise ExerciseError(ex, f"expected a boolean array, got dtype {got_arr.dtype}.",
                                "build it from comparisons such as `j <= i` (True = may attend).")  # fmt: skip
        check_array(
            ex, got_arr, expected, what=f"mask for lengths={lengths}, n={n}",
            hint="position i may attend to j when j <= i (causal) AND j < length of its "
            "sentence (padding); combine the two with &. Shape (batch, n, n).",
        )  # fmt: skip
    passed(ex, "the decoder's self-attention mask")


class _Scripted(nn.Module):
    """A stand-in model whose decoder 'translates' row b into ``script[b]``, then <eos>."""

    def __init__(self, script: list[list[int]], vocab: int = 8, eos_id: int = 2):
        super().__init__()
        self.script, self.vocab, self.eos_id = script, vocab, eos_id

    def encode(self, src, src_mask):
        return src

    def decode(self, memory, src_mask, tgt_in):
        b, t = tgt_in.shape
        logits = torch.zeros(b, t, self.vocab)
        for i in range(b):
            for j in range(t):
                script = self.script[i]
                logits[i, j, script[j] if j < len(script) else self.eos_id] = 1.0
        return logits


def scripted_model(script: list[list[int]]) -> _Scripted:
    """Factory for :class:`Built`: the stand-in model that says ``script[b]`` for row b."""
    return _Scripted(script)


def small_translator(seed: int = 0) -> TransformerTranslator:
    """Factory for :class:`Built`: a small untrained Transformer, its weights drawn from ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TransformerTranslator(12, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32).eval()


def _check_ids(ex: str, got, expected: torch.Tensor, what: str) -> None:
    if not isinstance(got, torch.Tensor):
        raise ExerciseError(ex, f"{what}: expected a torch tensor of ids, got {type(got).__name__}.",
                            "return the generated ids without the leading <bos>: `ys[:, 1:]`.")  # fmt: skip
    check_value(
        ex, got.tolist(), expected.tolist(), what=what,
        hint="start from a column of <bos>; at each step take argmax of the LAST position's "
        "logits, put pad_id in rows that already produced <eos>, append, and stop when every "
        "row is done or after max_len words; return ys[:, 1:].",
    )  # fmt: skip


def check_greedy_decode(student_fn) -> None:
    """Exercise 7.3: ``fn(model, src, src_mask, bos_id, eos_id, pad_id, max_len)``."""
    ex = "7.3"
    src = torch.ones(3, 4, dtype=torch.long)
    scripted = Built(f"{__name__}:scripted_model", script=[[4, 5, 2], [3, 2], [6, 6, 6, 6, 6]])
    for max_len in (10, 3):
        expected = greedy_decode(
            scripted.build(), src, src == 1, bos_id=1, eos_id=2, pad_id=0, max_len=max_len
        )
        got = call_student(ex, student_fn, scripted, src, src == 1, 1, 2, 0, max_len)
        what = (f"output of a model that says [4 5 <eos>], [3 <eos>], [6 6 6 6 6 <eos>] "
                f"with max_len={max_len}")  # fmt: skip
        _check_ids(ex, got, expected, what)
    model = Built(f"{__name__}:small_translator", seed=0)
    src = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]])
    expected = greedy_decode(model.build(), src, src != 0, bos_id=1, eos_id=2, pad_id=0, max_len=6)
    got = call_student(ex, student_fn, model, src, src != 0, 1, 2, 0, 6)
    _check_ids(ex, got, expected, "output of a small (untrained) Transformer, max_len=6")
    passed(ex, "greedy decoding")
