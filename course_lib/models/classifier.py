"""Fine-tuning BERT for a task: pooling, a classification head, and honest accuracy figures.

Sentence classification, as in BERT's paper: the encoder reads ``[CLS] sentence [SEP]`` and a
small head maps the ``[CLS]`` vector to one score per class::

    hidden (batch, n, H) -> pooler: tanh(dense(hidden[:, 0])) -> dropout -> linear -> (batch, C)

Fine-tuning trains the head *and* (some of) the encoder's layers on the task's labels.
:class:`BertClassifier` runs only the top ``len(layers)`` layers on hidden states given to it,
so the frozen bottom of the encoder is computed once (``tools/fine_tune_minilm.py``). For
sentence pairs, :func:`segment_mean_pool` averages each segment of one joint pass.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .._validation import (
    check_callable,
    check_class_ids,
    check_dropout,
    check_features,
    check_positive_int,
    check_positive_number,
    check_shape,
    check_tensor,
)

__all__ = [
    "mean_pool",
    "segment_mean_pool",
    "BertClassifier",
    "accuracy_ci",
    "confusion_matrix",
    "encode_sentences",
    "SpanHead",
]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors of the *real* tokens: ``(batch, n, H), (batch, n) -> (batch, H)``.

    Padded positions (mask 0) are left out of both the sum and the count.
    """
    check_tensor(hidden, "hidden", 3, "(batch, n, H)")
    check_tensor(attention_mask, "attention_mask", None, "(batch, n)")
    if attention_mask.shape != hidden.shape[:2]:
        raise ValueError(
            f"hidden must be (batch, n, H) and attention_mask (batch, n), got "
            f"{tuple(hidden.shape)} and {tuple(attention_mask.shape)}"
        )
    m = attention_mask.to(hidden.dtype)[..., None]  # (batch, n, 1)
    empty = (m.sum(1)[:, 0] == 0).nonzero()
    if len(empty):
        raise ValueError(
            f"attention_mask: row {int(empty[0])} has no real token (all 0); its mean is undefined"
        )
    return (hidden * m).sum(1) / m.sum(1)


