"""Count baselines for a language model: unigram and bigram probabilities from token counts.

A model that predicts the next token must beat these to have learned anything beyond word
frequencies (unigram) and which token tends to follow which (bigram)::

    unigram  P(b)     = (c(b) + 1) / (N + V)                      add-one smoothing
    bigram   P(b | a) = (c(a, b) + beta * P(b)) / (c(a) + beta)   backs off to the unigram

``beta`` (the weight of the unigram prior) decides how much an unseen pair still gets; a pair
seen often is scored by its own frequency. Both score held-out text in nats per token.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import (
    check_index,
    check_positive_int,
    check_positive_number,
    check_tensor,
    check_token_ids,
)

__all__ = ["CountLM", "unigram_lm", "bigram_lm"]


class CountLM(nn.Module):
    """A unigram (``order=1``) or bigram (``order=2``) model given by its log-probabilities.

    ``log_probs`` is ``(vocab,)`` for a unigram and ``(vocab, vocab)`` for a bigram (row = the
    previous token). :meth:`nll` gives the mean negative log-likelihood of a token stream.
    ``forward(ids (B, n)) -> (B, n, vocab)`` gives the log-probabilities of the token after each
    position, as a language model's logits, so :func:`~course_lib.generate` samples from it
    exactly as from a GPT (its context, ``context_length``, is one token; the cache stays empty).
    """

    context_length = 1  # a count model looks at the last token at most

    def __init__(self, log_probs: torch.Tensor):
        super().__init__()
        check_tensor(log_probs, "log_probs", None, "(vocab,) or (vocab, vocab)")
        if log_probs.ndim not in (1, 2):
            raise ValueError(
                f"log_probs must be (vocab,) or (vocab, vocab), got {tuple(log_probs.shape)}"
            )
        self.register_buffer("log_probs", log_probs)
        self.order = log_probs.ndim
        self.vocab_size = len(log_probs)

    def forward(self, ids: torch.Tensor, cache=None) -> torch.Tensor:
        """Log-probabilities ``(B, n, vocab)`` of the token after each of ``ids (B, n)``
        (``cache`` is accepted for :func:`~course_lib.generate` and not used)."""
        check_token_ids(ids, "ids", "(batch, n)", self.vocab_size)
        if self.order == 1:
            return self.log_probs.expand(*ids.shape, self.vocab_size)  # the context is ignored
        return self.log_probs[ids]  # row = the previous token

    def next_token_log_probs(self, previous: int | None = None) -> torch.Tensor:
        """``(vocab,)`` log-probabilities of the next token (given ``previous`` for a bigram)."""
        if self.order == 1:
            return self.log_probs
        if previous is None:
            raise ValueError("a bigram model needs the previous token")
        return self.log_probs[check_index(previous, "previous", len(self.log_probs), "vocab_size")]

    def nll(self, ids: torch.Tensor) -> float:
        """Mean negative log-likelihood in nats/token of ``ids[1:]`` (the first token is context)."""
        check_token_ids(ids, "ids", "(n,)", len(self.log_probs))
        if len(ids) < 2:
            raise ValueError(
                f"ids must be a 1-D stream of at least 2 tokens, got {tuple(ids.shape)}"
            )
        targets = ids[1:]
        if self.order == 1:
            lp = self.log_probs[targets]
        else:
            lp = self.log_probs[ids[:-1], targets]
        return -lp.double().mean().item()


def _check_ids(ids, vocab_size) -> int:
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_token_ids(ids, "ids", "(n,)", vocab_size)
    return vocab_size


def unigram_lm(ids: torch.Tensor, vocab_size: int) -> CountLM:
    """Token frequencies of the training stream ``ids``, add-one smoothed."""
    v = _check_ids(ids, vocab_size)
    counts = torch.bincount(ids, minlength=v).double()
    return CountLM(torch.log((counts + 1) / (counts.sum() + v)))


def bigram_lm(ids: torch.Tensor, vocab_size: int, beta: float = 1.0) -> CountLM:
    """Pair frequencies of ``ids``, smoothed towards the unigram: ``(c(a,b) + beta P(b)) /
    (c(a) + beta)``. ``beta > 0``; larger trusts the counts less."""
    v = _check_ids(ids, vocab_size)
    check_positive_number(beta, "beta")
    unigram = unigram_lm(ids, v).log_probs.exp()
    pairs = torch.zeros(v * v, dtype=torch.float64)
    pairs.index_add_(0, ids[:-1] * v + ids[1:], torch.ones(len(ids) - 1, dtype=torch.float64))
    pairs = pairs.view(v, v)  # (previous, next)
    probs = (pairs + beta * unigram) / (pairs.sum(1, keepdim=True) + beta)
    return CountLM(torch.log(probs))
