"""A tiny BERT built from the course's encoder layers, its pretraining loss, and BERT's size.

Architecture (Devlin et al., 2019), scaled down::

    input_ids, segment_ids
      -> token embedding + learned position embedding + segment embedding -> LayerNorm, dropout
      -> course_lib.Encoder (post-LN layers, bidirectional: only padding is masked)
      -> MLM head: dense + GELU + LayerNorm, then scores against the *token embedding matrix*
         (weights tied, plus a bias per token)                     -> (batch, n, vocab)
      -> NSP head: pooler (dense + tanh) on the [CLS] vector, then 2 classes -> (batch, 2)

Pretraining minimises ``loss = MLM loss + NSP loss`` on every batch: both objectives are
computed on the same examples and simply added (as in BERT and in ``transformers``'
``BertForPreTraining``). The MLM loss is the mean cross-entropy over the *picked* positions only.

One simplification: the course's encoder layers use ReLU in the feed-forward block; BERT uses GELU.
The model is built from a :class:`~course_lib.TinyBertConfig` (``TINY_BERT_CONFIG`` is lecture 08's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_checkpoint,
    check_features,
    check_heads,
    check_last_dim,
    check_positive_int,
    check_str,
    check_token_ids,
    check_type,
    checkpoint_path,
    inner_checks_off,
    read_checkpoint,
)
from ..configs import TinyBertConfig, current_names
from ..data.pretraining import IGNORE_INDEX  # the label the MLM loss skips, defined once
from ..nn import Encoder, eval_mode
from ..tokenization import BPETokenizer

__all__ = [
    "TinyBert",
    "pretraining_loss",
    "pretraining_losses",
    "pretraining_accuracy",
    "bert_parameter_count",
    "load_tiny_bert",
    "fill_mask",
]


class TinyBert(nn.Module):
    """BERT for pretraining, built from a :class:`~course_lib.TinyBertConfig`:
    ``forward(input_ids, segment_ids, attention_mask) -> hidden``.

    Shapes: ``input_ids``, ``segment_ids``, ``attention_mask`` ``(batch, n)`` (the mask is
    boolean, True = a real token; default: ``input_ids != config.pad_id``); ``forward`` returns
    hidden states ``(batch, n, d_model)``; :meth:`mlm_logits` gives ``(batch, n, vocab)`` (or
    ``(k, vocab)`` at selected positions), :meth:`nsp_logits` ``(batch, 2)`` (class 1 = "B
    follows A"). :attr:`attention_weights` lists each layer's last weights.
    """

    def __init__(self, config: TinyBertConfig):
        super().__init__()
        self.config = c = check_type(config, "config", TinyBertConfig)
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.position_embedding = nn.Embedding(c.context_length, c.d_model)
        self.segment_embedding = nn.Embedding(c.type_vocab_size, c.d_model)
        self.embedding_norm = nn.LayerNorm(c.d_model, eps=1e-12)
        self.dropout = nn.Dropout(c.dropout)
        self.encoder = Encoder(c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout)
        # MLM head; its output matrix is token_embedding.weight (tied), only the bias is its own.
        self.mlm_dense = nn.Linear(c.d_model, c.d_model)
        self.mlm_norm = nn.LayerNorm(c.d_model, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(c.vocab_size))
        # NSP head: BERT's "pooler" (dense + tanh on [CLS]) and a 2-way classifier.
        self.pooler = nn.Linear(c.d_model, c.d_model)
        self.nsp_classifier = nn.Linear(c.d_model, 2)
        self.apply(self._init_weights)
        inner_checks_off(self)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # BERT's initialisation: N(0, 0.02) for every matrix and embedding, zero biases.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        segment_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Contextual vectors ``(batch, n, d_model)`` of every position."""
        c = self.config
        check_token_ids(input_ids, "input_ids", "(batch, n)", c.vocab_size)
        n = input_ids.shape[1]
        if n > c.context_length:
            raise ValueError(
                f"input_ids has n={n} positions but the model has only context_length="
                f"{c.context_length} position embeddings"
            )
        if segment_ids is None:
            segment_ids = torch.zeros_like(input_ids)
        check_token_ids(segment_ids, "segment_ids", "(batch, n)", c.type_vocab_size,
                        "type_vocab_size")  # fmt: skip
        if segment_ids.shape != input_ids.shape:
            raise ValueError(
                f"segment_ids must have the shape of input_ids {tuple(input_ids.shape)}, "
                f"got {tuple(segment_ids.shape)}"
            )
        if attention_mask is None:
            attention_mask = input_ids != c.pad_id
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.dtype != torch.bool:
            got = getattr(attention_mask, "dtype", type(attention_mask).__name__)
            raise TypeError(
                f"attention_mask must be a boolean torch.Tensor (batch, n), True = real token; got {got}"
            )
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}, "
                f"got {tuple(attention_mask.shape)}"
            )
        if not attention_mask.any(dim=1).all():
            raise ValueError(
                "attention_mask: some sequence has no real token (a row of all False); each "
                "sequence needs at least one, or its attention is 0/0"
            )
        positions = torch.arange(n, device=input_ids.device)
        x = (
            self.token_embedding(input_ids)
            + self.position_embedding(positions)[None]
            + self.segment_embedding(segment_ids)
        )
        x = self.dropout(self.embedding_norm(x))
        # Key-padding mask (batch, 1, n): every position may attend to every real token.
        return self.encoder(x, attention_mask[:, None, :])

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Scores over the vocabulary ``(..., vocab)`` from hidden vectors ``(..., d_model)``."""
        check_last_dim(hidden, "hidden", self.config.d_model, like=self)
        h = self.mlm_norm(F.gelu(self.mlm_dense(hidden)))
        return h @ self.token_embedding.weight.T + self.mlm_bias

    def nsp_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Scores ``(batch, 2)`` for "B is random" (0) / "B follows A" (1), from the [CLS] vector."""
        check_features(hidden, "hidden", self.config.d_model, like=self)
        return self.nsp_classifier(torch.tanh(self.pooler(hidden[:, 0])))

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        """Each layer's attention weights ``(batch, heads, n, n)`` from the last call."""
        return self.encoder.attention_weights


