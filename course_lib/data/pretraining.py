"""BERT pretraining data: sentence pairs for next-sentence prediction, masking for masked-LM.

The text is real English: prose sentences from Python's own documentation (the Language
Reference help topics and the standard-library docstrings), frozen into
``pretraining_corpus.txt`` by ``tools/training/make_pretraining_corpus.py``. It ships with every Python,
needs no download, and comes in *documents* whose consecutive sentences really follow each
other -- what next-sentence prediction needs (a generated corpus would let the model learn the
generator's rules instead). 701 documents, 3,901 sentences, ~63k words.

One pretraining example, as in BERT::

    tokens      [CLS]  A1 A2 A3  [SEP]  B1 B2  [SEP]
    segment       0     0  0  0    0     1  1    1
    is_next     1 if B is the sentence that follows A in its document, 0 if B is a random
                sentence from another document (each with probability 1/2)

Masked-LM then picks each non-special token with probability 15 %; of the picked tokens 80 %
become ``[MASK]``, 10 % a random token and 10 % stay unchanged, and the model must predict the
original token at every picked position (labels elsewhere are -100, ignored by the loss).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from .._validation import (
    check_index,
    check_positive_int,
    check_probability,
    check_token_sequence,
    check_type,
)
from ..tokenization import BPETokenizer, train_bpe

__all__ = [
    "SPECIAL_TOKENS",
    "IGNORE_INDEX",
    "load_pretraining_corpus",
    "split_documents",
    "pretraining_tokenizer",
    "pair_input",
    "truncate_pair",
    "make_nsp_pair",
    "mask_tokens",
    "PretrainingData",
]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
IGNORE_INDEX = -100  # label of positions the MLM loss skips (torch's cross_entropy default)
CORPUS_FILE = Path(__file__).resolve().with_name("pretraining_corpus.txt")

T = TypeVar("T")


def load_pretraining_corpus() -> list[list[str]]:
    """The documents of the pretraining corpus, each a list of sentences in their order."""
    docs: list[list[str]] = []
    for line in CORPUS_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith("= "):
            docs.append([])
        elif line.strip() and not line.startswith("#"):
            docs[-1].append(line)
    return docs


def split_documents(documents: Sequence[T], every: int = 10) -> tuple[list[T], list[T]]:
    """Split into (training, held-out) documents: every ``every``-th document is held out.

    Whole documents are held out, so no held-out sentence pair was seen in training.
    """
    documents = check_token_sequence(documents, "documents")
    if check_positive_int(every, "every") < 2:
        raise ValueError("every must be >= 2, got 1: every=1 would hold out every document")
    held = [d for i, d in enumerate(documents) if i % every == every - 1]
    train = [d for i, d in enumerate(documents) if i % every != every - 1]
    return train, held


@functools.lru_cache(maxsize=4)
def pretraining_tokenizer(vocab_size: int = 2000) -> BPETokenizer:
    """A lower-casing BPE tokenizer learned from the whole corpus, with BERT's special tokens.

    Ids 0-4 are ``[PAD] [UNK] [CLS] [SEP] [MASK]``. Deterministic: same corpus, same merges.
    """
    check_positive_int(vocab_size, "vocab_size")
    sentences = [s for doc in load_pretraining_corpus() for s in doc]
    tokenizer = train_bpe(
        sentences, vocab_size, special_tokens=SPECIAL_TOKENS, unk_token="[UNK]", lowercase=True
    )
    if len(tokenizer) > vocab_size:
        raise ValueError(
            f"vocab_size must be >= {len(tokenizer)} (5 special tokens + the corpus's characters), "
            f"got {vocab_size}"
        )
    return tokenizer


def pair_input(
    tokens_a: Sequence[T], tokens_b: Sequence[T], cls: T = "[CLS]", sep: T = "[SEP]"
) -> tuple[list[T], list[int]]:
    """BERT's input for a sentence pair: ``[CLS] A [SEP] B [SEP]`` and its segment ids.

    Segment id 0 covers ``[CLS]``, A and the first ``[SEP]``; 1 covers B and the last ``[SEP]``.
    Works on token strings or on ids (pass ``cls``/``sep`` ids then).

    >>> pair_input(["a", "b"], ["c"])
    (['[CLS]', 'a', 'b', '[SEP]', 'c', '[SEP]'], [0, 0, 0, 0, 1, 1])
    """
    tokens_a = check_token_sequence(tokens_a, "tokens_a")
    tokens_b = check_token_sequence(tokens_b, "tokens_b")
    for name, special in (("cls", cls), ("sep", sep)):
        if not isinstance(special, str):  # a token string, or an id >= 0
            check_positive_int(special, name, allow_zero=True)
    tokens = [cls, *tokens_a, sep, *tokens_b, sep]
    segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
    return tokens, segments


def truncate_pair(
    tokens_a: Sequence[T], tokens_b: Sequence[T], max_tokens: int
) -> tuple[list[T], list[T]]:
    """Drop tokens from the end of the longer sentence until both fit in ``max_tokens``."""
    max_tokens = check_positive_int(max_tokens, "max_tokens", allow_zero=True)
    a, b = check_token_sequence(tokens_a, "tokens_a"), check_token_sequence(tokens_b, "tokens_b")
    while len(a) + len(b) > max_tokens:
        (a if len(a) > len(b) else b).pop()
    return a, b


def make_nsp_pair(
    documents: Sequence[Sequence[T]], doc: int, index: int, rng: np.random.Generator
) -> tuple[T, T, int]:
    """A next-sentence-prediction example starting at sentence ``index`` of document ``doc``.

    With probability 1/2: B is the next sentence of the same document, label ``is_next = 1``.
    Otherwise: B is a uniformly random sentence of a *different* document, ``is_next = 0``.

    Returns:
        ``(sentence_a, sentence_b, is_next)``.
    """
    check_type(rng, "rng", np.random.Generator)
    check_positive_int(doc, "doc", allow_zero=True)
    check_positive_int(index, "index", allow_zero=True)
    if not 0 <= doc < len(documents):
        raise ValueError(f"doc must be in [0, {len(documents)}), got {doc}")
    if not 0 <= index < len(documents[doc]) - 1:
        raise ValueError(
            f"index must be in [0, {len(documents[doc]) - 1}) so that a next sentence exists, "
            f"got {index}"
        )
    if len(documents) < 2:
        raise ValueError("documents must hold at least 2 documents to draw random sentences")
    a = documents[doc][index]
    if rng.random() < 0.5:
        return a, documents[doc][index + 1], 1
    other = int(rng.integers(len(documents) - 1))
    other += other >= doc  # any document but ``doc``
    b = documents[other][int(rng.integers(len(documents[other])))]
    return a, b, 0


def mask_tokens(
    input_ids,
    rng: np.random.Generator,
    *,
    mask_id: int,
    vocab_size: int,
    special_ids: Sequence[int] = (0, 1, 2, 3, 4),
    mask_prob: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masking rule on token ids of any shape, e.g. ``(batch, n)``.

    Each token that is not special (``[CLS]``, ``[SEP]``, ``[PAD]``, ...) is *picked* with
    probability ``mask_prob``. A picked token becomes ``[MASK]`` with probability 0.8, a random
    non-special token with probability 0.1, and stays itself with probability 0.1.

    Returns:
        ``(masked_ids, labels)`` of the shape of ``input_ids``: labels hold the original id at
        picked positions and ``IGNORE_INDEX`` (-100) everywhere else.
    """
    ids = np.asarray(input_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"input_ids must be integer token ids, got dtype {ids.dtype}")
    check_type(rng, "rng", np.random.Generator)
    mask_prob = check_probability(mask_prob, "mask_prob")
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_index(mask_id, "mask_id", vocab_size, "vocab_size")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(
            f"input_ids must lie in [0, vocab_size={vocab_size}), got ids from {ids.min()} to "
            f"{ids.max()}"
        )
    if isinstance(special_ids, (str, bytes)) or not isinstance(special_ids, (Sequence, np.ndarray)):
        raise TypeError(
            f"special_ids must be a list of token ids, got {type(special_ids).__name__}"
        )
    for s in special_ids:
        check_positive_int(s, "special_ids", allow_zero=True)
    special = np.isin(ids, np.asarray(special_ids))
    # Random draws in a fixed order, so one generator state gives one masking.
    picked = (rng.random(ids.shape) < mask_prob) & ~special
    action = rng.random(ids.shape)
    normal_ids = np.setdiff1d(np.arange(vocab_size), np.asarray(special_ids))
    random_ids = normal_ids[rng.integers(len(normal_ids), size=ids.shape)]

    masked = ids.copy()
    masked[picked & (action < 0.8)] = mask_id
    to_random = picked & (action >= 0.8) & (action < 0.9)
    masked[to_random] = random_ids[to_random]
    labels = np.where(picked, ids, IGNORE_INDEX)
    return masked, labels


