"""Fine-tuning BERT for a task: pooling, a classification head, and honest accuracy figures.

Sentence classification, as in BERT's paper: the encoder reads ``[CLS] sentence [SEP]`` and a
small head maps the ``[CLS]`` vector to one score per class::

    hidden (batch, n, H) -> pooler: tanh(dense(hidden[:, 0])) -> dropout -> linear -> (batch, C)

Fine-tuning trains the head *and* (some of) the encoder's layers on the task's labels.
:class:`BertClassifier` runs only the top ``len(layers)`` layers on hidden states given to it,
so the frozen bottom of the encoder is computed once (``tools/training/fine_tune_minilm.py``). For
sentence pairs, :func:`segment_mean_pool` averages each segment of one joint pass.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
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
    check_type,
)
from .bert_encoder import BertEncoder

__all__ = [
    "mean_pool",
    "segment_mean_pool",
    "BertClassifier",
    "top_layer_classifier",
    "classification_loss",
    "fine_tune",
    "predict_classes",
    "frozen_pass",
    "pad_states",
    "accuracy_ci",
    "confusion_matrix",
    "encode_sentences",
    "SpanHead",
    "ScratchClassifier",
    "train_scratch_classifier",
]


def _check_zero_one(mask: torch.Tensor, name: str) -> None:
    """A Hugging Face mask: 1 (or True) for a real token, 0 for padding, and nothing else."""
    if not ((mask == 0) | (mask == 1)).all():
        raise ValueError(f"{name} must hold 1 (real token) or 0 (padding), got values "
                         f"{torch.unique(mask)[:5].tolist()}")  # fmt: skip


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors of the *real* tokens: ``(batch, n, H), (batch, n) -> (batch, H)``.

    Padded positions (mask 0) are left out of both the sum and the count.
    """
    check_tensor(hidden, "hidden", 3, "(batch, n, H)")
    check_tensor(attention_mask, "attention_mask", None, "(batch, n)")
    if not hidden.is_floating_point():
        raise TypeError(f"hidden must be a floating tensor (token vectors), got {hidden.dtype}")
    _check_zero_one(attention_mask, "attention_mask")
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
    real = hidden.masked_fill(m == 0, 0.0)  # padded vectors out (even a nan there: 0 * nan is nan)
    return real.sum(1) / m.sum(1)


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
    _check_zero_one(attention_mask, "attention_mask")
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


def _check_some_real_token(attention_mask: torch.Tensor) -> None:
    if not attention_mask.bool().any(-1).all():
        row = int((~attention_mask.bool().any(-1)).nonzero()[0])
        raise ValueError(
            f"attention_mask: row {row} has no real token (all 0): attention over it is "
            "undefined (its scores would be nan); each sentence needs at least [CLS]"
        )


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
        check_features(hidden, "hidden", self.pooler.in_features, "hidden_size", like=self)
        b, n, _ = hidden.shape
        check_shape(attention_mask, "attention_mask", f"(batch={b}, n={n})", (b, n))
        _check_some_real_token(attention_mask)
        keys = attention_mask.bool()[:, None, :]  # (batch, 1, n): padding hidden from every query
        for layer in self.layers:
            hidden = layer(hidden, keys)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))  # (batch, H): the [CLS] vector
        return self.classifier(self.dropout(pooled))  # (batch, C)


def classification_loss(model: nn.Module, batch) -> torch.Tensor:
    """Cross-entropy of a classifier's scores: the ``loss_fn`` that
    :func:`course_lib.training.train_step` takes, ``batch = (hidden, attention_mask, labels)``."""
    if not isinstance(batch, tuple | list) or len(batch) != 3:
        raise TypeError(
            f"batch must be a tuple (hidden, attention_mask, labels), got {type(batch).__name__}"
            + (f" of {len(batch)}" if isinstance(batch, tuple | list) else "")
        )
    hidden, attention_mask, labels = batch
    check_tensor(labels, "labels", 1, "(batch,) of class ids")
    scores = model(hidden, attention_mask)  # (batch, C)
    if len(labels) != len(scores) or labels.min() < 0 or labels.max() >= scores.shape[-1]:
        raise ValueError(
            f"labels must hold one class id in [0, {scores.shape[-1]}) per sentence of the batch "
            f"({len(scores)}), got {labels.tolist()[:8]}"
        )
    return F.cross_entropy(scores, labels)  # mean over the batch of -log softmax(scores)[label]