_BATCH_KEYS = ("input_ids", "segment_ids", "attention_mask", "mlm_labels", "nsp_labels")


def _outputs(model: TinyBert, batch: dict):
    # a TinyBert, or one in DistributedDataParallel (tools/training/train_tiny_bert.py, torchrun)
    if not isinstance(getattr(model, "module", model), TinyBert):
        raise TypeError(f"model must be a TinyBert, got {type(model).__name__}")
    if not isinstance(batch, dict):
        raise TypeError(
            f"batch must be a dict from PretrainingData.batch, got {type(batch).__name__}"
        )
    missing = [k for k in _BATCH_KEYS if k not in batch]
    if missing:
        raise ValueError(
            f"batch is missing {', '.join(map(repr, missing))} (PretrainingData.batch)"
        )
    if not (batch["mlm_labels"] != IGNORE_INDEX).any():
        raise ValueError(
            f"batch['mlm_labels'] has no position to predict (every label is {IGNORE_INDEX}): "
            "the MLM loss would be the mean of nothing, nan; mask at least one token"
        )
    hidden = model(batch["input_ids"], batch["segment_ids"], batch["attention_mask"])
    picked = batch["mlm_labels"] != IGNORE_INDEX
    # Scores only where there is something to predict: ~15 % of the positions.
    return model.mlm_logits(hidden[picked]), batch["mlm_labels"][picked], model.nsp_logits(hidden)


