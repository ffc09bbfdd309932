"""Data for the causal language model of lecture 11: the Python-docs corpus as one token stream.

The text is the course's real-English corpus (``pretraining_corpus.txt``: prose sentences of the
Python documentation, PSF licence, frozen from CPython by ``tools/training/make_pretraining_corpus.py``).
Each document becomes one paragraph (its sentences joined by spaces); every 10th document is
held out (:func:`course_lib.data.pretraining.split_documents`), so no held-out sentence is ever
seen in training, and the tokenizer is learned from the training documents only.

Tokens: GPT-2's byte-level BPE learned by the course's own trainer
(``train_bpe(..., byte_level=True)``) with one special token, ``<|endoftext|>`` (id 0), which
GPT-2 puts between documents; it is also the end-of-sequence token of generation.

Losses are reported two ways: nats per token (the cross-entropy the model minimises), and bits
per character, which does not depend on the tokenizer: ``bits/char = nats/token * tokens /
(chars * ln 2)``, counting each ``<|endoftext|>`` as one character (a newline).
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .._validation import (
    check_context,
    check_module,
    check_positive_int,
    check_str,
    check_token_ids,
    check_token_sequence,
)
from ..nn import eval_mode
from ..tokenization import BPETokenizer, train_bpe
from .pretraining import load_pretraining_corpus, split_documents

__all__ = [
    "END_OF_TEXT",
    "lm_documents",
    "lm_tokenizer",
    "encode_documents",
    "LMCorpus",
    "lm_corpus",
    "random_windows",
    "bits_per_char",
    "evaluate_lm",
    "known_word_fraction",
]

END_OF_TEXT = "<|endoftext|>"


def lm_documents() -> tuple[list[str], list[str]]:
    """``(training, held_out)`` documents, each one string; every 10th document is held out."""
    docs = [" ".join(sentences) for sentences in load_pretraining_corpus()]
    return split_documents(docs, every=10)


@functools.lru_cache(maxsize=4)
def lm_tokenizer(vocab_size: int = 1024) -> BPETokenizer:
    """Byte-level BPE with ``vocab_size`` tokens learned from the **training** documents.

    Id 0 is ``<|endoftext|>``, ids 1-256 the bytes, the rest merges. Deterministic.
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if vocab_size < 257:
        raise ValueError(
            f"vocab_size must be >= 257 (1 special token + 256 bytes), got {vocab_size}"
        )
    train, _ = lm_documents()
    return train_bpe(train, vocab_size, special_tokens=[END_OF_TEXT], byte_level=True)


def encode_documents(tokenizer: BPETokenizer, documents: Sequence[str]) -> torch.Tensor:
    """One long stream ``(n_tokens,)``: each document's ids followed by ``<|endoftext|>``."""
    if END_OF_TEXT not in getattr(tokenizer, "vocab", {}):
        raise ValueError(
            f"tokenizer must know {END_OF_TEXT} (a BPETokenizer from lm_tokenizer()), got "
            f"{type(tokenizer).__name__}"
        )
    documents = check_token_sequence(documents, "documents")
    eot = tokenizer.vocab[END_OF_TEXT]
    ids: list[int] = []
    for doc in documents:
        ids += tokenizer.encode(doc)
        ids.append(eot)
    return torch.tensor(ids, dtype=torch.long)


@dataclass
class LMCorpus:
    """The tokenised corpus: the tokenizer, the two token streams and their sizes in characters."""

    tokenizer: BPETokenizer
    train_ids: torch.Tensor  # (n_train,) long, documents separated by <|endoftext|>
    held_out_ids: torch.Tensor  # (n_held_out,) long
    train_chars: int  # characters of the training text (+1 per document for <|endoftext|>)
    held_out_chars: int  # the same for the held-out text
    eot_id: int  # id of <|endoftext|>

    @property
    def vocab_size(self) -> int:
        return len(self.tokenizer)