def pad_states(states) -> tuple[torch.Tensor, torch.Tensor]:
    """``(hidden (b, n, H), attention_mask (b, n))`` from ``b`` sentences' vectors ``(n_i, H)``.

    Each sentence is padded with zero vectors to the longest one, ``n``; the mask is 1 at its
    ``n_i`` real tokens.
    """
    rows = list(states)
    if not rows:
        raise ValueError("states must hold at least one sentence's (n_i, H) tensor, got none")
    for i, r in enumerate(rows):
        check_tensor(r, f"states[{i}]", 2, "(n_i, H)")
        if r.shape[-1] != rows[0].shape[-1]:
            raise ValueError(
                f"states must all have the same width H, got {rows[0].shape[-1]} (states[0]) "
                f"and {r.shape[-1]} (states[{i}])"
            )
    n = max(len(r) for r in rows)
    hidden = rows[0].new_zeros(len(rows), n, rows[0].shape[-1])
    mask = torch.zeros(len(rows), n, dtype=torch.long)
    for j, r in enumerate(rows):
        hidden[j, : len(r)] = r
        mask[j, : len(r)] = 1
    return hidden, mask


def top_layer_classifier(encoder, top: int, num_classes: int) -> BertClassifier:
    """A :class:`BertClassifier` holding copies of ``encoder``'s top ``top`` layers and its
    pooler; only the last linear map (``classifier``) is new, with random weights."""
    n = check_type(encoder, "encoder", BertEncoder).config.num_hidden_layers
    top = check_positive_int(top, "top", allow_zero=True)
    if top > n:
        raise ValueError(f"top must be at most the encoder's {n} layers, got {top}")
    layers = [copy.deepcopy(encoder.encoder.layers[i]) for i in range(n - top, n)]
    model = BertClassifier(layers, encoder.config.hidden_size, num_classes)
    with torch.no_grad():
        model.pooler.load_state_dict(encoder.pooler.state_dict())  # pretrained, like the layers
    return model


@torch.no_grad()
def predict_classes(model: nn.Module, states, batch_size: int = 64) -> np.ndarray:
    """Class ids ``(N,)`` that ``model`` (eval mode) gives ``N`` sentences' vectors ``(n_i, H)``.

    Sentences of similar length are batched together (less padding); the ids come back in the
    order of ``states``.
    """
    if not len(states):
        raise ValueError("states must hold at least one sentence's (n_i, H) tensor, got none")
    model.eval()
    by_length = np.argsort([len(s) for s in states], kind="stable")
    ids = []
    for start in range(0, len(states), check_positive_int(batch_size, "batch_size")):
        hidden, mask = pad_states([states[i] for i in by_length[start : start + batch_size]])
        ids.append(model(hidden, mask).argmax(-1))
    out = np.empty(len(states), dtype=np.int64)
    out[by_length] = torch.cat(ids).numpy()  # back to the order of states
    return out