def pretraining_losses(model: TinyBert, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's two pretraining losses on a batch from
    :class:`course_lib.data.pretraining.PretrainingData`: ``(mlm_loss, nsp_loss)``, the mean
    cross-entropy over the picked positions and over the sentence pairs."""
    mlm_logits, mlm_targets, nsp_logits = _outputs(model, batch)
    return F.cross_entropy(mlm_logits, mlm_targets), F.cross_entropy(
        nsp_logits, batch["nsp_labels"]
    )


def pretraining_loss(model: TinyBert, batch: dict) -> torch.Tensor:
    """BERT's pretraining loss: ``MLM loss + NSP loss`` (:func:`pretraining_losses`), both
    computed on the same examples and simply added, as in ``transformers``'
    ``BertForPreTraining``."""
    mlm, nsp = pretraining_losses(model, batch)
    return mlm + nsp


@torch.no_grad()
def pretraining_accuracy(model: TinyBert, batches: Iterable[dict]) -> dict[str, float]:
    """MLM accuracy (over picked positions) and NSP accuracy of ``model`` on ``batches``."""
    if isinstance(batches, dict):
        raise TypeError(
            "batches must be an iterable of batch dicts, got one dict; wrap it in [batch]"
        )
    mlm_right = mlm_total = nsp_right = nsp_total = 0
    with eval_mode(model):
        for batch in batches:
            mlm_logits, mlm_targets, nsp_logits = _outputs(model, batch)
            mlm_right += int((mlm_logits.argmax(-1) == mlm_targets).sum())
            mlm_total += int(mlm_targets.numel())
            nsp_right += int((nsp_logits.argmax(-1) == batch["nsp_labels"]).sum())
            nsp_total += int(batch["nsp_labels"].numel())
    if not nsp_total:
        raise ValueError("batches is empty: there is nothing to measure")
    return {"mlm_accuracy": mlm_right / mlm_total, "nsp_accuracy": nsp_right / nsp_total}


def bert_parameter_count(
    vocab_size: int = 30522,
    hidden_size: int = 768,
    num_hidden_layers: int = 12,
    num_attention_heads: int = 12,
    intermediate_size: int = 3072,
    max_position_embeddings: int = 512,
    type_vocab_size: int = 2,
) -> int:
    """Number of parameters of ``transformers.BertModel(BertConfig(...))`` (with its pooler).

    With V, P, T the vocabulary, position and segment table sizes, H = hidden_size,
    I = intermediate_size and L layers:

    * embeddings: ``(V + P + T) H`` plus one LayerNorm ``2 H``;
    * each layer: Q, K, V and output maps ``4 (H^2 + H)``, FFN ``H I + I + I H + H``, two
      LayerNorms ``4 H``  -> ``4 H^2 + 2 H I + 9 H + I``;
    * pooler: ``H^2 + H``.

    The number of heads does not change the count (it must divide H). BERT-base gives
    109,482,240 ("110M"); BERT-large (H=1024, L=24, 16 heads, I=4096) 335,141,888 ("340M").
    """
    v = check_positive_int(vocab_size, "vocab_size")
    h = check_positive_int(hidden_size, "hidden_size")
    n_layers = check_positive_int(num_hidden_layers, "num_hidden_layers")
    check_heads(h, num_attention_heads, names=("hidden_size", "num_attention_heads"))
    i = check_positive_int(intermediate_size, "intermediate_size")
    p = check_positive_int(max_position_embeddings, "max_position_embeddings")
    t = check_positive_int(type_vocab_size, "type_vocab_size")
    embeddings = (v + p + t) * h + 2 * h
    layer = 4 * h * h + 2 * h * i + 9 * h + i
    pooler = h * h + h
    return embeddings + n_layers * layer + pooler


CHECKPOINT = Path(__file__).resolve().parents[1] / "data" / "tiny_bert.pt"


def load_tiny_bert(path: str | Path | None = None) -> tuple[TinyBert, dict]:
    """The pretrained tiny BERT shipped with the course (``course_lib/data/tiny_bert.pt``).

    Loaded with ``weights_only=True`` (plain tensors and numbers, no pickled code). Returns the
    model in eval mode and the checkpoint's metadata (config, training settings, history of
    held-out accuracies). Reproduce it with ``python -m tools.training.train_tiny_bert``.
    """
    path = checkpoint_path(path, CHECKPOINT)
    ckpt = current_names(read_checkpoint(path, "TinyBert"))
    check_checkpoint(ckpt, ("vocab_size", "config", "state_dict"), path, "TinyBert")
    model = TinyBert(TinyBertConfig(vocab_size=ckpt["vocab_size"], **ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    meta = {k: v for k, v in ckpt.items() if k != "state_dict"}
    return model, meta


def fill_mask(
    model: TinyBert, tokenizer: BPETokenizer, text: str, top_k: int = 3
) -> list[tuple[str, float]]:
    """The ``top_k`` most probable tokens for the one ``[MASK]`` in ``text``, by ``model``.

    The same task as :func:`course_lib.pretrained.fill_mask` (MiniLM), on lecture 08's tiny
    BERT: ``tokenizer`` is its BPE tokenizer (e.g. ``pretraining_tokenizer()``). The text on
    either side of ``[MASK]`` is tokenized as it is, and ``[MASK]`` takes one token's place;
    the model reads ``[CLS] text [SEP] [SEP]`` (segment B empty). Returns
    ``[(token, probability), ...]``, most probable first.
    """
    if not isinstance(model, TinyBert):
        raise TypeError(f"model must be a TinyBert, got {type(model).__name__}")
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
    if check_str(text, "text").count("[MASK]") != 1:
        raise ValueError(
            f"text must contain exactly one [MASK], got {text.count('[MASK]')}: {text!r}"
        )
    top_k = check_positive_int(top_k, "top_k")
    before, after = text.split("[MASK]")
    if not re.match(r"\w", after):  # keep the space before the next word: tokenize "a" + after
        after_ids = tokenizer.encode("a" + after)[len(tokenizer.encode("a")) :]
    else:  # [MASK] is glued to the rest of a word
        after_ids = tokenizer.encode(after)
    mask = tokenizer.vocab["[MASK]"]
    ids = [*tokenizer.encode(before), mask, *after_ids]
    i = ids.index(mask)
    if len(ids) + 3 > model.config.context_length:
        raise ValueError(
            f"text is {len(ids)} tokens; with [CLS] and two [SEP] it must fit the model's "
            f"context_length={model.config.context_length}"
        )
    cls, sep = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    input_ids = [cls, *ids, sep, sep]  # [CLS] A [SEP] B [SEP] with B empty
    segments = [0] * (len(ids) + 2) + [1]
    with eval_mode(model), torch.no_grad():
        hidden = model(torch.tensor([input_ids]), torch.tensor([segments]))  # (1, n, d)
        probs = model.mlm_logits(hidden[0, i + 1]).softmax(-1)  # +1: [CLS] comes first
    top = probs.topk(top_k)
    return [(tokenizer.id_to_token[int(j)], float(q))
            for q, j in zip(top.values, top.indices, strict=True)]  # fmt: skip
