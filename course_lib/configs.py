"""Every model's configuration, and the shipped constants, in one place (as nanoGPT's
``GPTConfig``): a model is built from its config, ``GPT(config)``, ``ModernLM(config)``,
``TinyBert(config)``, ``BertEncoder(config)``.

Configs are frozen dataclasses, one commented field each, checked once in ``__post_init__``;
change one with ``dataclasses.replace(config, num_kv_heads=1)``. The shipped constants follow
one pattern: ``TINY_<MODEL>_CONFIG`` (the model) and ``TINY_<MODEL>_TRAINING`` (how
``tools/train_<model>.py`` trained the checkpoint in ``course_lib/data/``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validation import (
    check_dropout,
    check_flag,
    check_heads,
    check_positive_int,
    check_positive_number,
)
from .nn.feedforward import check_activation

__all__ = [
    "GPTConfig",
    "ModernConfig",
    "TinyBertConfig",
    "BertEncoderConfig",
    "TrainingConfig",
    "TINY_GPT_CONFIG",
    "TINY_GPT_TRAINING",
    "TINY_BERT_CONFIG",
    "TINY_BERT_TRAINING",
]


def _positive(config, *names: str) -> None:
    for name in names:
        check_positive_int(getattr(config, name), name)


@dataclass(frozen=True)
class GPTConfig:
    """The size and settings of a :class:`~course_lib.GPT` (lecture 11)."""

    vocab_size: int  # number of token ids
    context_length: int  # the number of learned position embeddings (GPT-2: 1024, n_positions)
    d_model: int = 128  # width of every token vector (GPT-2 small: 768)
    num_heads: int = 4  # attention heads per layer; must divide d_model (GPT-2 small: 12)
    num_layers: int = 4  # number of blocks (GPT-2 small: 12)
    d_ff: int | None = None  # hidden width of the feed-forward block; None = 4 * d_model
    dropout: float = 0.0  # on embeddings, attention weights and both residual branches
    activation: str = "gelu_new"  # feed-forward non-linearity: "gelu_new", "gelu" or "relu"
    tie_weights: bool = True  # LM head = token embedding matrix (GPT-2 does this)
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm (GPT-2: 1e-5)

    def __post_init__(self):
        _positive(self, "vocab_size", "context_length", "num_layers")
        check_heads(self.d_model, self.num_heads)
        if self.d_ff is not None:
            check_positive_int(self.d_ff, "d_ff")
        check_activation(self.activation)
        check_dropout(self.dropout)
        check_flag(self.tie_weights, "tie_weights")
        check_positive_number(self.layer_norm_eps, "layer_norm_eps")


@dataclass(frozen=True)
class ModernConfig:
    """The size and settings of a :class:`~course_lib.ModernLM` (lecture 13, Llama-style)."""

    vocab_size: int  # number of token ids
    d_model: int  # width of every token vector (Llama 2 7B: 4096)
    num_heads: int  # query heads per layer; must divide d_model (Llama 2 7B: 32)
    num_kv_heads: int  # key/value heads; must divide num_heads (= num_heads: MHA, 1: MQA)
    num_layers: int  # number of blocks (Llama 2 7B: 32)
    d_ff: int  # hidden width of the SwiGLU feed-forward (Llama 2 7B: 11008)
    rope_theta: float = 10000.0  # RoPE base (Llama 2: 10,000; Llama 3: 500,000)
    rms_eps: float = 1e-6  # epsilon of every RMSNorm (Llama 2: 1e-5 in its config)
    tie_weights: bool = False  # LM head = token embedding matrix (Llama: no; small models: often)
    context_length: int = 4096  # the longest window generate() shows the model; RoPE has no limit

    def __post_init__(self):
        _positive(self, "vocab_size", "num_kv_heads", "num_layers", "d_ff", "context_length")
        check_heads(self.d_model, self.num_heads, self.num_kv_heads)
        if (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model / num_heads = {self.d_model // self.num_heads} must be even: RoPE "
                "rotates the coordinates of each head in pairs"
            )
        if check_positive_number(self.rope_theta, "rope_theta") <= 1:
            raise ValueError(f"rope_theta must be a finite number > 1, got {self.rope_theta!r}")
        check_positive_number(self.rms_eps, "rms_eps")
        check_flag(self.tie_weights, "tie_weights")


@dataclass(frozen=True)
class TinyBertConfig:
    """The size of lecture 08's :class:`~course_lib.TinyBert`."""

    vocab_size: int = 2000  # number of token ids (the WordPiece vocabulary of lecture 08)
    d_model: int = 64  # width of every token vector (BERT-Base: 768)
    num_layers: int = 2  # encoder layers in the stack (BERT-Base: 12)
    num_heads: int = 4  # attention heads per layer; must divide d_model
    d_ff: int = 256  # hidden width of the feed-forward network, 4 * d_model
    context_length: int = (
        64  # the number of learned position embeddings (HF: max_position_embeddings)
    )
    type_vocab_size: int = 2  # segment embeddings: sentence A and sentence B (for NSP)
    dropout: float = 0.0  # dropout probability; 0 keeps the short lecture run deterministic
    pad_id: int = 0  # id of [PAD]: attention ignores it when no attention_mask is given

    def __post_init__(self):
        _positive(self, "vocab_size", "num_layers", "d_ff", "context_length", "type_vocab_size")
        check_heads(self.d_model, self.num_heads)
        check_dropout(self.dropout)
        if check_positive_int(self.pad_id, "pad_id", allow_zero=True) >= self.vocab_size:
            raise ValueError(
                f"pad_id must be in [0, vocab_size={self.vocab_size}), got {self.pad_id}"
            )


