"""Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): a cheap draft guesses, the
target checks all the guesses in one forward pass.

Each round::

    1. the draft model proposes k tokens, one at a time (k cheap forward passes);
    2. the target reads the k tokens at once (one forward pass, k + 1 next-token distributions);
    3. keep the longest prefix of the guesses the target agrees with, plus one token of the
       target's own: every round adds between 1 and k + 1 tokens for one target pass.

Greedy (temperature 0): "agrees" means the target's argmax is the drafted token, and the output
is exactly the target's own greedy decoding. Sampling: :func:`speculative_accept` keeps draft
token ``x`` with probability ``min(1, p(x) / q(x))`` (``p`` the target's, ``q`` the draft's
distribution) and at the first rejection samples from ``norm(max(0, p - q))``: the tokens are
then distributed exactly as if sampled from the target (the paper's theorem; the tests run a χ²
test). Both caches are cropped back to the accepted tokens after every round.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from .._validation import check_flag, check_module, check_positive_int
from ..models.generation import _check_generate_args, _pick
from ..nn import KVCache, eval_mode

__all__ = ["speculative_accept", "speculative_generate", "early_exit_draft"]


def speculative_accept(
    draft_tokens: torch.Tensor,
    q: torch.Tensor,
    p: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, int]:
    """The acceptance rule of Leviathan et al. 2023 (algorithm 1) for one round.

    Args:
        draft_tokens: ``(k,)`` long, the tokens the draft sampled.
        q: ``(k, vocab)``, the draft's distribution at each of them.
        p: ``(k + 1, vocab)``, the target's distribution at the same positions and one more.
        generator: the source of the uniform draws and of the resampled token.

    Returns:
        ``(tokens, n)``: the ``n`` accepted draft tokens followed by one token of the target,
        ``(n + 1,)``. Draws ``k`` uniforms, then one multinomial sample, in that order (as
        ``transformers``' ``_speculative_sampling``: same draws, same tokens).
    """
    k = _check_accept_inputs(draft_tokens, q, p)
    r = torch.rand(k, generator=generator, dtype=p.dtype)  # r_i ~ U(0, 1), one per draft
    rows = torch.arange(k)
    ratio = p[rows, draft_tokens] / q[rows, draft_tokens]  # (k,): p(x_i) / q(x_i)
    n = 0
    while n < k and r[n] <= ratio[n]:  # accept x_n with probability min(1, p / q)
        n += 1
    if n < k:  # x_n rejected: sample from what p has more of than q, renormalised
        residual = torch.clamp(p[n] - q[n], min=0)  # max(0, p - q)
        total = residual.sum()
        residual = residual / total if total > 0 else p[n]  # p == q: nothing left over
    else:  # every draft accepted: the target's next token comes for free
        residual = p[k]
    last = torch.multinomial(residual[None], num_samples=1, generator=generator)[0]  # (1,)
    return torch.cat([draft_tokens[:n], last]), n


def _check_accept_inputs(draft_tokens, q, p) -> int:
    for name, t in (("q", q), ("p", p)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.ndim != 2:
            got = f"{t.dtype} tensor of shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__  # fmt: skip
            raise TypeError(f"{name} must be a 2-D float tensor of probabilities, got {got}")
    if not isinstance(draft_tokens, torch.Tensor) or draft_tokens.dtype != torch.long:
        raise TypeError(f"draft_tokens must be a torch.long tensor (k,), got {type(draft_tokens).__name__}")  # fmt: skip
    k = draft_tokens.shape[0] if draft_tokens.ndim == 1 else -1
    if k < 1 or q.shape[0] != k or p.shape != (k + 1, q.shape[1]):
        raise ValueError(
            f"draft_tokens must be (k,) with k >= 1, q (k, vocab) and p (k + 1, vocab); got "
            f"{tuple(draft_tokens.shape)}, {tuple(q.shape)}, {tuple(p.shape)}"
        )
    for name, t in (("q", q), ("p", p)):
        if not torch.isfinite(t).all() or (t < 0).any():
            raise ValueError(f"{name} must hold probabilities (finite, >= 0), got nan, inf or < 0")
    if (draft_tokens < 0).any() or (draft_tokens >= q.shape[1]).any():
        raise ValueError(f"draft_tokens must be ids in [0, vocab={q.shape[1]})")
    return k


@torch.no_grad()
def speculative_generate(
    target: nn.Module,
    draft: nn.Module,
    ids: torch.Tensor,
    max_new_tokens: int,
    num_draft_tokens: int = 4,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    return_stats: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, dict]:
    """Extend the prompt ``ids (1, n)`` by ``max_new_tokens`` tokens of ``target``, drafting
    ``num_draft_tokens`` at a time with ``draft`` (same vocabulary).

    With ``temperature == 0`` the result equals ``generate(target, ids, max_new_tokens,
    temperature=0)`` token for token; otherwise it is distributed as ``target``'s samples at that
    temperature. Both models: ``forward(ids, cache=None) -> (1, n, vocab)`` and a
    ``context_length`` that holds the whole result.

    Returns:
        ``(1, n + max_new_tokens)`` long ids; with ``return_stats`` also a dict: ``rounds``
        (target forward passes), ``drafted`` and ``accepted`` draft tokens, ``acceptance_rate``.

    Raises:
        ValueError: ``num_draft_tokens < 1``, a draft with another vocabulary, a batch of more
            than one prompt, or a result longer than a model's context.
    """
    end = _check_inputs(target, draft, ids, max_new_tokens, num_draft_tokens, temperature)
    return_stats = check_flag(return_stats, "return_stats")
    stats = {"rounds": 0, "drafted": 0, "accepted": 0}
    with eval_mode(target), eval_mode(draft):
        target_cache, draft_cache = KVCache(), KVCache()
        while ids.shape[1] < end:
            k = min(num_draft_tokens, end - ids.shape[1] - 1)  # the last round may draft fewer
            # 1. the draft guesses k tokens, one forward pass each
            guess, q = ids, []
            for _ in range(k):
                logits = draft(guess[:, len(draft_cache) :], draft_cache)[:, -1]  # (1, vocab)
                _check_vocab(logits, target)
                token = _pick(logits, temperature, None, None, generator)  # (1,)
                if temperature > 0:
                    q.append(_probs(logits[0], temperature))  # (vocab,): what it sampled from
                guess = torch.cat([guess, token[:, None]], dim=1)  # (1, n + i + 1)
            drafts = guess[0, ids.shape[1] :]  # (k,)
            # 2. the target reads every guess at once: k + 1 next-token distributions
            logits = target(guess[:, len(target_cache) :], target_cache)[0, -(k + 1) :]
            # 3. keep the agreed prefix and one token of the target's
            if temperature == 0:
                choice = logits.argmax(dim=-1)  # (k + 1,): the target's greedy tokens
                agree = (choice[:k] == drafts).long().cumprod(dim=0)  # 1 until the first miss
                n = int(agree.sum())
                new = torch.cat([drafts[:n], choice[n : n + 1]])
            elif k == 0:
                n, new = 0, _pick(logits[-1:], temperature, None, None, generator)
            else:
                p = _probs(logits, temperature)  # (k + 1, vocab)
                new, n = speculative_accept(drafts, torch.stack(q), p, generator)
            ids = torch.cat([ids, new[None]], dim=1)  # (1, n_before + n + 1)
            target_cache.crop(ids.shape[1] - 1)  # the caches hold every token but the last
            draft_cache.crop(min(len(draft_cache), ids.shape[1] - 1))
            stats["rounds"] += 1
            stats["drafted"] += k
            stats["accepted"] += n
    if not return_stats:
        return ids
    stats["acceptance_rate"] = stats["accepted"] / stats["drafted"] if stats["drafted"] else 0.0
    return ids, stats


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T), or the one-hot of the argmax for T = 0 (what greedy samples from)."""
    if temperature == 0:
        return nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits.float() / temperature, dim=-1)


