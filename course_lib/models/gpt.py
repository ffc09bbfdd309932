"""GPT: a decoder-only language model with GPT-2's architecture, built from course layers.

Architecture (Radford et al., 2019; nanoGPT's layout)::

    ids (batch, n)
      -> token embedding + learned position embedding -> dropout
      -> num_layers pre-LN blocks:
             x = x + dropout(attn(LN(x)))      causal self-attention (course_lib.causal_attention)
             x = x + dropout(ffn(LN(x)))       d -> 4d -> d with GELU ("gelu_new" = tanh form)
      -> final LayerNorm
      -> LM head: scores against the token embedding matrix (tied weights) -> (batch, n, vocab)

It is trained to predict token ``t + 1`` from tokens ``0..t`` (:func:`lm_loss`: the targets are
the inputs shifted by one). :meth:`GPT.from_hf` copies the weights of a
``transformers.GPT2LMHeadModel``; the tests hold the copy to its logits to 1e-5.

``forward(ids, cache=None)`` always returns the logits; a :class:`~course_lib.KVCache` passed in
is extended in place, and the ids are then placed after the positions it already holds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._optional import require
from .._validation import (
    check_checkpoint,
    check_dropout,
    check_module,
    check_positive_int,
    check_positive_number,
    check_token_ids,
    checkpoint_path,
)
from ..causal_attention import CausalSelfAttention, KVCache, LayerKVCache
from ..layers import FeedForward, residual
from ..layers.feedforward import ACTIVATIONS

__all__ = [
    "GPTConfig",
    "GPT",
    "lm_loss",
    "gpt_parameter_count",
    "TINY_GPT_CONFIG",
    "TINY_GPT_TRAINING",
    "load_tiny_gpt",
]


@dataclass
class GPTConfig:
    """The size and settings of a :class:`GPT` (as nanoGPT's ``GPTConfig``)."""

    vocab_size: int  # number of token ids
    max_len: int  # context length: the number of learned position embeddings
    d_model: int = 128  # width of every token vector (GPT-2 small: 768)
    num_heads: int = 4  # attention heads per layer; must divide d_model (GPT-2 small: 12)
    num_layers: int = 4  # number of blocks (GPT-2 small: 12)
    d_ff: int | None = None  # hidden width of the feed-forward block; None = 4 * d_model
    dropout: float = 0.0  # on embeddings, attention weights and both residual branches
    activation: str = "gelu_new"  # feed-forward non-linearity: "gelu_new", "gelu" or "relu"
    tie_weights: bool = True  # LM head = token embedding matrix (GPT-2 does this)
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm (GPT-2: 1e-5)

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "num_heads", "num_layers"):
            check_positive_int(getattr(self, name), name)
        if self.d_ff is not None:
            check_positive_int(self.d_ff, "d_ff")
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        check_dropout(self.dropout)
        check_positive_number(self.layer_norm_eps, "layer_norm_eps")