def segment_mean_pool(
    hidden: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean token vector of each segment of ``[CLS] A [SEP] B [SEP]``: ``(a, b)``, each ``(batch, H)``.

    Segment A is the real tokens with segment id 0 after ``[CLS]`` (its ``[SEP]`` included),
    segment B the real tokens with segment id 1. The encoder read A and B *together*, so each
    mean has already looked at the other segment.
    """
    check_tensor(attention_mask, "attention_mask", 2, "(batch, n)")
    check_tensor(token_type_ids, "token_type_ids", 2, "(batch, n)")
    if token_type_ids.shape != attention_mask.shape:
        raise ValueError(
            f"token_type_ids must have the shape of attention_mask {tuple(attention_mask.shape)}, "
            f"got {tuple(token_type_ids.shape)}"
        )
    real = attention_mask.bool()
    in_a = real & (token_type_ids == 0)
    in_a[:, 0] = False  # [CLS] belongs to neither segment
    in_b = real & (token_type_ids == 1)
    for name, in_segment in (("A", in_a), ("B", in_b)):
        empty = (~in_segment.any(1)).nonzero()
        if len(empty):
            raise ValueError(
                f"token_type_ids: row {int(empty[0])} has no real token in segment {name} "
                f"(segment ids {token_type_ids[int(empty[0])].tolist()}); each needs at least one"
            )
    return mean_pool(hidden, in_a.long()), mean_pool(hidden, in_b.long())


class BertClassifier(nn.Module):
    """The top encoder layers (copied, trainable) and a classification head on ``[CLS]``.

    Args:
        layers: encoder layers to run on the given hidden states (e.g. MiniLM's top two);
            an empty list fine-tunes only the head.
        hidden_size: H.
        num_classes: C.
        dropout: before the last linear map (training only).

    ``forward(hidden, attention_mask) -> scores (batch, C)``, ``hidden`` ``(batch, n, H)`` being
    the output of the frozen layers below.
    """

    def __init__(self, layers, hidden_size: int, num_classes: int, dropout: float = 0.1):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.pooler = nn.Linear(check_positive_int(hidden_size, "hidden_size"), hidden_size)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.classifier = nn.Linear(hidden_size, check_positive_int(num_classes, "num_classes"))

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, n, _ = check_features(hidden, "hidden", self.pooler.in_features, "hidden_size").shape
        check_shape(attention_mask, "attention_mask", f"(batch={b}, n={n})", (b, n))
        keys = attention_mask.bool()[:, None, :]  # (batch, 1, n): padding hidden from every query
        for layer in self.layers:
            hidden = layer(hidden, keys)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))  # (batch, H): the [CLS] vector
        return self.classifier(self.dropout(pooled))  # (batch, C)


class SpanHead(nn.Module):
    """BERT's question-answering head: a start score and an end score for every token.

    ``forward(hidden (batch, n, H)) -> (start (batch, n), end (batch, n))``; the answer is the
    span ``i..j`` (``i <= j``) maximising ``start[i] + end[j]``; the loss is the mean of the
    cross-entropies of the true start and end positions.
    """

    def __init__(self, hidden_size: int):
        super().__init__()
        self.qa_outputs = nn.Linear(check_positive_int(hidden_size, "hidden_size"), 2)

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_features(hidden, "hidden", self.qa_outputs.in_features, "hidden_size")
        start, end = self.qa_outputs(hidden).unbind(-1)  # (batch, n) each
        return start, end


def accuracy_ci(correct, z: float = 1.96) -> tuple[float, float, float]:
    """``(accuracy, low, high)``: accuracy of a 0/1 array and its Wilson 95 % interval."""
    c = np.asarray(correct, dtype=float).ravel()
    n = c.size
    if n == 0:
        raise ValueError("correct must contain at least one prediction")
    if not np.isin(c, (0.0, 1.0)).all():
        raise ValueError(
            f"correct must hold 0/1 (or False/True) per prediction, got values {c[:5].tolist()}"
        )
    check_positive_number(z, "z")
    p = c.mean()
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(p), float(centre - half), float(centre + half)


def confusion_matrix(labels, predictions, num_classes: int) -> np.ndarray:
    """``(C, C)`` counts: row = true class, column = predicted class."""
    num_classes = check_positive_int(num_classes, "num_classes")
    labels = check_class_ids(labels, "labels", num_classes)
    predictions = check_class_ids(predictions, "predictions", num_classes)
    if labels.shape != predictions.shape:
        raise ValueError(
            "labels and predictions must have the same length, got "
            f"{labels.size} and {predictions.size}"
        )
    out = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(out, (labels, predictions), 1)
    return out


def encode_sentences(tokenizer, texts, max_length: int = 64, batch_size: int = 64, pairs=None):
    """Tokenize ``texts`` (or sentence pairs ``(A, B)``) into padded batches sorted by length.

    Returns ``(order, batches)``: ``batches`` is a list of dicts of ``input_ids``,
    ``token_type_ids``, ``attention_mask`` ``(b, n)``; ``order[k]`` is the index in ``texts`` of
    the k-th row over all batches (sorting by length wastes less work on padding).
    """
    check_callable(tokenizer, "tokenizer", "a Hugging Face tokenizer (callable)")
    if isinstance(texts, str):
        raise TypeError(f"texts must be a list of str, got the str {texts!r:.40}; wrap it in [...]")
    max_length = check_positive_int(max_length, "max_length")
    batch_size = check_positive_int(batch_size, "batch_size")
    items = list(texts) if pairs is None else list(pairs)
    if pairs is None:
        enc = [tokenizer(t, truncation=True, max_length=max_length) for t in items]
    else:
        enc = [tokenizer(a, b, truncation=True, max_length=max_length) for a, b in items]
    order = sorted(range(len(enc)), key=lambda i: len(enc[i]["input_ids"]))
    batches = []
    for start in range(0, len(order), batch_size):
        rows = [enc[i] for i in order[start : start + batch_size]]
        n = max(len(r["input_ids"]) for r in rows)
        batch = {k: torch.zeros(len(rows), n, dtype=torch.long) for k in
                 ("input_ids", "token_type_ids", "attention_mask")}  # fmt: skip
        for j, r in enumerate(rows):
            for k in batch:
                batch[k][j, : len(r[k])] = torch.tensor(r[k])
        batches.append(batch)
    return np.array(order), batches
