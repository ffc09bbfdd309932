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
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_checkpoint,
    check_dropout,
    check_features,
    check_index,
    check_last_dim,
    check_positive_int,
    check_str,
    check_token_ids,
    checkpoint_path,
)
from ..layers import Encoder
from ..tokenization import SPACE, BPETokenizer
from .configs import TINY_BERT, TINY_BERT_PRETRAINING

__all__ = [
    "TinyBert",
    "pretraining_loss",
    "pretraining_accuracy",
    "bert_parameter_count",
    "TINY_BERT_CONFIG",
    "TINY_BERT_TRAINING",
    "load_tiny_bert",
    "fill_in",
]

IGNORE_INDEX = -100


class TinyBert(nn.Module):
    """BERT for pretraining: ``forward(input_ids, segment_ids, attention_mask) -> hidden``.

    Args:
        vocab_size: number of token ids.
        d_model, num_layers, num_heads, d_ff, dropout: as for :class:`course_lib.Encoder`.
        max_len: number of learned position embeddings (longest input).
        type_vocab_size: number of segments (2: sentence A and sentence B).
        pad_id: id of ``[PAD]`` (used to build the attention mask when none is given).

    Shapes: ``input_ids``, ``segment_ids``, ``attention_mask`` ``(batch, n)`` (the mask is
    boolean, True = a real token); ``forward`` returns hidden states ``(batch, n, d_model)``;
    :meth:`mlm_logits` gives ``(batch, n, vocab)`` (or ``(k, vocab)`` at selected positions),
    :meth:`nsp_logits` ``(batch, 2)`` (class 1 = "B follows A").
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 128,
        num_layers: int = 2,
        num_heads: int = 4,
        d_ff: int | None = None,
        max_len: int = 64,
        type_vocab_size: int = 2,
        dropout: float = 0.1,
        pad_id: int = 0,
    ):
        super().__init__()
        self.config = {
            "vocab_size": check_positive_int(vocab_size, "vocab_size"),
            "d_model": check_positive_int(d_model, "d_model"),
            "num_layers": check_positive_int(num_layers, "num_layers"),
            "num_heads": check_positive_int(num_heads, "num_heads"),
            "d_ff": d_ff,
            "max_len": check_positive_int(max_len, "max_len"),
            "type_vocab_size": check_positive_int(type_vocab_size, "type_vocab_size"),
            "dropout": check_dropout(dropout),
            "pad_id": check_index(pad_id, "pad_id", vocab_size, "vocab_size"),
        }
        self.pad_id = pad_id
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.segment_embedding = nn.Embedding(type_vocab_size, d_model)
        self.embedding_norm = nn.LayerNorm(d_model, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout)
        # MLM head; its output matrix is token_embedding.weight (tied), only the bias is its own.
        self.mlm_dense = nn.Linear(d_model, d_model)
        self.mlm_norm = nn.LayerNorm(d_model, eps=1e-12)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab_size))
        # NSP head: BERT's "pooler" (dense + tanh on [CLS]) and a 2-way classifier.
        self.pooler = nn.Linear(d_model, d_model)
        self.nsp_classifier = nn.Linear(d_model, 2)
        self.apply(self._init_weights)

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
        check_token_ids(input_ids, "input_ids", "(batch, n)", self.config["vocab_size"])
        n = input_ids.shape[1]
        if n > self.config["max_len"]:
            raise ValueError(
                f"input_ids has n={n} positions but the model has only max_len="
                f"{self.config['max_len']} position embeddings"
            )
        if segment_ids is None:
            segment_ids = torch.zeros_like(input_ids)
        check_token_ids(segment_ids, "segment_ids", "(batch, n)", self.config["type_vocab_size"],
                        "type_vocab_size")  # fmt: skip
        if segment_ids.shape != input_ids.shape:
            raise ValueError(
                f"segment_ids must have the shape of input_ids {tuple(input_ids.shape)}, "
                f"got {tuple(segment_ids.shape)}"
            )
        if attention_mask is None:
            attention_mask = input_ids != self.pad_id
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.dtype != torch.bool:
            got = getattr(attention_mask, "dtype", type(attention_mask).__name__)
            raise TypeError(
                f"attention_mask must be a boolean torch.Tensor (batch, n), True = real token; got {got}"
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
        check_last_dim(hidden, "hidden", self.config["d_model"])
        h = self.mlm_norm(F.gelu(self.mlm_dense(hidden)))
        return h @ self.token_embedding.weight.T + self.mlm_bias

    def nsp_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Scores ``(batch, 2)`` for "B is random" (0) / "B follows A" (1), from the [CLS] vector."""
        check_features(hidden, "hidden", self.config["d_model"])
        return self.nsp_classifier(torch.tanh(self.pooler(hidden[:, 0])))

    @property
    def attn_weights(self) -> list[torch.Tensor | None]:
        """Each layer's attention weights ``(batch, heads, n, n)`` from the last call."""
        return self.encoder.attn_weights


_BATCH_KEYS = ("input_ids", "segment_ids", "attention_mask", "mlm_labels", "nsp_labels")


def _outputs(model: TinyBert, batch: dict):
    if not isinstance(model, TinyBert):
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