class PretrainingData:
    """Turns documents into batches of BERT pretraining examples (NSP pairs, MLM masking).

    Args:
        tokenizer: a tokenizer with BERT's special tokens (:func:`pretraining_tokenizer`).
        documents: lists of sentences (default: the whole corpus).
        seq_len: length of every sequence, ``[CLS]``/``[SEP]`` included; shorter ones are padded.
        mask_prob: the masked-LM picking rate.

    Masking is *dynamic* (a fresh masking every time a pair is drawn, as RoBERTa does); the
    original BERT masked each sequence once and repeated the data ten times with different masks.
    """

    def __init__(
        self,
        tokenizer: BPETokenizer,
        documents: Sequence[Sequence[str]] | None = None,
        seq_len: int = 64,
        mask_prob: float = 0.15,
    ):
        self.tokenizer = tokenizer
        self.seq_len = check_positive_int(seq_len, "seq_len")
        if self.seq_len < 5:
            raise ValueError(f"seq_len must be >= 5 (3 special tokens + 2 words), got {seq_len}")
        self.mask_prob = check_probability(mask_prob, "mask_prob")
        missing = [t for t in SPECIAL_TOKENS if t not in getattr(tokenizer, "vocab", {})]
        if missing:
            raise ValueError(
                f"tokenizer must know BERT's special tokens (pretraining_tokenizer()); "
                f"{type(tokenizer).__name__} lacks {missing}"
            )
        docs = load_pretraining_corpus() if documents is None else documents
        self.documents = [[tokenizer.encode(s) for s in d] for d in docs]
        self.positions = [
            (d, i) for d, doc in enumerate(self.documents) for i in range(len(doc) - 1)
        ]
        if len(self.documents) < 2 or not self.positions:
            raise ValueError("documents must hold >= 2 documents, one of them with >= 2 sentences")
        v = tokenizer.vocab
        self.pad_id, self.cls_id, self.sep_id, self.mask_id = (
            v["[PAD]"], v["[CLS]"], v["[SEP]"], v["[MASK]"]
        )  # fmt: skip
        self.special_ids = [v[t] for t in SPECIAL_TOKENS]
        self.vocab_size = len(tokenizer)

    def example(self, rng: np.random.Generator, position: int | None = None) -> dict:
        """One unmasked pair: ``input_ids`` and ``segment_ids`` (lists, unpadded) and ``is_next``."""
        check_type(rng, "rng", np.random.Generator)
        if position is None:
            position = int(rng.integers(len(self.positions)))
        elif (
            not 0 <= check_positive_int(position, "position", allow_zero=True) < len(self.positions)
        ):
            raise ValueError(f"position must be in [0, {len(self.positions)}), got {position}")
        doc, index = self.positions[position]
        a, b, is_next = make_nsp_pair(self.documents, doc, index, rng)
        a, b = truncate_pair(a, b, self.seq_len - 3)
        ids, segments = pair_input(a, b, self.cls_id, self.sep_id)
        return {"input_ids": ids, "segment_ids": segments, "is_next": is_next}

    def batch(self, batch_size: int, rng: np.random.Generator, mask: bool = True) -> dict:
        """A batch of torch tensors, all ``(batch, seq_len)`` except ``nsp_labels`` ``(batch,)``:

        ``input_ids`` (masked if ``mask``), ``segment_ids``, ``attention_mask`` (bool, True =
        a real token), ``mlm_labels`` (original id at picked positions, else -100),
        ``nsp_labels`` (1 = B follows A).
        """
        import torch

        batch_size = check_positive_int(batch_size, "batch_size")
        check_type(rng, "rng", np.random.Generator)
        ids = np.full((batch_size, self.seq_len), self.pad_id, dtype=np.int64)
        segs = np.zeros((batch_size, self.seq_len), dtype=np.int64)
        nsp = np.zeros(batch_size, dtype=np.int64)
        for row in range(batch_size):
            ex = self.example(rng)
            n = len(ex["input_ids"])
            ids[row, :n], segs[row, :n], nsp[row] = (
                ex["input_ids"],
                ex["segment_ids"],
                ex["is_next"],
            )
        attention = ids != self.pad_id
        if mask:
            masked, labels = mask_tokens(
                ids,
                rng,
                mask_id=self.mask_id,
                vocab_size=self.vocab_size,
                special_ids=self.special_ids,
                mask_prob=self.mask_prob,
            )
        else:
            masked, labels = ids, np.full_like(ids, IGNORE_INDEX)
        return {
            "input_ids": torch.from_numpy(masked),
            "segment_ids": torch.from_numpy(segs),
            "attention_mask": torch.from_numpy(attention),
            "mlm_labels": torch.from_numpy(labels),
            "nsp_labels": torch.from_numpy(nsp),
        }
