"""The one copy loop, and torch's own transformer modules -> the course's :mod:`course_lib.nn`."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..nn import Decoder, DecoderLayer, Encoder, EncoderLayer, MultiHeadAttention

__all__ = ["copy_weights", "from_torch"]

# our module -> their module, or (their module, how to change each of its tensors)
Rule = str | tuple[str, Callable[[torch.Tensor], torch.Tensor]]


def copy_weights(model: nn.Module, state: dict, rules: dict[str, Rule]) -> nn.Module:
    """Copy ``state`` (their ``state_dict()``) into ``model``: each parameter ``<ours>.<leaf>``
    of ``model`` takes ``state["<theirs>.<leaf>"]`` (or ``<theirs>`` with ``{leaf}`` filled in,
    for torch's ``in_proj_{leaf}``), changed by the rule's function if it has one; a rule keyed by
    a full parameter or buffer name (``experts.0.gate.weight``) names their full key. Every parameter must be covered and every shape must fit; returns ``model``."""
    # a rule may also name one tensor: our full parameter (or buffer) name -> their full key
    tensors = [*model.named_parameters(), *((n, b) for n, b in model.named_buffers() if n in rules)]
    with torch.no_grad():
        for name, param in tensors:  # a tied weight is listed once
            ours, _, leaf = name.rpartition(".")
            rule = rules[name] if name in rules else rules[ours]
            theirs, change = (rule, None) if isinstance(rule, str) else rule
            key = (theirs.format(leaf=leaf) if "{leaf}" in theirs
                   else theirs if name in rules else f"{theirs}.{leaf}")  # fmt: skip
            if key not in state:
                raise ValueError(f"model: the weight {key!r} (for our {name!r}) is missing")
            value = state[key] if change is None else change(state[key])
            if value.shape != param.shape:
                raise ValueError(
                    f"model: {key!r} gives shape {tuple(value.shape)}, our {name!r} needs "
                    f"{tuple(param.shape)}"
                )
            param.copy_(value)
    return model


def _rows(i: int, d: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Block ``i`` of ``d`` rows: torch's ``in_proj_weight`` is ``[W_q; W_k; W_v]`` (3d, d)."""
    return lambda t: t[i * d : (i + 1) * d]


def _attention_rules(ours: str, theirs: str, d: int) -> dict[str, Rule]:
    rules: dict[str, Rule] = {f"{ours}w_o": f"{theirs}out_proj"}
    for i, w in enumerate(("w_q", "w_k", "w_v")):
        rules[f"{ours}{w}"] = (f"{theirs}in_proj_{{leaf}}", _rows(i, d))
    return rules


def _layer_rules(ours: str, theirs: str, d: int, decoder: bool) -> dict[str, Rule]:
    rules = _attention_rules(f"{ours}self_attn.", f"{theirs}self_attn.", d)
    if decoder:
        rules |= _attention_rules(f"{ours}cross_attn.", f"{theirs}multihead_attn.", d)
    rules |= {f"{ours}ffn.linear1": f"{theirs}linear1", f"{ours}ffn.linear2": f"{theirs}linear2"}
    for i in (1, 2, 3) if decoder else (1, 2):
        rules[f"{ours}norm{i}"] = f"{theirs}norm{i}"
    return rules


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


def _check_mha(module: nn.MultiheadAttention) -> None:
    if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
        raise ValueError(
            "module: only nn.MultiheadAttention with kdim = vdim = embed_dim, add_bias_kv=False "
            "and add_zero_attn=False can be copied"
        )


def _layer_settings(layer: nn.Module) -> tuple[tuple, dict]:
    """Our layer's arguments from a torch ``TransformerEncoderLayer``/``DecoderLayer``."""
    _check_mha(layer.self_attn)
    args = (layer.linear1.in_features, layer.self_attn.num_heads, layer.linear1.out_features,
            layer.dropout.p, bool(layer.norm_first))  # fmt: skip
    kwargs = {"bias": layer.linear1.bias is not None, "layer_norm_eps": layer.norm1.eps,
              "activation": _activation_name(layer.activation)}  # fmt: skip
    return args, kwargs


def from_torch(module: nn.Module) -> nn.Module:
    """A copy of one of torch's transformer modules as the course's class, same weights, dtype
    and device, in ``module``'s training mode.

    ``nn.MultiheadAttention`` -> :class:`MultiHeadAttention`; ``nn.TransformerEncoderLayer`` /
    ``DecoderLayer`` -> :class:`EncoderLayer` / :class:`DecoderLayer`; ``nn.TransformerEncoder``
    / ``Decoder`` -> :class:`Encoder` / :class:`Decoder` (with the final ``norm`` if it has one).

    Call the copy with **batch-first** tensors and masks with True = may attend: torch's
    ``key_padding_mask`` (True = padding) becomes ``~key_padding_mask[:, None, :]``. Compare a
    decoder with torch called with ``tgt_mask=nn.Transformer.generate_square_subsequent_mask(n)``;
    build a torch encoder with ``enable_nested_tensor=False`` (else its eval fast path returns
    zeros at padded positions).
    """
    if isinstance(module, nn.MultiheadAttention):
        _check_mha(module)
        d = module.embed_dim
        new = MultiHeadAttention(d, module.num_heads, bias=module.in_proj_bias is not None,
                                 dropout=module.dropout)  # fmt: skip
        rules = _attention_rules("", "", d)
    elif isinstance(module, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        decoder = isinstance(module, nn.TransformerDecoderLayer)
        args, kwargs = _layer_settings(module)
        new = (DecoderLayer if decoder else EncoderLayer)(*args, **kwargs)
        rules = _layer_rules("", "", args[0], decoder)
    elif isinstance(module, (nn.TransformerEncoder, nn.TransformerDecoder)):
        decoder = isinstance(module, nn.TransformerDecoder)
        first = module.layers[0]
        args, kwargs = _layer_settings(first)
        final = module.norm
        stack = Decoder if decoder else Encoder
        new = stack(len(module.layers), *args, final_norm=final is not None, **kwargs)
        if final is not None:
            new.norm.eps = final.eps  # the final norm may have its own epsilon
        rules = {"norm": "norm"}
        for i in range(len(module.layers)):
            rules |= _layer_rules(f"layers.{i}.", f"layers.{i}.", args[0], decoder)
    else:
        raise TypeError(
            "module must be a torch.nn.MultiheadAttention, TransformerEncoderLayer, "
            "TransformerDecoderLayer, TransformerEncoder or TransformerDecoder, got "
            f"{type(module).__name__}"
        )
    ref = next(module.parameters())
    new = new.to(dtype=ref.dtype, device=ref.device)
    return copy_weights(new, module.state_dict(), rules).train(module.training)