@dataclass(frozen=True)
class BertEncoderConfig:
    """The numbers that define a BERT encoder that runs real weights (lectures 08, 09, 12).

    Field names as in ``transformers.BertConfig`` on purpose: :func:`course_lib.interop.from_hf`
    copies them across one for one, and a student reads the same names on the Hub.
    """

    vocab_size: int = 30522  # number of WordPiece tokens
    hidden_size: int = 384  # H, the width of every token vector
    num_hidden_layers: int = 6  # L, encoder layers in series
    num_attention_heads: int = 12  # heads per layer; must divide H
    intermediate_size: int = 1536  # width of the feed-forward block's hidden layer (4 H)
    hidden_act: str = "gelu"  # feed-forward activation: "gelu" (exact, erf), "gelu_new", "relu"
    max_position_embeddings: int = 512  # longest input (learned position table)
    type_vocab_size: int = 2  # segments: sentence A and sentence B
    layer_norm_eps: float = 1e-12  # epsilon of every LayerNorm (BERT: 1e-12, torch: 1e-5)
    hidden_dropout_prob: float = 0.1  # dropout in training mode (embeddings, layers)
    pad_token_id: int = 0  # id of [PAD]

    def __post_init__(self):
        _positive(self, "vocab_size", "num_hidden_layers", "intermediate_size",
                  "max_position_embeddings", "type_vocab_size")  # fmt: skip
        check_heads(self.hidden_size, self.num_attention_heads,
                    names=("hidden_size", "num_attention_heads"))  # fmt: skip
        check_activation(self.hidden_act, "hidden_act")
        check_dropout(self.hidden_dropout_prob, "hidden_dropout_prob")
        check_positive_number(self.layer_norm_eps, "layer_norm_eps")


@dataclass(frozen=True)
class TrainingConfig:
    """How a ``tools/train_*.py`` script trains a shipped checkpoint (fixed seed and steps, so
    the checkpoint is reproducible)."""

    seed: int = 0  # seeds the data order, the masking and the initial weights
    steps: int = 4000  # optimizer steps
    batch_size: int = 32  # sequences (or sentence pairs) per step
    lr: float = 2e-3  # peak learning rate of AdamW, reached after the warm-up
    warmup: int = 200  # steps of linear warm-up
    schedule: str = "linear"  # after the warm-up: "constant", or "linear"/"cosine" decay to 0
    weight_decay: float = 0.0  # AdamW's decoupled weight decay
    eval_every: int = 500  # steps between two held-out evaluations

    def __post_init__(self):
        _positive(self, "steps", "batch_size", "eval_every")
        check_positive_int(self.seed, "seed", allow_zero=True)
        check_positive_number(self.lr, "lr")
        if check_positive_int(self.warmup, "warmup", allow_zero=True) > self.steps:
            raise ValueError(f"warmup must be <= steps={self.steps}, got {self.warmup}")
        if self.schedule not in ("constant", "linear", "cosine"):
            raise ValueError(
                f"schedule must be 'constant', 'linear' or 'cosine', got {self.schedule!r}"
            )
        if not 0 <= self.weight_decay < float("inf"):
            raise ValueError(
                f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}"
            )


# The lecture's tiny GPT and how tools/training/train_gpt.py trained course_lib/data/tiny_gpt.pt.
TINY_GPT_CONFIG = GPTConfig(
    vocab_size=512,  # byte-level BPE learned by course_lib.data.language_modeling.lm_tokenizer
    context_length=128,  # context of 128 tokens (~280 characters)
    d_model=128,
    num_heads=4,
    num_layers=4,
    dropout=0.2,  # the corpus is small (~160k training tokens): regularise
)
TINY_GPT_TRAINING = TrainingConfig(
    seed=0, steps=4000, batch_size=16,  # windows of context_length + 1 tokens
    lr=2e-3, warmup=100, schedule="cosine", weight_decay=0.1,
    eval_every=150,  # validation loss (every 10th training document); the best step is kept
)  # fmt: skip

# Lecture 08's tiny BERT and how tools/training/train_tiny_bert.py pretrained course_lib/data/tiny_bert.pt
# (MLM + NSP; its WordPiece vocabulary of TINY_BERT_CONFIG.vocab_size tokens is learned first).
TINY_BERT_CONFIG = TinyBertConfig()
TINY_BERT_TRAINING = TrainingConfig(seed=0, steps=4000, batch_size=32, lr=2e-3, warmup=200)


# Renamed fields, as checkpoints shipped before the renames store them: old name -> name today.
# ``max_len`` meant the context length in a model's config and the tokenizer's truncation length
# in the fine-tuning metadata; each has its own name now.
_RENAMED_IN_CONFIG = {"max_len": "context_length"}
_RENAMED_IN_META = {"max_len": "max_length"}


def current_names(ckpt):
    """A loaded checkpoint with today's names: ``ckpt["config"]`` fields and the fine-tuning
    metadata at the top level and under ``"training"``. Anything that is not a dict is returned
    as it is (the loader's own check then says what is wrong with it)."""
    if not isinstance(ckpt, dict):
        return ckpt

    def rename(d, table):
        return {table.get(k, k): v for k, v in d.items()} if isinstance(d, dict) else d

    out = rename(ckpt, _RENAMED_IN_META)
    for key, table in (("config", _RENAMED_IN_CONFIG), ("training", _RENAMED_IN_META)):
        if key in out:
            out[key] = rename(out[key], table)
    return out
