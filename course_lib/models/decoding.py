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

from .._validation import check_module, check_positive_int, check_str, check_token_ids
from ..nn import eval_mode

__all__ = ["greedy_decode", "beam_search", "translate"]


@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    bos_id: int = 1,
    eos_id: int = 2,
    pad_id: int = 0,
    max_new_tokens: int = 40,
) -> torch.Tensor:
    """Translate a batch greedily (the most probable word at each step).

    Args:
        model: a translation model (``encode``/``decode`` interface).
        src: ``(batch, S)`` source ids; src_mask: ``(batch, S)`` bool, True = real token.
        bos_id, eos_id, pad_id: special ids of the target vocabulary.
        max_new_tokens: at most this many words are generated per sentence (``<eos>`` included).

    Returns:
        ``(batch, L)`` ids without ``<bos>``, ``L <= max_new_tokens``: each row ends at its first
        ``<eos>`` and is padded with ``pad_id`` after it (rows that hit ``max_new_tokens`` have no
        ``<eos>``). Decoding stops as soon as every row has produced ``<eos>``.
    """
    check_module(model)
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    with eval_mode(model):
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens):
            logits = model.decode(memory, src_mask, ys)[:, -1]  # only the newest position
            next_word = logits.argmax(-1)
            next_word = next_word.masked_fill(done, pad_id)  # finished rows: padding
            ys = torch.cat([ys, next_word[:, None]], dim=1)
            done |= next_word == eos_id
            if done.all():
                break
    return ys[:, 1:]


def _repeat_rows(memory, n: int):
    """Repeat a batch-of-one memory (a tensor or a tuple of tensors) ``n`` times along dim 0."""
    if isinstance(memory, tuple):
        return tuple(_repeat_rows(m, n) for m in memory)
    return memory.expand(n, *memory.shape[1:])


@torch.no_grad()
def beam_search(
    model: nn.Module,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    *,
    beam_size: int = 4,
    bos_id: int = 1,
    eos_id: int = 2,
    max_new_tokens: int = 40,
    length_penalty: float = 0.0,
) -> list[int]:
    """The most probable translation found by beam search, for ONE sentence.

    Keeps the ``beam_size`` most probable prefixes (by summed log-probability) at every step
    instead of only the best one; a prefix that ends in ``<eos>`` is set aside as finished.
    Stops when the best finished sentence is more probable than every prefix still open (a
    longer prefix can only lose probability) or after ``max_new_tokens`` words. With
    ``beam_size=1`` this is greedy decoding.

    Every word multiplies a sentence's probability by a number below 1, so the most probable
    sentence tends to be a short one. ``length_penalty = alpha > 0`` ranks finished sentences
    by ``log P / length ** alpha`` instead (``alpha = 1``: the mean log-probability per word)
    and keeps searching while an open prefix may still beat the ``beam_size`` best finished
    sentences.

    Args:
        src: ``(1, S)`` source ids; src_mask: ``(1, S)`` bool.

    Returns:
        The ids of the best sentence without ``<bos>``, ending with ``<eos>`` unless it hit
        ``max_new_tokens``.
    """
    check_module(model)
    beam_size = check_positive_int(beam_size, "beam_size")
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    if isinstance(length_penalty, bool) or not (
        isinstance(length_penalty, (int, float)) and length_penalty >= 0
    ):
        raise ValueError(
            f"length_penalty must be >= 0 (0 = plain log-probability), got {length_penalty!r}"
        )
    check_token_ids(src, "src", "(1, S)")
    if src.shape[0] != 1:
        raise ValueError(
            f"beam_search translates one sentence: src must be (1, S), got {tuple(src.shape)}"
        )
    with eval_mode(model):
        memory = model.encode(src, src_mask)
        beams: list[tuple[list[int], float]] = [([bos_id], 0.0)]
        finished: list[tuple[list[int], float]] = []
        for _ in range(max_new_tokens):
            ys = torch.tensor([seq for seq, _ in beams], dtype=torch.long)
            n = len(beams)
            logits = model.decode(_repeat_rows(memory, n), src_mask.expand(n, -1), ys)[:, -1]
            logp = torch.log_softmax(logits.double(), dim=-1)
            top = logp.topk(min(beam_size, logp.shape[-1]), dim=-1)
            candidates = [
                (seq + [word], score + lp)
                for (seq, score), lps, words in zip(
                    beams, top.values.tolist(), top.indices.tolist(), strict=True
                )
                for lp, word in zip(lps, words, strict=True)
            ]
            candidates.sort(key=lambda c: -c[1])
            beams = []
            for seq, score in candidates:
                if seq[-1] == eos_id:
                    finished.append((seq, score))
                elif len(beams) < beam_size:
                    beams.append((seq, score))
            if not beams:
                break
            # stop once no open prefix can catch up with the finished sentences: a longer
            # prefix only loses log-probability (exact for alpha = 0; the usual heuristic
            # bound, the open prefix's score at its current length, for alpha > 0)
            ranked = sorted((_rank(c, length_penalty) for c in finished), reverse=True)
            if len(ranked) >= beam_size and ranked[beam_size - 1] >= _rank(
                beams[0], length_penalty
            ):
                break
            if not length_penalty and ranked and ranked[0] >= beams[0][1]:
                break
    best = max(finished or beams, key=lambda c: _rank(c, length_penalty))
    return best[0][1:]


def _rank(candidate: tuple[list[int], float], alpha: float) -> float:
    """Log-probability divided by length ** alpha (the length counts words and <eos>)."""
    seq, score = candidate
    return score / (len(seq) - 1) ** alpha


def translate(
    model: nn.Module,
    sentences: Sequence[str],
    src_vocab,
    tgt_vocab,
    *,
    max_new_tokens: int = 40,
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
    for i, sentence in enumerate(sentences):
        check_str(sentence, f"sentences[{i}]")
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()))
    out: list[str] = [""] * len(sentences)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = make_batch([(sentences[i], "") for i in idx], src_vocab, tgt_vocab)
        ids = greedy_decode(model, batch.src, batch.src_mask, bos_id=tgt_vocab.bos_id,
                            eos_id=tgt_vocab.eos_id, pad_id=tgt_vocab.pad_id, max_new_tokens=max_new_tokens)  # fmt: skip
        for i, row in zip(idx, ids.tolist(), strict=True):
            out[i] = tgt_vocab.decode(row)
    return out