class GPTBlock(nn.Module):
    """One pre-LN decoder block (no cross-attention), with the course's ``residual`` wrapper::

    x = x + dropout(attn(norm1(x), cache))
    x = x + dropout(ffn(norm2(x)))         ffn: d -> d_ff -> d, no dropout inside (GPT-2)
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        d = config.d_model
        self.norm1 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.attn = CausalSelfAttention(d, config.num_heads, dropout=config.dropout)
        self.norm2 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.ffn = FeedForward(d, config.d_ff or 4 * d, activation=config.activation)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        x = residual(x, lambda h: self.attn(h, cache), self.norm1, self.dropout, norm_first=True)
        return residual(x, self.ffn, self.norm2, self.dropout, norm_first=True)


class GPT(nn.Module):
    """A GPT-2-style causal language model.

    Args: the fields of :class:`GPTConfig` (``vocab_size``, ``max_len``, ``d_model``,
    ``num_heads``, ``num_layers``, ``d_ff``, ``dropout``, ``activation``, ``tie_weights``,
    ``layer_norm_eps``); ``GPT.from_config(config)`` builds one from a config.

    Shapes: ``forward(ids (batch, n), cache=None) -> logits (batch, n, vocab)``.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        d_model: int = 128,
        num_heads: int = 4,
        num_layers: int = 4,
        d_ff: int | None = None,
        dropout: float = 0.0,
        activation: str = "gelu_new",
        tie_weights: bool = True,
        *,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.config = GPTConfig(vocab_size, max_len, d_model, num_heads, num_layers, d_ff,
                                dropout, activation, bool(tie_weights), layer_norm_eps)  # fmt: skip
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(GPTBlock(self.config) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.lm_head.weight = self.token_embedding.weight
        self._init_weights(num_layers)

    @classmethod
    def from_config(cls, config: GPTConfig) -> GPT:
        """A new model with ``config``'s settings (random weights)."""
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        fields = asdict(config)
        eps = fields.pop("layer_norm_eps")
        return cls(**fields, layer_norm_eps=eps)

    def _init_weights(self, num_layers: int) -> None:
        # GPT-2's initialisation: N(0, 0.02), zero biases, and the two projections that feed
        # the residual stream scaled by 1/sqrt(2 * layers) (so its variance does not grow).
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in self.blocks:
            for lin in (block.attn.w_o, block.ffn.linear2):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * num_layers))

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, n, vocab)`` for ids ``(batch, n)``.

        Position ``t`` of the output scores the token that follows ``ids[:, t]``. With a
        :class:`KVCache` holding ``s`` positions, ``ids`` are positions ``s .. s + n - 1`` and
        the cache is extended in place.
        """
        check_token_ids(ids, "ids", "(batch, n)", self.config.vocab_size)
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        start = 0 if cache is None else len(cache)
        n = ids.shape[1]
        if start + n > self.max_len:
            raise ValueError(
                f"ids: positions {start}..{start + n - 1} do not fit the context max_len="
                f"{self.max_len} (the model has {self.max_len} position embeddings)"
            )
        positions = torch.arange(start, start + n, device=ids.device)
        x = self.dropout(self.token_embedding(ids) + self.position_embedding(positions))
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache.layer(i))
        return self.lm_head(self.norm(x))  # (B, n, vocab)

    @classmethod
    def from_hf(cls, model) -> GPT:
        """Copy a ``transformers.GPT2LMHeadModel`` (or ``GPT2Model``, untied head) into a GPT.

        GPT-2 stores its linear maps as ``Conv1D`` with weight ``(in, out)`` applied as
        ``x @ W + b``: ``nn.Linear`` keeps ``(out, in)``, so each weight is transposed.
        ``c_attn`` holds the query, key and value maps side by side (``(d, 3d)``).
        Dropout is copied from the config; compare outputs in eval mode.
        """
        transformers = require("transformers", "GPT.from_hf")
        GPT2LMHeadModel, GPT2Model = transformers.GPT2LMHeadModel, transformers.GPT2Model
        if not isinstance(model, (GPT2LMHeadModel, GPT2Model)):
            raise TypeError(
                f"model must be a transformers GPT2LMHeadModel, got {type(model).__name__}"
            )
        c = model.config
        unsupported = {
            "scale_attn_weights": (c.scale_attn_weights, True),
            "scale_attn_by_inverse_layer_idx": (c.scale_attn_by_inverse_layer_idx, False),
            "reorder_and_upcast_attn": (c.reorder_and_upcast_attn, False),
        }
        for name, (got, needed) in unsupported.items():
            if got != needed:
                raise ValueError(f"config.{name}={got} is not supported (GPT-2 uses {needed})")
        if c.activation_function not in ACTIVATIONS:
            raise ValueError(
                f"config.activation_function={c.activation_function!r} is not supported; "
                f"expected one of {sorted(ACTIVATIONS)}"
            )
        if not (c.resid_pdrop == c.embd_pdrop == c.attn_pdrop):
            raise ValueError(
                "GPT uses one dropout rate; the config has resid_pdrop="
                f"{c.resid_pdrop}, embd_pdrop={c.embd_pdrop}, attn_pdrop={c.attn_pdrop}"
            )
        body = model.transformer if isinstance(model, GPT2LMHeadModel) else model
        has_head = isinstance(model, GPT2LMHeadModel)
        tied = not has_head or model.lm_head.weight.data_ptr() == body.wte.weight.data_ptr()
        new = cls(c.vocab_size, c.n_positions, c.n_embd, c.n_head, c.n_layer, c.n_inner,
                  c.resid_pdrop, c.activation_function, tied,
                  layer_norm_eps=c.layer_norm_epsilon)  # fmt: skip
        new = new.to(dtype=body.wte.weight.dtype)
        d = c.n_embd

        def linear(dst: nn.Linear, weight: torch.Tensor, bias: torch.Tensor) -> None:
            dst.weight.copy_(weight.T)  # Conv1D (in, out) -> Linear (out, in)
            dst.bias.copy_(bias)

        def norm(dst: nn.LayerNorm, src: nn.LayerNorm) -> None:
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)

        with torch.no_grad():
            new.token_embedding.weight.copy_(body.wte.weight)
            new.position_embedding.weight.copy_(body.wpe.weight)
            for ours, theirs in zip(new.blocks, body.h, strict=True):
                norm(ours.norm1, theirs.ln_1)
                norm(ours.norm2, theirs.ln_2)
                w, b = theirs.attn.c_attn.weight, theirs.attn.c_attn.bias  # (d, 3d), (3d,)
                for i, lin in enumerate((ours.attn.w_q, ours.attn.w_k, ours.attn.w_v)):
                    linear(lin, w[:, i * d : (i + 1) * d], b[i * d : (i + 1) * d])
                linear(ours.attn.w_o, theirs.attn.c_proj.weight, theirs.attn.c_proj.bias)
                linear(ours.ffn.linear1, theirs.mlp.c_fc.weight, theirs.mlp.c_fc.bias)
                linear(ours.ffn.linear2, theirs.mlp.c_proj.weight, theirs.mlp.c_proj.bias)
            norm(new.norm, body.ln_f)
            if not tied:
                new.lm_head.weight.copy_(model.lm_head.weight)
        return new.eval()


def lm_loss(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The causal language-modelling loss: mean cross-entropy (nats/token) of predicting
    ``ids[:, t + 1]`` from ``ids[:, :t + 1]``.

    The model reads ``ids[:, :-1]``; the targets are ``ids[:, 1:]``, the inputs shifted by one.
    ``ids``: ``(batch, n + 1)`` long.
    """
    check_module(model)
    if check_token_ids(ids, "ids", "(batch, n + 1)").shape[1] < 2:
        raise ValueError(f"ids must be (batch, n + 1) with n >= 1, got {tuple(ids.shape)}")
    logits = model(ids[:, :-1])  # (B, n, vocab)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def gpt_parameter_count(
    vocab_size: int = 50257,
    max_len: int = 1024,
    d_model: int = 768,
    num_layers: int = 12,
    d_ff: int | None = None,
    tie_weights: bool = True,
) -> int:
    """Parameters of :class:`GPT` (and of ``GPT2LMHeadModel``), by formula.

    With V, P the vocabulary and context sizes, D = d_model, F = d_ff (default 4D), L layers:
    embeddings ``(V + P) D``; each block: attention ``4 D^2 + 4 D``, FFN ``2 D F + F + D``, two
    LayerNorms ``4 D``; final LayerNorm ``2 D``; an untied head adds ``V D``. GPT-2 small gives
    124,439,808 ("124M").
    """
    v = check_positive_int(vocab_size, "vocab_size")
    p = check_positive_int(max_len, "max_len")
    d = check_positive_int(d_model, "d_model")
    n_layers = check_positive_int(num_layers, "num_layers")
    f = 4 * d if d_ff is None else check_positive_int(d_ff, "d_ff")
    block = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    return (v + p) * d + n_layers * block + 2 * d + (0 if tie_weights else v * d)


