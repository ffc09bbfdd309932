"""Typed configurations of the course's trained models, one commented field each (as nanoGPT's
``GPTConfig``). The dict spellings ``TINY_BERT_CONFIG`` / ``TINY_BERT_TRAINING`` that lecture 08
and ``tools/train_tiny_bert.py`` use are derived from them, so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .._validation import check_dropout, check_heads, check_positive_int, check_positive_number

__all__ = ["TinyBertConfig", "TinyBertTraining", "TINY_BERT", "TINY_BERT_PRETRAINING"]


@dataclass(frozen=True)
class TinyBertConfig:
    """The size of lecture 08's tiny BERT: the keyword arguments of ``TinyBert`` after vocab_size."""

    d_model: int = 64  # width of every token vector (BERT-Base: 768)
    num_layers: int = 2  # encoder layers in the stack (BERT-Base: 12)
    num_heads: int = 4  # attention heads per layer; must divide d_model
    d_ff: int = 256  # hidden width of the feed-forward network, 4 * d_model
    max_len: int = 64  # longest input in tokens: the number of learned positions
    type_vocab_size: int = 2  # segment embeddings: sentence A and sentence B (for NSP)
    dropout: float = 0.0  # dropout probability; 0 keeps the short lecture run deterministic
    pad_id: int = 0  # id of [PAD]: its embedding gets no gradient and attention ignores it

    def __post_init__(self):
        for name in ("num_layers", "d_ff", "max_len", "type_vocab_size"):
            check_positive_int(getattr(self, name), name)
        check_heads(self.d_model, self.num_heads)
        check_dropout(self.dropout)
        check_positive_int(self.pad_id, "pad_id", allow_zero=True)

    def as_dict(self) -> dict:
        """The fields as a dict, in declaration order (``TinyBert(vocab, **cfg.as_dict())``)."""
        return asdict(self)


@dataclass(frozen=True)
class TinyBertTraining:
    """How ``tools/train_tiny_bert.py`` pretrains the shipped checkpoint (MLM + NSP)."""

    seed: int = 0  # seeds the data order, the masking and the initial weights
    steps: int = 4000  # optimizer steps (fixed, so the checkpoint is reproducible)
    batch_size: int = 32  # sentence pairs per step
    lr: float = 2e-3  # peak learning rate of AdamW, reached after the warm-up
    warmup: int = 200  # steps of linear warm-up, then linear decay to 0
    tokenizer_vocab_size: int = 2000  # WordPiece vocabulary learned from the corpus

    def __post_init__(self):
        for name in ("steps", "batch_size", "tokenizer_vocab_size"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.seed, "seed", allow_zero=True)
        check_positive_number(self.lr, "lr")
        if check_positive_int(self.warmup, "warmup", allow_zero=True) > self.steps:
            raise ValueError(f"warmup must be <= steps={self.steps}, got {self.warmup}")

    def as_dict(self) -> dict:
        """The fields as a dict, in declaration order."""
        return asdict(self)


TINY_BERT = TinyBertConfig()
TINY_BERT_PRETRAINING = TinyBertTraining()
