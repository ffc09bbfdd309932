"""Lecture 14: from lecture 11's language model to an assistant, with the pieces it trains on.

* :func:`add_chat_tokens` gives a :class:`~course_lib.GPT` rows for the chat tokens
  (``<|user|>``, ``<|assistant|>``, ``<|end|>``; :mod:`course_lib.data.chat`);
* :func:`chat_batch` pads rendered conversations into ``(ids, loss_mask)`` tensors;
* :func:`response_loss`: the cross-entropy on the tokens the mask marks (the assistant's
  answer and its ``<|end|>``) and on nothing else;
* :func:`token_logprobs`: ``log p`` of every next token (lecture 17's per-token terms);
* :func:`sequence_logprobs`: ``log p(answer | prompt)``, the sum over the marked tokens (what
  DPO compares, :func:`course_lib.dpo_loss`);
* :func:`generate_replies`: greedy answers to user messages, until ``<|end|>``;
* :func:`load_assistant`: the shipped tuned models (``python -m tools.training.train_assistant``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_checkpoint,
    check_choice,
    check_context,
    check_module,
    check_positive_int,
    check_type,
    checkpoint_path,
    read_checkpoint,
)
from ..configs import GPTConfig, current_names
from ..data.chat import CHAT_TEMPLATES, END_OF_TURN, IM_END, render_chat
from ..tokenization import BPETokenizer
from .generation import generate
from .gpt import GPT, load_tiny_gpt
from .lora import apply_lora, merge_lora

__all__ = [
    "add_chat_tokens",
    "chat_batch",
    "response_loss",
    "token_logprobs",
    "sequence_logprobs",
    "generate_replies",
    "load_assistant",
    "ASSISTANT_CHECKPOINTS",
]

DATA = Path(__file__).resolve().parents[1] / "data"
ASSISTANT_CHECKPOINTS = {
    "tuned": DATA / "assistant_tuned.pt",  # full fine-tuning from lecture 11's GPT
    "lora": DATA / "assistant_lora.pt",  # LoRA adapters on lecture 11's GPT
    "dpo": DATA / "assistant_dpo.pt",  # LoRA adapters trained with DPO on the tuned model
    "grpo": DATA / "assistant_grpo.pt",  # LoRA adapters trained with GRPO (tools.training.train_rl)
}


def add_chat_tokens(model: GPT, vocab_size: int) -> GPT:
    """Grow ``model``'s token embedding (and its tied LM head) to ``vocab_size`` rows, in place.

    The old rows are kept; each new row starts as the mean of the old ones (a token the model
    has no opinion about yet, as ``transformers``' ``resize_token_embeddings`` does).
    Returns ``model``.
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a course_lib GPT, got {type(model).__name__}")
    old = model.token_embedding.weight
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if vocab_size <= old.shape[0]:
        raise ValueError(
            f"vocab_size must be larger than the model's {old.shape[0]} tokens, got {vocab_size}"
        )
    if not model.config.tie_weights:
        raise ValueError("model must tie its LM head to the token embedding (tie_weights=True)")
    grown = nn.Embedding(vocab_size, old.shape[1]).to(old)
    with torch.no_grad():
        grown.weight[: old.shape[0]] = old
        grown.weight[old.shape[0] :] = old.mean(dim=0)
    model.token_embedding = grown
    model.lm_head = nn.Linear(old.shape[1], vocab_size, bias=False).to(old)
    model.lm_head.weight = grown.weight  # tied again
    model.config = replace(model.config, vocab_size=vocab_size)  # configs are frozen
    return model


def chat_batch(
    rendered: Sequence[tuple[list[int], list[bool]]], pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad rendered conversations (:func:`course_lib.render_chat`) into ``ids (B, n)``
    long and ``loss_mask (B, n)`` bool; padding has mask False (the causal model never lets an
    earlier position see it)."""
    if isinstance(rendered, tuple) and len(rendered) == 2 and isinstance(rendered[1], list):
        if rendered[1] and isinstance(rendered[1][0], bool):
            raise TypeError("rendered must be a list of (ids, loss_mask) pairs; for one use [pair]")
    if not isinstance(rendered, Sequence) or not rendered:
        raise ValueError("rendered must be a non-empty list of (ids, loss_mask) pairs")
    pad_id = check_positive_int(pad_id, "pad_id", allow_zero=True)
    for i, pair in enumerate(rendered):
        if not (isinstance(pair, tuple) and len(pair) == 2 and len(pair[0]) == len(pair[1])):
            raise ValueError(f"rendered[{i}] must be (ids, loss_mask) of equal lengths")
    n = max(len(ids) for ids, _ in rendered)
    ids = torch.full((len(rendered), n), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rendered), n), dtype=torch.bool)
    for i, (row, row_mask) in enumerate(rendered):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = torch.tensor(row_mask, dtype=torch.bool)
    return ids, mask


def _check_ids_and_mask(ids, loss_mask) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 2:
        raise TypeError("ids must be a torch.long tensor (batch, n) (chat_batch gives one)")
    if not isinstance(loss_mask, torch.Tensor) or loss_mask.dtype != torch.bool:
        raise TypeError("loss_mask must be a torch.bool tensor (batch, n), True = train on it")
    if loss_mask.shape != ids.shape:
        raise ValueError(
            f"loss_mask must have the shape of ids {tuple(ids.shape)}, got {tuple(loss_mask.shape)}"
        )
    if ids.shape[1] < 2:
        raise ValueError(f"ids must hold at least 2 positions, got {tuple(ids.shape)}")


def _check_loss_inputs(model, ids, loss_mask) -> None:
    """response_loss's door: a language model, ids and mask of one shape, a marked target."""
    check_module(model)
    check_context(model)  # a language model, not an encoder's hidden states
    _check_ids_and_mask(ids, loss_mask)
    if not loss_mask[:, 1:].any():
        raise ValueError("loss_mask marks no target token (is there an assistant message?)")


def response_loss(model: nn.Module, ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats/token) over the tokens where ``loss_mask`` is True only.

    As :func:`course_lib.lm_loss`, the model reads ``ids[:, :-1]`` and position ``t`` predicts
    ``ids[:, t + 1]``; a target counts if ``loss_mask[:, t + 1]`` is True (the prompt's tokens
    are read but never predicted).
    """
    _check_loss_inputs(model, ids, loss_mask)
    targets, keep = ids[:, 1:], loss_mask[:, 1:]  # (B, n - 1): the token each position predicts
    logits = model(ids[:, :-1])  # (B, n - 1, vocab)
    return F.cross_entropy(logits[keep], targets[keep])  # (tokens, vocab) vs (tokens,)


def token_logprobs(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """``(batch, n - 1)``: ``log p(ids[:, t + 1] | ids[:, :t + 1])``, the log-probability the
    model gave each next token (position ``t`` predicts token ``t + 1``; lecture 17's
    per-token log-probabilities, with ``loss_mask[:, 1:]`` picking the answer's)."""
    check_module(model)
    check_context(model)  # a language model, not an encoder's hidden states
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 2:
        raise TypeError("ids must be a torch.long tensor (batch, n) (chat_batch gives one)")
    if ids.shape[1] < 2:
        raise ValueError(f"ids must hold at least 2 positions, got {tuple(ids.shape)}")
    logits = model(ids[:, :-1])  # (B, n - 1, vocab)
    logps = torch.log_softmax(logits.float(), dim=-1)
    return logps.gather(-1, ids[:, 1:, None])[..., 0]  # (B, n - 1): log p of the next token


def sequence_logprobs(model: nn.Module, ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """``(batch,)``: the sum of ``log p(token)`` over each row's marked tokens, the
    log-probability of the answer given the prompt."""
    check_module(model)
    check_context(model)
    _check_ids_and_mask(ids, loss_mask)
    return (token_logprobs(model, ids) * loss_mask[:, 1:]).sum(dim=1)


def _check_reply_inputs(model, tokenizer, prompts, max_new_tokens, template) -> None:
    """generate_replies' door: a model, a tokenizer, a list of prompts, a token budget, a known
    template."""
    check_module(model)
    check_type(tokenizer, "tokenizer", BPETokenizer)
    if isinstance(prompts, str) or not isinstance(prompts, Sequence):
        raise TypeError(f"prompts must be a list of str, got {type(prompts).__name__}")
    check_positive_int(max_new_tokens, "max_new_tokens")
    check_choice(template, "template", CHAT_TEMPLATES)


@torch.no_grad()
def generate_replies(
    model: nn.Module,
    tokenizer: BPETokenizer,
    prompts: Sequence[str],
    max_new_tokens: int = 24,
    template: str = "course",
) -> list[str]:
    """The model's greedy reply to each user message (one-turn conversations), decoded.

    Prompts of equal token length are run as one batch; a reply ends at the template's
    end-of-turn token (``<|end|>``; ChatML's ``<|im_end|>`` with ``template="chatml"``, for
    SmolLM2) or after ``max_new_tokens`` tokens.
    """
    _check_reply_inputs(model, tokenizer, prompts, max_new_tokens, template)
    end = tokenizer.vocab[IM_END if template == "chatml" else END_OF_TURN]
    rendered = [
        render_chat([{"role": "user", "content": p}], tokenizer, True, template)[0] for p in prompts
    ]
    by_length: dict[int, list[int]] = {}
    for i, ids in enumerate(rendered):
        by_length.setdefault(len(ids), []).append(i)
    replies: list[str] = [""] * len(prompts)
    for n, rows in by_length.items():
        batch = torch.tensor([rendered[i] for i in rows], dtype=torch.long)  # (B, n)
        out = generate(model, batch, max_new_tokens, temperature=0.0, eos_id=end)[:, n:]
        for i, new in zip(rows, out.tolist(), strict=True):
            new = new[: new.index(end)] if end in new else new
            replies[i] = tokenizer.decode(new).strip()
    return replies


def load_assistant(name: str = "tuned", path: str | Path | None = None) -> tuple[GPT, dict]:
    """A shipped assistant (float16 weights, loaded with ``weights_only=True``) and its
    metadata (training settings, CPU time, scores, stored replies).

    ``"tuned"``: lecture 11's GPT fully fine-tuned on instructions; ``"lora"``: that GPT with
    LoRA adapters instead; ``"dpo"``: the tuned model plus LoRA adapters trained with DPO;
    ``"grpo"``: the tuned model plus LoRA adapters trained with GRPO (lecture 17).
    Adapters are merged on load: every model comes back as a plain :class:`GPT` in eval mode.
    ``path``: another file of that kind (the model it adapts is looked for in its folder).
    """
    check_choice(name, "name", ASSISTANT_CHECKPOINTS)
    path = checkpoint_path(path, ASSISTANT_CHECKPOINTS[name])
    ckpt = current_names(read_checkpoint(path, "chat assistant"))
    check_checkpoint(
        ckpt,
        ("config", "state_dict", "replies"),
        path,
        "chat assistant",
        GPTConfig.__dataclass_fields__,
    )
    base = ckpt.get("base")
    made_on = {"tuned": None, "lora": "pretrained", "dpo": "tuned", "grpo": "tuned"}  # adapts what
    if name in made_on and base != made_on[name]:
        raise ValueError(
            f"{path} holds {'a whole model' if base is None else f'adapters on {base!r}'}, "
            f"not a {name!r} assistant; pass the name that matches the file"
        )
    if base is None:  # a whole model
        model = GPT(GPTConfig(**ckpt["config"]))
    elif base == "pretrained":  # adapters on lecture 11's GPT
        model = add_chat_tokens(load_tiny_gpt()[0], ckpt["config"]["vocab_size"])
    else:  # adapters on another shipped assistant
        model = load_assistant(base, Path(path).parent / ASSISTANT_CHECKPOINTS[base].name)[0]
    if base is not None:
        apply_lora(model, ckpt["lora"]["r"], ckpt["lora"]["alpha"], ckpt["lora"]["target_names"])
    state = {k: v.float() for k, v in ckpt["state_dict"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if base is None:
        fits = missing in ([], ["lm_head.weight"])  # the head is tied to the embedding
    else:  # the adapters (and the embedding, if its chat-token rows were trained)
        expected = {k for k in model.state_dict() if "lora_" not in k} - set(state)
        fits = set(missing) - {"lm_head.weight"} == expected - {"lm_head.weight"}
    if unexpected or not fits:
        raise ValueError(f"{path} does not fit: missing {missing}, unexpected {unexpected}")
    if base is not None:
        merge_lora(model)
    model.eval()
    return model, {k: v for k, v in ckpt.items() if k != "state_dict"}