@functools.lru_cache(maxsize=4)
def lm_corpus(vocab_size: int = 1024) -> LMCorpus:
    """Tokenise both splits with :func:`lm_tokenizer` (cached: the same object each call)."""
    tok = lm_tokenizer(vocab_size)
    train, held = lm_documents()
    return LMCorpus(
        tokenizer=tok,
        train_ids=encode_documents(tok, train),
        held_out_ids=encode_documents(tok, held),
        train_chars=sum(len(d) + 1 for d in train),
        held_out_chars=sum(len(d) + 1 for d in held),
        eot_id=tok.vocab[END_OF_TEXT],
    )


def random_windows(
    ids: torch.Tensor, batch_size: int, length: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``batch_size`` random windows of ``length + 1`` consecutive tokens ``(batch, length + 1)``.

    The model reads ``window[:, :-1]`` and predicts ``window[:, 1:]`` (:func:`course_lib.lm_loss`).
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    length = check_positive_int(length, "length")
    if check_token_ids(ids, "ids", "(n,)").shape[0] < length + 1:
        raise ValueError(f"ids must be 1-D with at least length + 1 = {length + 1} tokens")
    starts = torch.randint(0, len(ids) - length, (batch_size,), generator=generator)
    return torch.stack([ids[s : s + length + 1] for s in starts.tolist()])


def bits_per_char(nats_per_token: float, n_tokens: int, n_chars: int) -> float:
    """Convert a loss in nats per token to bits per character of the same text."""
    if isinstance(nats_per_token, bool) or not isinstance(nats_per_token, numbers.Real):
        raise TypeError(f"nats_per_token must be a number, got {type(nats_per_token).__name__}")
    if not (math.isfinite(nats_per_token) and nats_per_token >= 0):
        raise ValueError(f"nats_per_token must be a finite loss >= 0, got {nats_per_token}")
    check_positive_int(n_tokens, "n_tokens")
    check_positive_int(n_chars, "n_chars")
    return nats_per_token * n_tokens / (n_chars * math.log(2))


@torch.no_grad()
def evaluate_lm(model: nn.Module, ids: torch.Tensor, block: int | None = None) -> float:
    """Mean cross-entropy (nats/token) of ``model`` predicting every token of ``ids`` but the first.

    The stream is cut into consecutive blocks of ``block`` predictions (default the model's
    ``context_length``); the first prediction of a block sees one token of context, the last ``block``.
    Every token from the second on is predicted exactly once, as the count models do.
    """
    check_module(model)
    block = check_positive_int(check_context(model) if block is None else block, "block")
    if check_token_ids(ids, "ids", "(n,)").shape[0] < 2:
        raise ValueError(f"ids must hold at least 2 tokens (one to predict), got {len(ids)}")
    total, count = 0.0, 0
    with eval_mode(model):
        for start in range(0, len(ids) - 1, block):
            window = ids[start : start + block + 1][None]  # (1, <= block + 1)
            logits = model(window[:, :-1])  # (1, n, vocab)
            total += nn.functional.cross_entropy(logits[0], window[0, 1:], reduction="sum").item()
            count += window.shape[1] - 1
    return total / count


_WORD = re.compile(r"[A-Za-z]+")


def known_word_fraction(texts: Sequence[str] | str, reference: Sequence[str] | str) -> float:
    """Share of the words of ``texts`` (runs of ASCII letters, case ignored) that occur somewhere
    in ``reference`` (e.g. the training documents): a rough "does it write real words" score."""
    texts = [texts] if isinstance(texts, str) else check_token_sequence(texts, "texts")
    reference = (
        [reference] if isinstance(reference, str) else check_token_sequence(reference, "reference")
    )
    for name, values in (("texts", texts), ("reference", reference)):
        for i, text in enumerate(values):
            check_str(text, f"{name}[{i}]")
    known = {w.lower() for t in reference for w in _WORD.findall(t)}
    words = [w.lower() for t in texts for w in _WORD.findall(t)]
    if not words:
        raise ValueError("texts contain no words (runs of letters)")
    return sum(w in known for w in words) / len(words)