def fine_tune(model: BertClassifier, states, labels, val_states, val_labels, *, lr: float,
              head_lr: float, epochs: int, batch_size: int = 16, seed: int = 0,
              keep_best: bool = False, rows: Callable | None = None,
              trained: nn.Module | None = None) -> dict:  # fmt: skip
    """Fine-tune ``model``'s layers and head on ``N`` sentences' cached vectors ``(n_i, H)``.

    AdamW (weight decay 0.01) with two learning rates: ``lr`` for the layers, ``head_lr`` for
    the pooler and the linear map; each warms up over the first tenth of the steps, then decays
    linearly to 0. Each epoch visits the sentences in a new random order (``seed``) in batches of
    ``batch_size`` (a last, smaller batch is dropped), then measures the accuracy on the
    validation sentences. Returns ``{"losses": every step's loss, "validation": the accuracy
    after each epoch}``; with ``keep_best`` the model ends with the weights of the epoch of best
    validation accuracy (the first, on a tie). Dropout draws from torch's generator: seed it
    (:func:`course_lib.seed_everything`) before building the model to repeat a run exactly.

    Several processes (``tools/training/fine_tune_minilm.py`` under ``torchrun``): every process
    draws the same batches and keeps ``rows(batch)`` (its slice of ``(hidden, mask, labels)``),
    and the step goes through ``trained`` (``model`` in ``DistributedDataParallel``); the loss is
    a mean over rows, so the averaged gradient is the whole batch's. ``log["losses"]`` is then
    this process's rows'. ``None`` (the default): the whole batch, ``model`` itself.
    """
    from ..training import learning_rate_at, train_step

    labels = torch.as_tensor(labels)
    for name, ids, vecs in (("labels", labels, states), ("val_labels", val_labels, val_states)):
        if len(ids) != len(vecs):
            raise ValueError(
                f"{name} must hold one class id per sentence ({len(vecs)}), got {len(ids)}"
            )
    steps_per_epoch = len(states) // check_positive_int(batch_size, "batch_size")
    total = steps_per_epoch * check_positive_int(epochs, "epochs")
    if total == 0:
        raise ValueError(
            f"batch_size must be at most the {len(states)} sentences, got {batch_size}"
        )
    opt = torch.optim.AdamW(
        [{"params": model.layers.parameters()},
         {"params": [*model.pooler.parameters(), *model.classifier.parameters()]}],
        lr=lr, weight_decay=0.01,
    )  # fmt: skip
    order = np.random.default_rng(seed)
    log, best, step = {"losses": [], "validation": []}, None, 0
    for _ in range(epochs):
        perm = order.permutation(len(states))
        model.train()
        for k in range(steps_per_epoch):
            idx = perm[k * batch_size : (k + 1) * batch_size]
            for group, peak in zip(opt.param_groups, (lr, head_lr), strict=True):
                group["lr"] = learning_rate_at(step, total, peak, warmup=total // 10)
            hidden, mask = pad_states([states[i] for i in idx])  # (batch, n, H), (batch, n)
            batch = (hidden, mask, labels[idx])
            batch = batch if rows is None else rows(batch)
            loss = train_step(model if trained is None else trained, opt, classification_loss,
                              batch, clip_grad=None, step=step)  # fmt: skip
            log["losses"].append(loss)
            step += 1
        accuracy = float((predict_classes(model, val_states) == val_labels).mean())
        log["validation"].append(accuracy)
        if keep_best and (best is None or accuracy > best[0]):
            best = (accuracy, copy.deepcopy(model.state_dict()))
    if keep_best:
        model.load_state_dict(best[1])
    return log


@torch.no_grad()
def frozen_pass(tokenizer, encoder, texts, max_length: int = 64, top: int = 1) -> dict:
    """One pass of a frozen encoder over ``texts``; every result is in the order of ``texts``.

    Returns ``{"cls": (N, H), "mean": (N, H), "below_top": [N tensors (n_i, H)]}``: the last
    layer's ``[CLS]`` vector and mean of the real tokens' vectors (numpy arrays), and the output
    of the layer below the top ``top`` layers for each sentence's real tokens (what
    :class:`BertClassifier` fine-tunes on). Sentences are batched by length to save work on
    padding; the batching is undone here.
    """
    n_layers = check_type(encoder, "encoder", BertEncoder).config.num_hidden_layers
    top = check_positive_int(top, "top", allow_zero=True)
    if top > n_layers:
        raise ValueError(f"top must be at most the encoder's {n_layers} layers, got {top}")
    order, batches = encode_sentences(tokenizer, texts, max_length)
    cls, mean, below = [], [], []
    for b in batches:
        out = encoder(b["input_ids"], b["token_type_ids"], b["attention_mask"])
        cls.append(out.last_hidden_state[:, 0])  # (b, H)
        mean.append(mean_pool(out.last_hidden_state, b["attention_mask"]))  # (b, H)
        states = out.hidden_states[n_layers - top]  # (b, n, H): the input of the top layers
        below += [states[j, : int(m.sum())].clone() for j, m in enumerate(b["attention_mask"])]
    back = np.argsort(order)  # row k of the batches is text order[k]
    return {"cls": torch.cat(cls).numpy()[back], "mean": torch.cat(mean).numpy()[back],
            "below_top": [below[k] for k in back]}  # fmt: skip


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
        check_features(hidden, "hidden", self.qa_outputs.in_features, "hidden_size", like=self)
        start, end = self.qa_outputs(hidden).unbind(-1)  # (batch, n) each
        return start, end


def accuracy_ci(correct, z: float = 1.96) -> tuple[float, float, float]:
    """``(accuracy, low, high)``: accuracy of a 0/1 array and its Wilson 95 % interval."""
    try:
        c = np.asarray(correct, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(
            f"correct must hold 0/1 (or False/True) per prediction, got {correct!r:.60}"
        ) from None
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


class ScratchClassifier(nn.Module):
    """Lecture 12's small transformer trained from scratch (what
    :func:`train_scratch_classifier` returns): the WordPiece ids of a pretrained tokenizer mapped
    to the pieces seen in training (every other piece read as ``[UNK]``), a :class:`BertEncoder`
    without pooler, and a linear map on the mean of the token vectors."""

    def __init__(self, tokenizer, seen: list[int], config, num_classes: int, max_length: int):
        super().__init__()
        from ..configs import BertEncoderConfig

        self.tokenizer = check_callable(tokenizer, "tokenizer", "a Hugging Face tokenizer")
        self.config = check_type(config, "config", BertEncoderConfig)
        self.max_length = check_positive_int(max_length, "max_length")
        self.vocabulary = list(seen)  # WordPiece ids kept, in the order of the small ids
        small_id = torch.full(
            (tokenizer.vocab_size,), self.vocabulary.index(tokenizer.unk_token_id)
        )
        small_id[self.vocabulary] = torch.arange(len(self.vocabulary))  # [PAD] stays 0
        self.register_buffer("small_id", small_id, persistent=False)  # WordPiece id -> small id
        self.encoder = BertEncoder(config, add_pooler=False)
        self.head = nn.Linear(config.hidden_size, check_positive_int(num_classes, "num_classes"))
        self.best_epoch, self.best_validation = None, None  # set by train_scratch_classifier

    def _wordpieces(self, texts) -> list:
        """Each text tokenized on its own (truncated to ``max_length`` pieces)."""
        if isinstance(texts, str):
            raise TypeError(f"texts must be a list of str, got the str {texts!r:.40}")
        return [self.tokenizer(t, truncation=True, max_length=self.max_length) for t in texts]

    def _scores(self, rows) -> torch.Tensor:
        """Scores ``(batch, C)`` of tokenized sentences, padded to the longest of the batch."""
        b = self.tokenizer.pad(rows, return_tensors="pt")  # input_ids, attention_mask: (batch, n)
        out = self.encoder(self.small_id[b["input_ids"]], attention_mask=b["attention_mask"])
        return self.head(mean_pool(out.last_hidden_state, b["attention_mask"]))

    @torch.no_grad()
    def predict(self, texts, batch_size: int = 256) -> np.ndarray:
        """Predicted classes of ``texts`` (a list of str; sentences of similar length batched),
        in their order."""
        batch_size = check_positive_int(batch_size, "batch_size")
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise TypeError(f"texts must be a list of str, got {type(texts).__name__} "
                            f"{texts!r:.40}")  # fmt: skip
        if all(isinstance(t, str) for t in texts):
            rows = self._wordpieces(texts)
        elif all(isinstance(t, dict) or hasattr(t, "keys") for t in texts):
            rows = texts  # already tokenized (train_scratch_classifier's validation rows)
        else:
            raise TypeError(f"texts must be a list of str, got {texts!r:.60}")
        self.eval()
        by_length = np.argsort([len(r["input_ids"]) for r in rows], kind="stable")
        preds = np.empty(len(rows), dtype=np.int64)
        for k in range(0, len(rows), batch_size):
            idx = by_length[k : k + batch_size]
            preds[idx] = self._scores([rows[i] for i in idx]).argmax(-1).numpy()
        return preds


def train_scratch_classifier(tokenizer, train_texts, train_labels, val_texts, val_labels, *,
                             rng: np.random.Generator, num_classes: int, epochs: int = 30,
                             batch_size: int = 32, lr: float = 2e-3, hidden_size: int = 64,
                             layers: int = 2, heads: int = 4, dropout: float = 0.1,
                             max_length: int = 64) -> ScratchClassifier:  # fmt: skip
    """Train lecture 12's small transformer from random weights on ``train_texts`` only.

    Its vocabulary is the WordPiece pieces seen in ``train_texts`` (plus ``[PAD]`` and
    ``[UNK]``); its encoder ``layers`` x ``hidden_size`` (``heads`` heads, feed-forward 4x as
    wide); its head a linear map on the mean of the token vectors. AdamW (``lr``, weight decay
    0.01) on batches of ``batch_size`` training sentences of similar length (less padding),
    visited in a new order each epoch (``rng``: a numpy Generator); after each epoch the
    accuracy on ``val_texts``; the model ends with the weights of the epoch of best validation
    accuracy (the first, on a tie), kept in ``model.best_epoch`` / ``model.best_validation``.
    The weights are drawn from torch's generator: seed it (:func:`course_lib.seed_everything`)
    first to repeat a run exactly. Raises ``TypeError``/``ValueError`` naming a bad argument.
    """
    from ..configs import BertEncoderConfig

    check_callable(tokenizer, "tokenizer", "a Hugging Face tokenizer (callable)")
    check_type(rng, "rng", np.random.Generator)
    for name, texts, labels in (("train", train_texts, train_labels),
                                ("val", val_texts, val_labels)):  # fmt: skip
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError(f"{name}_texts must be a list of str, got {type(texts).__name__}")
        check_class_ids(labels, f"{name}_labels", check_positive_int(num_classes, "num_classes"))
        if len(labels) != len(texts) or not len(texts):
            raise ValueError(f"{name}_labels must hold one class id per text ({len(texts)}, at "
                             f"least one), got {len(labels)}")  # fmt: skip
    epochs, batch_size = check_positive_int(epochs, "epochs"), check_positive_int(batch_size,
                                                                                  "batch_size")  # fmt: skip
    train = [tokenizer(t, truncation=True, max_length=max_length) for t in train_texts]
    seen = sorted({i for row in train for i in row["input_ids"]} | {0, tokenizer.unk_token_id})
    config = BertEncoderConfig(
        vocab_size=len(seen), hidden_size=hidden_size, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=4 * hidden_size,
        max_position_embeddings=max_length, hidden_dropout_prob=check_dropout(dropout),
    )  # fmt: skip
    model = ScratchClassifier(tokenizer, seen, config, num_classes, max_length)
    opt = torch.optim.AdamW(model.parameters(), lr=check_positive_number(lr, "lr"),
                            weight_decay=0.01)  # fmt: skip
    val = model._wordpieces(val_texts)
    train_labels, val_labels = np.asarray(train_labels), np.asarray(val_labels)
    by_length = np.argsort([len(r["input_ids"]) for r in train], kind="stable")
    batches = [by_length[k : k + batch_size] for k in range(0, len(by_length), batch_size)]
    best = None
    for epoch in range(1, epochs + 1):
        model.train()
        for k in rng.permutation(len(batches)):
            idx = batches[k]
            scores = model._scores([train[i] for i in idx])  # (batch, C)
            loss = F.cross_entropy(scores, torch.from_numpy(train_labels[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        accuracy = float((model.predict(val) == val_labels).mean())
        if best is None or accuracy > best[0]:  # keep the epoch of best validation accuracy
            best = (accuracy, epoch, copy.deepcopy(model.state_dict()))
    model.load_state_dict(best[2])
    model.best_validation, model.best_epoch = best[0], best[1]
    return model
