"""Greedy decoding: predict a word, append it, repeat until ``<eos>`` or a maximum length.

Works with every model that has ``encode(src, src_mask)`` and ``decode(memory, src_mask,
tgt_in) -> logits`` (see :mod:`course_lib.models.seq2seq`). The whole prefix is decoded again
at every step, exactly as the notes describe; with the causal mask the logits of the earlier
positions do not change when a word is appended, so only the last position is new.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .._validation import check_positive_int

__all__ = ["greedy_decode", "translate"]


@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int = 1,
    eos_id: int = 2,
    pad_id: int = 0,
    max_len: int = 40,
) -> torch.Tensor:
    """Translate a batch greedily (the most probable word at each step).

    Args:
        model: a translation model (``encode``/``decode`` interface).
        src: ``(batch, S)`` source ids; src_mask: ``(batch, S)`` bool, True = real token.
        bos_id, eos_id, pad_id: special ids of the target vocabulary.
        max_len: at most this many words are generated per sentence (``<eos>`` included).

    Returns:
        ``(batch, L)`` ids without ``<bos>``, ``L <= max_len``: each row ends at its first
        ``<eos>`` and is padded with ``pad_id`` after it (rows that hit ``max_len`` have no
        ``<eos>``). Decoding stops as soon as every row has produced ``<eos>``.
    """
    max_len = check_positive_int(max_len, "max_len")
    was_training = model.training
    model.eval()
    try:
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len):
            logits = model.decode(memory, src_mask, ys)[:, -1]  # only the newest position
            next_word = logits.argmax(-1)
            next_word = next_word.masked_fill(done, pad_id)  # finished rows: padding
            ys = torch.cat([ys, next_word[:, None]], dim=1)
            done |= next_word == eos_id
            if done.all():
                break
    finally:
        model.train(was_training)
    return ys[:, 1:]


def translate(
    model: nn.Module,
    sentences: Sequence[str],
    src_vocab,
    tgt_vocab,
    *,
    max_len: int = 40,
    batch_size: int = 200,
) -> list[str]:
    """Greedy translations of ``sentences`` (strings) as space-separated target tokens.

    Sentences are decoded in batches of similar length; the output keeps the input order.
    Unknown words become ``<unk>`` on the source side.
    """
    from ..data.translation import make_batch  # local: data imports nothing from models

    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings; wrap a single sentence in [...]")
    batch_size = check_positive_int(batch_size, "batch_size")
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()))
    out: list[str] = [""] * len(sentences)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = make_batch([(sentences[i], "") for i in idx], src_vocab, tgt_vocab)
        ids = greedy_decode(model, batch.src, batch.src_mask, bos_id=tgt_vocab.bos_id,
                            eos_id=tgt_vocab.eos_id, pad_id=tgt_vocab.pad_id, max_len=max_len)  # fmt: skip
        for i, row in zip(idx, ids.tolist(), strict=True):
            out[i] = tgt_vocab.decode(row)
    return out
