"""Learning BPE merges from a corpus (Sennrich et al., 2016), by the rules of the ``tokenizers``
library's ``BpeTrainer``, so the two learn the same merges:

* pairs are counted inside words only, weighted by the word's frequency, overlapping pairs
  included ("a a a" holds the pair (a, a) twice);
* a tie between equally frequent pairs goes to the pair whose token ids are smaller, where the
  ids are: special tokens, then the characters sorted by code point, then merged tokens in the
  order they were made;
* training stops when the vocabulary (special tokens included) reaches ``vocab_size``, or when
  the best pair is rarer than ``min_frequency``.

Lecture 08 (character level) and lecture 11 (byte level, ``byte_level=True``).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from .._validation import check_flag, check_positive_int, check_special_tokens, check_str
from .bpe import BPETokenizer
from .byte_level import bytes_to_unicode, pretokenize_bytes
from .pretokenizer import pretokenize

__all__ = ["train_bpe", "train_bpe_with_history", "BPETraining"]


def train_bpe(texts: Iterable[str] | str, vocab_size: int, **options: Any) -> BPETokenizer:
    """Learn BPE merges from ``texts`` until the vocabulary has ``vocab_size`` tokens.

    The keyword ``options`` are :func:`train_bpe_with_history`'s (``special_tokens``,
    ``unk_token``, ``lowercase``, ``min_frequency``, ``byte_level``); this returns only its
    :class:`BPETokenizer`.
    """
    return train_bpe_with_history(texts, vocab_size, **options).tokenizer


class BPETraining(NamedTuple):
    """What :func:`train_bpe_with_history` returns."""

    tokenizer: BPETokenizer  # the learned tokenizer
    history: list  # per merge, (pair, count): which pair was merged and how often it occurred


def train_bpe_with_history(
    texts: Iterable[str] | str,
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    unk_token: str | None = None,
    lowercase: bool = False,
    min_frequency: int = 0,
    byte_level: bool = False,
) -> BPETraining:
    """Learn BPE merges from ``texts`` until the vocabulary has ``vocab_size`` tokens, and
    keep the history of merges.

    Args:
        texts: a string or an iterable of strings (e.g. one sentence each).
        vocab_size: target size, special tokens included (as in ``tokenizers``).
        special_tokens: tokens given the first ids, e.g. ``["[PAD]", "[UNK]", ...]``.
        unk_token: the special token unknown characters become when encoding (None: dropped).
        lowercase: lower-case the text before learning (and before encoding later).
        min_frequency: stop when the most frequent pair occurs fewer times than this.
        byte_level: GPT-2's byte-level BPE: words from :func:`pretokenize_bytes`, and all 256
            byte characters in the starting vocabulary (``lowercase`` and ``unk_token`` are
            then not needed: every text can be encoded).

    Returns:
        :class:`BPETraining` ``(tokenizer, history)``: the :class:`BPETokenizer` and, per merge,
        ``(pair, count)``.
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a str or a list of str, got {type(texts).__name__}")
    texts = [check_str(t, f"texts[{i}]") for i, t in enumerate(texts)]
    if not texts:
        raise ValueError("texts is empty: BPE learns its merges from at least one text")
    special_tokens = check_special_tokens(special_tokens, unk_token)
    min_frequency = check_positive_int(min_frequency, "min_frequency", allow_zero=True)
    if unk_token is not None and unk_token not in special_tokens:
        raise ValueError(f"unk_token {unk_token!r} must be one of special_tokens")
    lowercase, byte_level = check_flag(lowercase, "lowercase"), check_flag(byte_level, "byte_level")
    if byte_level:
        if lowercase or unk_token is not None:
            raise ValueError("byte_level BPE keeps the text as it is: no lowercase, no unk_token")
        word_counts = Counter(w for t in texts for w in pretokenize_bytes(t))
        alphabet = set(bytes_to_unicode().values())
        if vocab_size < len(alphabet) + len(special_tokens):
            raise ValueError(
                f"vocab_size={vocab_size} is smaller than byte-level BPE's alphabet: 256 bytes "
                f"+ {len(special_tokens)} special tokens = {256 + len(special_tokens)}; ask for "
                "more (merges come on top)"
            )
    else:
        word_counts = Counter(w for t in texts for w in pretokenize(t, lowercase))
        alphabet = {c for w in word_counts for c in w}

    vocab: dict[str, int] = {}
    for tok in [*special_tokens, *sorted(alphabet)]:
        vocab.setdefault(tok, len(vocab))
    id_to_token = {i: t for t, i in vocab.items()}

    # Words as lists of ids, so that ties can be broken by id as the tokenizers library does.
    words = [[vocab[c] for c in w] for w in word_counts]
    counts = list(word_counts.values())
    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, w in enumerate(words):
        for pair in zip(w, w[1:], strict=False):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    # Max-heap on (count, then smallest pair) with lazy updates: a popped entry whose count
    # is out of date is pushed back with its current count.
    heap = [(-c, pair) for pair, c in pair_counts.items() if c > 0]
    heapq.heapify(heap)

    merges: list[tuple[str, str]] = []
    history: list[tuple[tuple[str, str], int]] = []
    while len(vocab) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if -neg != current:
            if current > 0:
                heapq.heappush(heap, (-current, pair))
            continue
        if current < 1 or current < min_frequency:
            break
        a, b = id_to_token[pair[0]], id_to_token[pair[1]]
        new_tok = a + b
        if new_tok not in vocab:
            vocab[new_tok] = len(vocab)
            id_to_token[vocab[new_tok]] = new_tok
        new_id = vocab[new_tok]
        merges.append((a, b))
        history.append(((a, b), current))
        # Re-count the pairs of the words that contain the merged pair.
        grown: set[tuple[int, int]] = set()
        for i in where.pop(pair):
            w, c = words[i], counts[i]
            for p in zip(w, w[1:], strict=False):
                pair_counts[p] -= c
            merged, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == pair[0] and w[j + 1] == pair[1]:
                    merged.append(new_id)
                    j += 2
                else:
                    merged.append(w[j])
                    j += 1
            words[i] = merged
            for p in zip(merged, merged[1:], strict=False):
                pair_counts[p] += c
                where[p].add(i)
                grown.add(p)
        for p in grown:
            if pair_counts[p] > 0:
                heapq.heappush(heap, (-pair_counts[p], p))

    tok = BPETokenizer(vocab, merges, special_tokens=special_tokens, unk_token=unk_token,
                       lowercase=lowercase, byte_level=byte_level)  # fmt: skip
    return BPETraining(tok, history)