def pretraining_loss(
    model: TinyBert, batch: dict, return_parts: bool = False
) -> torch.Tensor | tuple[torch.Tensor, tuple[float, float]]:
    """BERT's pretraining loss on a batch from :class:`course_lib.data.pretraining.PretrainingData`.

    ``MLM loss`` (mean cross-entropy over picked positions) ``+ NSP loss`` (mean over pairs).
    With ``return_parts`` also returns ``(mlm_loss, nsp_loss)`` as floats.
    """
    mlm_logits, mlm_targets, nsp_logits = _outputs(model, batch)
    mlm = F.cross_entropy(mlm_logits, mlm_targets)
    nsp = F.cross_entropy(nsp_logits, batch["nsp_labels"])
    loss = mlm + nsp
    return (loss, (mlm.item(), nsp.item())) if return_parts else loss


@torch.no_grad()
def pretraining_accuracy(model: TinyBert, batches: Iterable[dict]) -> dict[str, float]:
    """MLM accuracy (over picked positions) and NSP accuracy of ``model`` on ``batches``."""
    if isinstance(batches, dict):
        raise TypeError(
            "batches must be an iterable of batch dicts, got one dict; wrap it in [batch]"
        )
    model.eval()
    mlm_right = mlm_total = nsp_right = nsp_total = 0
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
    heads = check_positive_int(num_attention_heads, "num_attention_heads")
    i = check_positive_int(intermediate_size, "intermediate_size")
    p = check_positive_int(max_position_embeddings, "max_position_embeddings")
    t = check_positive_int(type_vocab_size, "type_vocab_size")
    if h % heads:
        raise ValueError(
            f"hidden_size={h} is not divisible by num_attention_heads={heads} "
            "(BertConfig refuses this too)"
        )
    embeddings = (v + p + t) * h + 2 * h
    layer = 4 * h * h + 2 * h * i + 9 * h + i
    pooler = h * h + h
    return embeddings + n_layers * layer + pooler


# The lecture's tiny BERT: its size, and how tools/train_tiny_bert.py pretrains the checkpoint.
# Typed and commented in configs.py; these dict spellings are what lecture 08 prints.
TINY_BERT_CONFIG = TINY_BERT.as_dict()
TINY_BERT_TRAINING = TINY_BERT_PRETRAINING.as_dict()
CHECKPOINT = Path(__file__).resolve().parents[1] / "data" / "tiny_bert.pt"


def load_tiny_bert(path: str | Path | None = None) -> tuple[TinyBert, dict]:
    """The pretrained tiny BERT shipped with the course (``course_lib/data/tiny_bert.pt``).

    Loaded with ``weights_only=True`` (plain tensors and numbers, no pickled code). Returns the
    model in eval mode and the checkpoint's metadata (config, training settings, history of
    held-out accuracies). Reproduce it with ``python -m tools.train_tiny_bert``.
    """
    path = checkpoint_path(path, CHECKPOINT)
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    check_checkpoint(ckpt, ("vocab_size", "config", "state_dict"), path, "TinyBert")
    model = TinyBert(ckpt["vocab_size"], **ckpt["config"])
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    meta = {k: v for k, v in ckpt.items() if k != "state_dict"}
    return model, meta


def fill_in(
    model: TinyBert, tokenizer: BPETokenizer, text: str, word: str, top_k: int = 3
) -> tuple[str, list[tuple[str, float]]]:
    """Hide ``word`` in ``text`` behind ``[MASK]`` and ask ``model`` for it.

    ``tokenizer`` is the model's BPE tokenizer (e.g. ``pretraining_tokenizer()``); ``word`` must
    be a single token of it, preceded by a space in ``text`` (its first occurrence is masked).
    The model reads ``[CLS] text [SEP] [SEP]`` (segment B empty). Returns
    ``(masked_text, [(token, probability), ...])``, the ``top_k`` guesses most probable first.
    """
    if not isinstance(model, TinyBert):
        raise TypeError(f"model must be a TinyBert, got {type(model).__name__}")
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer, got {type(tokenizer).__name__}")
    text, word = check_str(text, "text"), check_str(word, "word")
    top_k = check_positive_int(top_k, "top_k")
    pieces = tokenizer.tokenize(text)
    if SPACE + word.lower() not in pieces:
        raise ValueError(
            f"word {word!r} must be one token of the tokenizer after a space in text; text "
            f"tokenizes as {pieces}"
        )
    i = pieces.index(SPACE + word.lower())
    ids = [tokenizer.vocab[p] for p in pieces]
    ids[i] = tokenizer.vocab["[MASK]"]
    cls, sep = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    input_ids = [cls, *ids, sep, sep]  # [CLS] A [SEP] B [SEP] with B empty
    segments = [0] * (len(ids) + 2) + [1]
    was_training = model.training
    model.eval()
    with torch.no_grad():
        hidden = model(torch.tensor([input_ids]), torch.tensor([segments]))  # (1, n, d)
        probs = model.mlm_logits(hidden[0, i + 1]).softmax(-1)  # +1: [CLS] comes first
    model.train(was_training)
    top = probs.topk(top_k)
    guesses = [(tokenizer.id_to_token[int(j)], float(q))
               for q, j in zip(top.values, top.indices, strict=True)]  # fmt: skip
    return text.replace(word, "[MASK]", 1), guesses