# The lecture's tiny GPT and how tools/train_gpt.py trains the shipped checkpoint.
TINY_GPT_CONFIG = GPTConfig(
    vocab_size=512,  # byte-level BPE learned by course_lib.data.language_modeling.lm_tokenizer
    max_len=128,  # context of 128 tokens (~280 characters)
    d_model=128,
    num_heads=4,
    num_layers=4,
    dropout=0.2,  # the corpus is small (~160k training tokens): regularise
)
TINY_GPT_TRAINING = {
    "seed": 0,
    "steps": 4000,
    "batch_size": 16,  # windows of max_len + 1 tokens
    "lr": 2e-3,
    "warmup": 100,
    "schedule": "cosine",
    "weight_decay": 0.1,
    "eval_every": 150,  # validation loss (every 10th training document); the best step is kept
}
GPT_CHECKPOINT = Path(__file__).resolve().parents[1] / "data" / "tiny_gpt.pt"


def load_tiny_gpt(path: str | Path | None = None) -> tuple[GPT, dict]:
    """The tiny GPT shipped with the course (``course_lib/data/tiny_gpt.pt``, float16 weights).

    Loaded with ``weights_only=True`` (plain tensors and numbers, no pickled code) into a float32
    model in eval mode. Returns the model and the checkpoint's metadata (config, training
    settings, validation history). Reproduce it with ``python -m tools.train_gpt``.
    """
    path = checkpoint_path(path, GPT_CHECKPOINT)
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    check_checkpoint(ckpt, ("config", "state_dict"), path, "GPT", GPTConfig.__dataclass_fields__)
    model = GPT.from_config(GPTConfig(**ckpt["config"]))
    state = {k: v.float() for k, v in ckpt["state_dict"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or missing not in ([], ["lm_head.weight"]):
        raise ValueError(f"checkpoint does not fit GPT: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model, {k: v for k, v in ckpt.items() if k != "state_dict"}
