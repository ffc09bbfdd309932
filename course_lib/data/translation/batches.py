"""What every translation model needs from the text: word tokens, :class:`Vocab` (with
``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``), :class:`Batch` / :func:`make_batch` (padded tensors
and padding masks) and :func:`batch_iterator` (shuffled, length-bucketed batches). The only
part of the corpus that needs torch.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from ..._validation import check_positive_int, check_str, check_token_sequence, check_type

__all__ = [
    "word_tokens",
    "Vocab",
    "Batch",
    "make_batch",
    "batch_iterator",
    "PAD",
    "BOS",
    "EOS",
    "UNK",
]


PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
_PUNCT = re.compile(r"([,.!?;:])")


def word_tokens(sentence: str) -> list[str]:
    """Lowercase words; punctuation becomes its own token; a final full stop is dropped.

    ``"The cat sat on the mat."`` → ``['the', 'cat', 'sat', 'on', 'the', 'mat']``.
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    tokens = _PUNCT.sub(r" \1 ", sentence.lower()).split()
    while tokens and tokens[-1] in ".!?":
        tokens.pop()
    return tokens


class Vocab:
    """Token ↔ id table; ids 0–3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``."""

    def __init__(self, tokens: Iterable[str]):
        self.itos: list[str] = [PAD, BOS, EOS, UNK]
        if isinstance(tokens, str):
            raise TypeError(f"tokens must be an iterable of str tokens, got the str {tokens!r:.40}")
        if not isinstance(tokens, Iterable):
            raise TypeError(
                f"tokens must be an iterable of str tokens, got {type(tokens).__name__}"
            )
        for tok in tokens:
            check_str(tok, "each token")
            if tok not in self.itos:
                self.itos.append(tok)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    @classmethod
    def build(cls, sentences: Iterable[str], min_freq: int = 1) -> Vocab:
        """Vocabulary of the tokens seen at least ``min_freq`` times, most frequent first."""
        if isinstance(sentences, str):
            raise TypeError(f"sentences must be a list of str, got the str {sentences!r:.40}")
        check_positive_int(min_freq, "min_freq")
        counts = Counter(tok for s in sentences for tok in word_tokens(s))
        ordered = sorted(counts, key=lambda t: (-counts[t], t))
        return cls(t for t in ordered if counts[t] >= min_freq)

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[:8])} …)"

    def encode(
        self, sentence: str | Sequence[str], *, bos: bool = False, eos: bool = False
    ) -> list[int]:
        """Ids of the tokens of ``sentence`` (a string or a token list); unknown → ``<unk>``."""
        if isinstance(sentence, str):
            tokens = word_tokens(sentence)
        else:
            tokens = check_token_sequence(sentence, "sentence")
            for tok in tokens:
                check_str(tok, "each token of sentence")
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Tokens of ``ids`` up to the first ``<eos>``, without ``<pad>``/``<bos>``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        out = []
        for i in check_token_sequence(ids, "ids"):
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"ids must be integer token ids, got {type(i).__name__} {i!r}")
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            out.append(self.itos[i] if 0 <= i < len(self.itos) else UNK)
        return " ".join(out)


@dataclass
class Batch:
    """Padded id tensors of a batch of pairs (``B`` pairs, ``S``/``T`` the longest lengths).

    Attributes:
        src: ``(B, S)`` source ids (no ``<bos>``/``<eos>``), ``<pad>`` on the right.
        src_mask: ``(B, S)`` bool, True for real tokens (the keys a decoder may attend to).
        tgt_in: ``(B, T)`` decoder input: ``<bos> y_1 … y_n`` (teacher forcing).
        tgt_out: ``(B, T)`` what to predict at each position: ``y_1 … y_n <eos>``.
        tgt_mask: ``(B, T)`` bool, True where ``tgt_out`` is a real token (counts in the loss).
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor

    def __len__(self) -> int:
        return self.src.shape[0]


def _pad(seqs: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out


def make_batch(pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> Batch:
    """Encode and pad ``pairs`` into a :class:`Batch`."""
    if len(pairs) == 0:
        raise ValueError("pairs is empty; a batch needs at least one (source, target) pair")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not isinstance(vocab, Vocab):
            raise TypeError(
                f"{name} must be a Vocab (Vocab.build(sentences)), got {type(vocab).__name__}"
            )
    for i, pair in enumerate(pairs):
        if not (
            isinstance(pair, (tuple, list))
            and len(pair) == 2
            and all(isinstance(s, str) for s in pair)
        ):
            raise TypeError(f"pairs[{i}] must be a (source, target) pair of str, got {pair!r:.60}")
    src = _pad([src_vocab.encode(s) for s, _ in pairs], src_vocab.pad_id)
    tgt = [tgt_vocab.encode(t, bos=True, eos=True) for _, t in pairs]
    tgt_in = _pad([t[:-1] for t in tgt], tgt_vocab.pad_id)
    tgt_out = _pad([t[1:] for t in tgt], tgt_vocab.pad_id)
    return Batch(src, src != src_vocab.pad_id, tgt_in, tgt_out, tgt_out != tgt_vocab.pad_id)


def batch_iterator(
    pairs: Sequence[tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int = 64,
    *,
    seed: int = 0,
    bucket: int = 20,
) -> Iterator[Batch]:
    """Endless shuffled batches, epoch after epoch, the same sequence for the same seed.

    Sentences of similar length go together (pools of ``bucket`` batches are sorted by length
    before they are cut), so little compute is spent on padding.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    check_positive_int(bucket, "bucket")
    if len(pairs) < batch_size:
        raise ValueError(f"need at least batch_size={batch_size} pairs, got {len(pairs)}")
    check_type(src_vocab, "src_vocab", Vocab)
    check_type(tgt_vocab, "tgt_vocab", Vocab)
    return _batches(pairs, src_vocab, tgt_vocab, batch_size, random.Random(seed), bucket)


def _batches(pairs, src_vocab, tgt_vocab, batch_size, rng, bucket) -> Iterator[Batch]:
    order = list(range(len(pairs)))
    while True:
        rng.shuffle(order)
        pool = batch_size * bucket
        chunks = []
        for start in range(0, len(order) - batch_size + 1, pool):
            part = sorted(order[start : start + pool], key=lambda i: len(pairs[i][0].split()))
            chunks += [
                part[k : k + batch_size] for k in range(0, len(part) - batch_size + 1, batch_size)
            ]
        rng.shuffle(chunks)
        for idx in chunks:
            yield make_batch([pairs[i] for i in idx], src_vocab, tgt_vocab)
