"""Text generation from a decoder-only language model: predict, append, repeat.

The loop of the lecture notes ("the new sequence ... is repeated ... until the model generates
an end-of-sequence token or reaches a predefined maximum length") and of lecture 07's greedy
decoder, for any model with

* ``forward(ids, cache=None) -> logits (batch, n, vocab)`` where ``cache`` is a
  :class:`course_lib.nn.KVCache` filled in place, and
* a ``context_length`` attribute: the context length (most positions it can look at).

Choosing the next token from the last position's logits (:func:`next_token`):

* ``temperature == 0``: greedy, the most probable token;
* otherwise sampling from ``softmax(logits / temperature)`` after optional filtering:
  :func:`top_k_filter` keeps the ``k`` most probable tokens, :func:`top_p_filter` (nucleus)
  keeps the smallest set of most probable tokens whose probabilities reach ``p``.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from .._validation import (
    check_context,
    check_flag,
    check_generator,
    check_module,
    check_positive_int,
    check_str,
)
from ..nn import KVCache, eval_mode
from ..tokenization import BPETokenizer

__all__ = [
    "top_k_filter",
    "top_p_filter",
    "next_token",
    "generate",
    "next_token_table",
]

_TOLERANCE = 1e-9  # a cumulative probability this close below p counts as reaching p


def _check_logits(logits) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        got = (
            f"{logits.dtype} tensor" if isinstance(logits, torch.Tensor) else type(logits).__name__
        )
        raise TypeError(f"logits must be a floating torch.Tensor (..., vocab), got {got}")
    if logits.ndim < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., vocab), got {tuple(logits.shape)}")
    return logits


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row, set the others to ``-inf``.

    Exactly ``k`` survive even when values tie (the tie goes to the lower token id, as
    ``torch.topk`` orders them). ``k >= vocab`` keeps everything.

    Args:
        logits: ``(..., vocab)``.
        k: number of tokens to keep (>= 1).

    Returns:
        A new tensor of the same shape.
    """
    _check_logits(logits)
    k = check_positive_int(k, "top_k")
    if k >= logits.shape[-1]:
        return logits.clone()
    keep = torch.zeros_like(logits, dtype=torch.bool)
    keep.scatter_(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filtering: keep the smallest set of most probable tokens whose total probability
    reaches ``p``; set the others to ``-inf``.

    Sort the probabilities ``softmax(logits)`` in decreasing order; keep a token when the total of
    the tokens before it is still below ``p``. So the most probable token is always kept, and
    with probabilities (0.5, 0.3, 0.2): ``p = 0.5`` keeps one token, ``p = 0.6`` two, ``p = 0.8``
    two, ``p = 0.81`` three. (Sums are taken in float64; a total within 1e-9 below ``p`` counts
    as reaching it.)

    Args:
        logits: ``(..., vocab)``.
        p: in ``(0, 1]``; ``1`` keeps everything.
    """
    _check_logits(logits)
    p = _check_top_p(p)
    if p == 1.0:
        return logits.clone()
    probs = torch.softmax(logits.double(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # total of the more probable tokens
    keep_sorted = before < p - _TOLERANCE
    keep_sorted[..., 0] = True  # the most probable token is always kept, however small p is
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def _check_temperature(temperature) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not 0 <= temperature < math.inf:
        raise ValueError(
            "temperature must be a finite number >= 0 (0 = greedy, 1 = the model's "
            f"distribution), got {temperature}"
        )
    return float(temperature)


def _check_top_p(p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"top_p must be a number in (0, 1], got {type(p).__name__}")
    if not 0 < p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {p}")
    return float(p)


def next_token(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Pick one token per row from ``logits (batch, vocab)``: greedy if ``temperature == 0``,
    else sample from ``softmax(filtered logits / temperature)``. Returns ``(batch,)`` long ids."""
    _check_logits(logits)
    if logits.ndim != 2:
        raise ValueError(
            f"logits must have shape (batch, vocab), got {tuple(logits.shape)}; "
            "for one row use logits[None]"
        )
    if torch.isnan(logits).any():
        raise ValueError("logits contains nan; no token can be picked from a nan distribution")
    if torch.isposinf(logits).any():
        row = int(torch.isposinf(logits).any(-1).nonzero()[0])
        raise ValueError(
            f"logits row {row} contains +inf: softmax is undefined there (inf - inf); give "
            "finite logits (a token that must be chosen can get a large finite logit)"
        )
    if torch.isneginf(logits).all(-1).any():
        row = int(torch.isneginf(logits).all(-1).nonzero()[0])
        raise ValueError(
            f"logits row {row} is -inf everywhere: every token is excluded, none can be picked; "
            "each row needs at least one finite logit"
        )
    temperature = _check_temperature(temperature)
    if top_k is not None:
        check_positive_int(top_k, "top_k")
    if top_p is not None:
        _check_top_p(top_p)
    check_generator(generator)
    return _pick(logits, temperature, top_k, top_p, generator)


def _pick(logits, temperature, top_k, top_p, generator) -> torch.Tensor:
    """The sampling step of :func:`generate` (and :func:`next_token` after its checks):
    ``logits (B, vocab)`` of the next token -> one token id per row ``(B,)``."""
    if temperature == 0:
        return logits.argmax(dim=-1)  # greedy: the most probable token
    scaled = logits / temperature  # T < 1 sharpens the distribution, T > 1 flattens it
    if torch.isposinf(
        scaled
    ).any():  # so tiny a T overflowed: shift by the max first (same softmax)
        scaled = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    logits = scaled
    if top_k is not None:
        logits = top_k_filter(logits, top_k)  # all but the k most probable -> -inf
    if top_p is not None:
        logits = top_p_filter(logits, top_p)  # all but the nucleus of probability p -> -inf
    probs = torch.softmax(logits.float(), dim=-1)  # (B, vocab); a -inf logit gets probability 0
    return torch.multinomial(probs, num_samples=1, generator=generator)[:, 0]  # (B,)


@torch.no_grad()
def generate(
    model: nn.Module,
    ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_id: int | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend the prompts ``ids`` by up to ``max_new_tokens`` tokens, one at a time.

    Each step runs the model, takes the logits of the **last** position, picks a token with
    :func:`next_token` and appends it. With ``use_cache`` the model gets a :class:`KVCache`:
    the first step processes the prompt, every later step only the one new token (the keys and
    values of the earlier positions are in the cache). Without it, every step processes the
    whole sequence again; both give the same tokens. If the sequence outgrows the context
    (``model.context_length``), only its last ``context_length`` tokens are seen (a sliding window; with a
    cache it is then rebuilt from that window at each step).

    Args:
        model: ``forward(ids, cache=None) -> (batch, n, vocab)`` with a ``context_length`` attribute.
        ids: ``(batch, n)`` long prompt ids, ``1 <= n <= model.context_length``.
        max_new_tokens: how many tokens to add at most (>= 0).
        temperature: 0 for greedy decoding, else the softmax temperature (> 0).
        top_k: keep only the ``top_k`` most probable tokens (>= 1) before sampling.
        top_p: keep only the nucleus of probability ``top_p`` in (0, 1] before sampling.
        eos_id: stop a row when it produces this id (later positions repeat it); stop when
            every row has.
        use_cache: use the KV cache.
        generator: a ``torch.Generator`` for sampling (same generator state -> same tokens).

    Returns:
        ``(batch, n + new)`` long ids, the prompt first; ``new <= max_new_tokens``.

    Raises:
        ValueError: temperature < 0, top_k < 1, top_p outside (0, 1], a prompt longer than the
            context, or ids not ``(batch, n)``.
    """
    context = _check_generate_args(model, ids, temperature, top_k, top_p, eos_id)
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens", allow_zero=True)
    use_cache = check_flag(use_cache, "use_cache")
    check_generator(generator)
    with eval_mode(model):
        cache = KVCache() if use_cache else None
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)  # rows at eos
        fresh = ids  # the tokens the model has not read yet
        for _ in range(max_new_tokens):
            if cache is None or len(cache) + fresh.shape[1] > context:
                cache = None if cache is None else KVCache()  # no cache, or the window slid
                fresh = ids[:, -context:]  # read the whole sequence (its last `context` tokens)
            logits = model(fresh, cache)  # (B, n_fresh, vocab)
            token = _pick(logits[:, -1, :], temperature, top_k, top_p, generator)  # (B,)
            if eos_id is not None:
                token = token.masked_fill(done, eos_id)  # a finished row repeats eos
                done |= token == eos_id
            ids = torch.cat([ids, token[:, None]], dim=1)  # (B, n + 1): append
            fresh = token[:, None]  # (B, 1): with a cache, the next call reads only this token
            if done.all():
                break
    return ids


def _check_generate_args(model, ids, temperature, top_k, top_p, eos_id) -> int:
    """generate's door: every argument once, before the loop. Returns the context length."""
    check_module(model)
    context = check_context(model)
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
        raise TypeError(
            "ids must be a torch.long tensor of token ids (batch, n), got "
            f"{type(ids).__name__}{'' if not isinstance(ids, torch.Tensor) else ' ' + str(ids.dtype)}"
        )
    if ids.ndim != 2 or ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(
            f"ids must have shape (batch, n) with batch, n >= 1, got {tuple(ids.shape)}; "
            "for one prompt use ids[None]"
        )
    if ids.shape[1] > context:
        raise ValueError(
            f"ids: the prompt has {ids.shape[1]} tokens but the model's context is "
            f"context_length={context}; shorten the prompt (e.g. ids[:, -{context}:])"
        )
    _check_temperature(temperature)
    if top_k is not None:
        check_positive_int(top_k, "top_k")
    if top_p is not None:
        _check_top_p(top_p)
    if eos_id is not None:
        check_positive_int(eos_id, "eos_id", allow_zero=True)
        vocab = getattr(getattr(model, "config", None), "vocab_size", None)
        vocab = getattr(model, "vocab_size", None) if vocab is None else vocab
        if isinstance(vocab, int) and eos_id >= vocab:
            raise ValueError(f"eos_id must be in [0, vocab_size={vocab}), got {eos_id}")
    return context


@torch.no_grad()
def next_token_table(
    model: nn.Module, tokenizer: BPETokenizer, prompt: str, k: int = 10
) -> list[tuple[str, float]]:
    """The ``k`` most probable next tokens after ``prompt``, as ``(token text, probability)``.

    ``tokenizer`` has ``encode(text) -> ids`` and ``decode(ids) -> text`` (a
    :class:`course_lib.tokenization.BPETokenizer`); the model reads the whole prompt once.
    """
    check_context(check_module(model))
    k = check_positive_int(k, "k")
    check_str(prompt, "prompt")
    if not (hasattr(tokenizer, "encode") and hasattr(tokenizer, "decode")):
        raise TypeError(
            "tokenizer must have encode() and decode() (a BPETokenizer), got "
            f"{type(tokenizer).__name__}"
        )
    ids = torch.tensor([tokenizer.encode(prompt)], dtype=torch.long)
    if ids.shape[1] == 0:
        raise ValueError("prompt: it has no tokens; give at least one character")
    with eval_mode(model):
        probs = torch.softmax(model(ids[:, -model.context_length :])[0, -1].double(), dim=-1)
    top = probs.topk(min(k, probs.numel()))
    return [
        (tokenizer.decode([i]), p)
        for i, p in zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ]
