"""Adapters that copy torch's own modules into the course's, so tests can hold each course
class against torch to 1e-6.

torch's boolean masks mean the opposite (True = masked out): give the copies ``~mask``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .blocks import DecoderLayer, EncoderLayer
from .stacks import Decoder, Encoder

__all__ = [
    "mha_from_torch",
    "encoder_layer_from_torch",
    "decoder_layer_from_torch",
    "stack_from_torch",
]


def _copy(dst: nn.Module, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    """Copy ``weight`` and (if not None) ``bias`` into a Linear or LayerNorm."""
    with torch.no_grad():
        dst.weight.copy_(weight)
        if bias is not None:
            dst.bias.copy_(bias)


def _copy_module(dst: nn.Module, src: nn.Module) -> None:
    _copy(dst, src.weight, src.bias)


def _expect(module, kind: type) -> None:
    if not isinstance(module, kind):
        raise TypeError(f"module must be a torch.nn.{kind.__name__}, got {type(module).__name__}")


def _activation_name(act) -> str:
    """torch's layer stores its activation as a function or a module; return our name for it."""
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
        return "gelu"
    if isinstance(act, nn.GELU) and act.approximate == "tanh":
        return "gelu_new"
    raise ValueError(
        f"module.activation: only relu, gelu and tanh-approximated gelu can be copied, got {act!r}"
    )


def mha_from_torch(module: nn.MultiheadAttention) -> MultiHeadAttention:
    """Copy the weights of a ``torch.nn.MultiheadAttention`` into a new instance.

    torch stacks the three input projections as ``in_proj_weight = [W_q; W_k; W_v]``
    ``(3 d_model, d_model)``, applied as ``x @ W.T + b`` — exactly ``nn.Linear``'s layout.
    The copy computes the same function; call it with **batch-first** tensors, and give
    it masks with True = may attend, i.e. ``~key_padding_mask`` of torch.
    """
    _expect(module, nn.MultiheadAttention)
    if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
        raise ValueError(
            "module: only nn.MultiheadAttention with kdim = vdim = embed_dim, add_bias_kv=False "
            "and add_zero_attn=False can be copied"
        )
    bias = module.in_proj_bias is not None
    ref = module.in_proj_weight
    new = MultiHeadAttention(module.embed_dim, module.num_heads, bias=bias, dropout=module.dropout)
    new = new.to(dtype=ref.dtype, device=ref.device)
    weights = ref.chunk(3, dim=0)
    biases = module.in_proj_bias.chunk(3) if bias else (None, None, None)
    for lin, w, b in zip((new.w_q, new.w_k, new.w_v), weights, biases, strict=True):
        _copy(lin, w, b)
    _copy_module(new.w_o, module.out_proj)
    return new


def _layer_from_torch(cls: type, module: nn.Module, kind: type) -> nn.Module:
    """The part both layer adapters share: settings, self-attention, FFN and LayerNorms."""
    _expect(module, kind)
    ref = module.linear1.weight
    new = cls(
        module.linear1.in_features,
        module.self_attn.num_heads,
        module.linear1.out_features,
        module.dropout.p,
        bool(module.norm_first),
        bias=module.linear1.bias is not None,
        layer_norm_eps=module.norm1.eps,
        activation=_activation_name(module.activation),
    )
    new = new.to(dtype=ref.dtype, device=ref.device)
    new.self_attn = mha_from_torch(module.self_attn)
    _copy_module(new.ffn.linear1, module.linear1)
    _copy_module(new.ffn.linear2, module.linear2)
    for i in (1, 2, 3) if kind is nn.TransformerDecoderLayer else (1, 2):
        _copy_module(getattr(new, f"norm{i}"), getattr(module, f"norm{i}"))
    return new


def encoder_layer_from_torch(module: nn.TransformerEncoderLayer) -> EncoderLayer:
    """Copy a ``torch.nn.TransformerEncoderLayer`` (relu, gelu or tanh-gelu) into a new
    :class:`EncoderLayer`.

    Call the copy with batch-first input; torch's ``src_key_padding_mask`` (True =
    padding) becomes ``mask = ~src_key_padding_mask[:, None, :]`` here.
    """
    return _layer_from_torch(EncoderLayer, module, nn.TransformerEncoderLayer)


def decoder_layer_from_torch(module: nn.TransformerDecoderLayer) -> DecoderLayer:
    """Copy a ``torch.nn.TransformerDecoderLayer`` into a new :class:`DecoderLayer`.

    torch calls the cross-attention ``multihead_attn``. Compare with torch called with
    ``tgt_mask=nn.Transformer.generate_square_subsequent_mask(n)`` (or ``tgt_is_causal``);
    torch's key padding masks (True = padding) become ``~mask[:, None, :]`` here.
    """
    new = _layer_from_torch(DecoderLayer, module, nn.TransformerDecoderLayer)
    new.cross_attn = mha_from_torch(module.multihead_attn)
    return new


def stack_from_torch(cls: type, module: nn.Module) -> nn.Module:
    """Copy a ``torch.nn.TransformerEncoder``/``TransformerDecoder`` (its layers and optional
    final ``norm``) into ``cls`` (:class:`Encoder` or :class:`Decoder`).

    Build a torch encoder with ``enable_nested_tensor=False`` when comparing: otherwise
    torch's fast path returns zeros at padded positions in eval mode under no_grad.
    """
    kinds = {Encoder: nn.TransformerEncoder, Decoder: nn.TransformerDecoder}
    if cls not in kinds:
        got = cls.__name__ if isinstance(cls, type) else type(cls).__name__
        raise TypeError(f"cls must be course_lib.Encoder or course_lib.Decoder, got {got}")
    kind = kinds[cls]
    _expect(module, kind)
    layers = [cls.layer_class.from_torch(layer) for layer in module.layers]
    first = layers[0]
    new = cls(len(layers), first.d_model, first.num_heads, first.d_ff,
              final_norm=module.norm is not None, activation=first.activation)  # fmt: skip
    new.layers = nn.ModuleList(layers)
    if module.norm is not None:
        norm = nn.LayerNorm(first.d_model, eps=module.norm.eps, bias=module.norm.bias is not None)
        new.norm = norm.to(dtype=module.norm.weight.dtype)
        _copy_module(new.norm, module.norm)
    return new