def _vocab(model) -> int | None:
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    return size if isinstance(size, int) else None


def _check_vocab(draft_logits: torch.Tensor, target: nn.Module) -> None:
    size = _vocab(target)
    if size is not None and draft_logits.shape[-1] != size:
        raise ValueError(
            f"draft: it scores {draft_logits.shape[-1]} tokens but the target's vocabulary has "
            f"{size}; speculative decoding needs a draft with the target's vocabulary"
        )


def _check_inputs(target, draft, ids, max_new_tokens, num_draft_tokens, temperature) -> int:
    """The door: every argument once. Returns the final length ``n + max_new_tokens``."""
    for name, model in (("target", target), ("draft", draft)):
        check_module(model, name)
        if not isinstance(getattr(model, "context_length", None), int):
            raise TypeError(
                f"{name} must be a language model with a context_length (GPT, ModernLM), got "
                f"{type(model).__name__}"
            )
    _check_generate_args(target, ids, temperature, None, None, None)
    draft_context = draft.context_length
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens", allow_zero=True)
    check_positive_int(num_draft_tokens, "num_draft_tokens")  # k = 0 drafts nothing
    if _vocab(target) is not None and _vocab(draft) is not None and _vocab(target) != _vocab(draft):
        raise ValueError(
            f"draft: its vocabulary has {_vocab(draft)} tokens, the target's {_vocab(target)}; "
            "speculative decoding needs a draft with the target's vocabulary (tokenizer)"
        )
    if ids.shape[0] != 1:
        raise ValueError(f"ids must be one prompt (1, n), got shape {tuple(ids.shape)}")
    end = ids.shape[1] + max_new_tokens
    context = min(target.context_length, draft_context)
    if end > context:
        raise ValueError(
            f"max_new_tokens: the prompt ({ids.shape[1]}) + max_new_tokens ({max_new_tokens}) "
            f"= {end} tokens do not fit the context_length {context} of the models"
        )
    return end


def early_exit_draft(model: nn.Module, num_layers: int) -> nn.Module:
    """A draft made of the target's first ``num_layers`` blocks, its final norm and its head
    (a "layer-skip" draft: same vocabulary, no training). A copy: ``type(model)`` built from
    its config with ``num_layers`` and the target's weights loaded."""
    check_module(model)
    config = getattr(model, "config", None)
    if not dataclasses.is_dataclass(config) or not hasattr(config, "num_layers"):
        raise TypeError(f"model must be a GPT or ModernLM (a config with num_layers), got {type(model).__name__}")  # fmt: skip
    num_layers = check_positive_int(num_layers, "num_layers")
    if num_layers > config.num_layers:
        raise ValueError(f"num_layers must be <= the model's {config.num_layers}, got {num_layers}")
    draft = type(model)(dataclasses.replace(config, num_layers=num_layers))
    draft.load_state_dict(model.state_dict(), strict=False)  # blocks >= num_layers are left out
    return draft.to(next(model.parameters()).dtype).eval()
