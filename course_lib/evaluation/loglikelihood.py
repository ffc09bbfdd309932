"""The log-likelihood of a continuation given a context: the one request behind every
multiple-choice benchmark, scored exactly as lm-evaluation-harness 0.4.13 (``HFLM``) scores it.

A request is a pair of strings ``(context, continuation)``; the answer is ``(sum of log p of the
continuation's tokens, whether greedy decoding would have written exactly those tokens)``::

    "Question: 2 + 2 =" , " 4"
      -> trailing spaces of the context move to the continuation   (encode_pair)
      -> encode context + continuation as ONE string, encode the context alone;
         the continuation's tokens are the whole's tokens after the context's
      -> keep the last window + 1 tokens (truncate from the LEFT), drop the very last
      -> one forward pass over a batch (right-padded), log-softmax,
         sum log p(token) where the response mask is True       (loglikelihood)

The mask is lecture 14's response mask again: the model reads everything, only the
continuation's tokens are scored. Works for the course's models (``GPT``, ``ModernLM``: their
``forward`` returns logits, the window is ``model.context_length``) and for ``transformers``
causal LMs (``model(ids).logits``; the window from the config, as lm-eval reads it).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .._validation import check_flag, check_module, check_positive_int, check_str

__all__ = ["encode_text", "encode_pair", "context_window", "loglikelihood"]

#: lm-eval's window when neither the config nor the tokenizer gives one
DEFAULT_WINDOW = 2048
#: ``transformers``' "no limit" value of ``tokenizer.model_max_length``
_TOKENIZER_INFINITY = 1000000000000000019884624838656


def _is_hf_tokenizer(tokenizer) -> bool:
    return type(tokenizer).__module__.startswith("transformers.")


def prefix_token_id(tokenizer: Any) -> int | None:
    """The token lm-eval puts before a continuation whose context is empty: BOS, else EOS
    (``transformers`` tokenizers); ``<|endoftext|>`` for the course's byte-level tokenizers
    (GPT-2's document separator, which GPT-2 uses as both); None when there is none."""
    for attr in ("bos_token_id", "eos_token_id"):
        value = getattr(tokenizer, attr, None)
        if value is not None:
            return int(value)
    special = getattr(tokenizer, "special_tokens", ())
    if "<|endoftext|>" in special:
        return int(tokenizer.vocab["<|endoftext|>"])
    return None


def encode_text(tokenizer: Any, text: str, add_special_tokens: bool | None = None) -> list[int]:
    """Token ids of ``text`` as lm-eval's ``HFLM.tok_encode`` makes them.

    ``transformers`` tokenizers: ``tokenizer.encode(text)`` with the tokenizer's own default
    for special tokens (a Llama tokenizer adds BOS, a GPT-2-style one adds nothing), except
    that a text already starting with the prefix token's string gets none added. The
    ``tokenizers`` library's ``Tokenizer``: ``.encode(text).ids``. The course's tokenizers
    (``BPETokenizer``) add no special tokens.
    """
    check_str(text, "text")
    if add_special_tokens is not None:
        add_special_tokens = check_flag(add_special_tokens, "add_special_tokens")
    if _is_hf_tokenizer(tokenizer):
        kwargs = {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}
        prefix = prefix_token_id(tokenizer)
        if add_special_tokens is None and prefix is not None:
            if text.startswith(tokenizer.decode(prefix)):
                kwargs = {"add_special_tokens": False}
        return list(tokenizer.encode(text, **kwargs))
    if type(tokenizer).__module__.startswith("tokenizers"):
        special = True if add_special_tokens is None else add_special_tokens
        return list(tokenizer.encode(text, add_special_tokens=special).ids)
    if isinstance(tokenizer, (str, bytes)) or not callable(getattr(tokenizer, "encode", None)):
        raise TypeError(
            "tokenizer must have an encode(text) -> list of ids method (a course BPETokenizer "
            f"or a transformers tokenizer), got {type(tokenizer).__name__}"
        )
    return [int(i) for i in tokenizer.encode(text)]


def encode_pair(tokenizer: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """``(context_ids, continuation_ids)`` as lm-eval splits a request.

    Trailing spaces of the context move to the front of the continuation (``"Answer: "`` +
    ``"4"`` is scored as ``"Answer:"`` + ``" 4"``, the way the text would be tokenized
    whole); then the WHOLE string is encoded and cut after the context's tokens, so a
    token that spans the boundary is not split the way separate encodings would split it.
    An empty context becomes the prefix token (BOS, else EOS) before the continuation.
    """
    check_str(context, "context")
    check_str(continuation, "continuation")
    if context == "":
        continuation_ids = encode_text(tokenizer, continuation, add_special_tokens=False)
        prefix = prefix_token_id(tokenizer)
        if prefix is None:
            raise ValueError(
                "context is empty and the tokenizer has no BOS or EOS token to stand for it "
                "(lm-eval scores an empty context as BOS + continuation); give a non-empty "
                "context"
            )
        if continuation_ids and continuation_ids[0] == prefix:
            return continuation_ids[:1], continuation_ids[1:]
        return [prefix], continuation_ids
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
    whole = encode_text(tokenizer, context + continuation)
    context_ids = encode_text(tokenizer, context)
    return context_ids, whole[len(context_ids) :]


def context_window(model: torch.nn.Module, tokenizer: Any = None) -> int:
    """How many tokens the model reads at once: ``model.context_length`` (the course's
    models); for ``transformers`` models, as lm-eval: the config's ``n_positions``,
    ``max_position_embeddings`` or ``n_ctx``, else the tokenizer's ``model_max_length``,
    else 2048."""
    check_module(model)
    context = getattr(model, "context_length", None)
    if isinstance(context, int) and not isinstance(context, bool):
        return check_positive_int(context, "model.context_length")
    config = getattr(model, "config", None)
    if config is None:
        raise TypeError(
            f"model must have a context_length (the course's models) or a config (transformers "
            f"models) to read its window from, got {type(model).__name__}; pass max_length"
        )
    config = getattr(config, "text_config", None) or config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, attr, None)
        if value is not None:
            return int(value)
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and limit != _TOKENIZER_INFINITY:
        return int(limit)
    return DEFAULT_WINDOW


def _check_requests(requests) -> list[tuple[str, str]]:
    if isinstance(requests, (str, tuple)) or not isinstance(requests, list):
        raise TypeError(
            "requests must be a list of (context, continuation) pairs of str, got "
            f"{type(requests).__name__} {requests!r:.60}"
        )
    if not requests:
        raise ValueError("requests is empty; give at least one (context, continuation) pair")
    for i, pair in enumerate(requests):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(
                f"requests[{i}] must be a (context, continuation) pair, got {pair!r:.60}"
            )
        check_str(pair[0], f"requests[{i}]'s context")
        check_str(pair[1], f"requests[{i}]'s continuation")
    return [(c, x) for c, x in requests]


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    return out.logits if hasattr(out, "logits") else out  # transformers: an output object


@torch.no_grad()
def loglikelihood(
    model: torch.nn.Module, tokenizer: Any, requests: list[tuple[str, str]], *,
    batch_size: int = 8,
    max_length: int | None = None,
) -> list[tuple[float, bool]]:  # fmt: skip
    """lm-eval's ``loglikelihood`` request: for each ``(context, continuation)``, the sum of
    ``log p`` of the continuation's tokens given everything before them, and whether greedy
    decoding (argmax at every position) would produce exactly those tokens.

    Tokens as :func:`encode_pair`; a sequence longer than the window (``max_length``, default
    :func:`context_window`) keeps its last ``window + 1`` tokens: the context is truncated from
    the left, as lm-eval does; a continuation longer than the window is an error. The model
    reads ``batch_size`` distinct inputs at a time, longest first, right-padded: padding sits
    after every scored position, so causal attention never sees it (the tests hold batched
    and one-at-a-time scores, and lm-eval's, to 1e-4; on a tiny Llama they were equal to the
    last bit). Log-probabilities in float32 (float64 for a float64 model: lm-eval keeps the
    model's dtype).
    """
    check_module(model)
    requests = _check_requests(requests)
    batch_size = check_positive_int(batch_size, "batch_size")
    if max_length is None:
        window = context_window(model, tokenizer)
    else:
        window = check_positive_int(max_length, "max_length")
    rows = []  # per request: its tokens (what the model reads + the last token it predicts)
    for i, (context, continuation) in enumerate(requests):
        context_ids, continuation_ids = encode_pair(tokenizer, context, continuation)
        if not continuation_ids:
            raise ValueError(f"requests[{i}]'s continuation {continuation!r} has no tokens")
        if not context_ids:
            raise ValueError(f"requests[{i}]'s context {context!r} has no tokens")
        if len(continuation_ids) > window:
            raise ValueError(
                f"requests[{i}]'s continuation has {len(continuation_ids)} tokens, more than "
                f"the model's window of {window}: it cannot be scored"
            )
        tokens = (context_ids + continuation_ids)[-(window + 1) :]  # left truncation
        rows.append((tokens, len(continuation_ids)))
    # Requests that feed the model the same tokens share one forward row (four one-token
    # answers " A", " B", " C", " D" after the same prompt: one row; lm-eval does the same).
    inputs: dict[tuple[int, ...], list[int]] = {}
    for i, (tokens, _) in enumerate(rows):
        inputs.setdefault(tuple(tokens[:-1]), []).append(i)
    distinct = sorted(inputs, key=len, reverse=True)  # longest first: little padding
    was_training = model.training
    model.eval()
    results: list[tuple[float, bool]] = [(0.0, False)] * len(rows)
    for start in range(0, len(distinct), batch_size):
        batch = distinct[start : start + batch_size]
        ids = torch.zeros((len(batch), len(batch[0])), dtype=torch.long)  # (B, n), right-padded
        for r, seq in enumerate(batch):
            ids[r, : len(seq)] = torch.tensor(seq)
        logits = _logits(model, ids)  # (B, n, vocab): position t predicts token t + 1
        dtype = torch.promote_types(logits.dtype, torch.float32)  # float64 stays float64
        logprobs = F.log_softmax(logits.to(dtype), dim=-1)
        for r, seq in enumerate(batch):
            for i in inputs[seq]:
                tokens, n = rows[i]
                # the response mask: only the n positions that predict the continuation count
                scored = logprobs[r, len(tokens) - 1 - n : len(tokens) - 1]  # (n, vocab)
                target = torch.tensor(tokens[-n:])  # (n,)
                picked = scored.gather(-1, target[:, None])[:, 0]  # (n,): log p(each token)
                greedy = bool((scored.argmax(dim=-1) == target).all())
                results[i] = (float(picked.sum()), greedy)
    model.train(was_training)
    return results
