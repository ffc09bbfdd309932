"""Quantised models: an int8 linear layer, and a whole model's weights stored in a format.

:class:`Int8Linear` stores ``nn.Linear``'s weight as int8 plus one float32 scale per output
channel (:func:`~course_lib.int8_quantize`) and de-quantises it on the fly: what torchao's
``Int8WeightOnlyConfig`` computes (the tests hold the outputs equal to 1e-6).

:func:`quantize_weights` gives a copy of a model whose matrices (every ``nn.Linear`` and, unless
told otherwise, ``nn.Embedding`` weight) were rounded through a format and back: the numbers a
weight-only kernel computes with, so its loss is the quantised model's loss. (The copy keeps
them in float32: it measures the **quality** of a format; :func:`weight_bytes` counts what the
format stores.) Biases and norms stay float32, as in GGUF files.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    as_finite_array,
    check_choice,
    check_flag,
    check_last_dim,
    check_module,
    check_type,
)
from .int8 import int8_dequantize, int8_quantize
from .nf4 import nf4_dequantize, nf4_quantize
from .quantization import BLOCK_BYTES, BLOCK_SIZE, dequantize, quantize

__all__ = ["Int8Linear", "FORMATS", "roundtrip", "quantize_weights", "weight_bytes"]

#: the weight formats :func:`quantize_weights` knows: name -> what one stores
FORMATS = {
    "fp32": "float32, 4 bytes a weight",
    "int8": "int8 + one float32 scale per output channel (row)",
    "int8_per_tensor": "int8 + one float32 scale per matrix",
    "Q8_0": "llama.cpp: blocks of 32 int8 + a float16 scale (8.5 bits)",
    "Q4_0": "llama.cpp: blocks of 32 4-bit + a float16 scale (4.5 bits)",
    "Q4_1": "llama.cpp: blocks of 32 4-bit + float16 scale and minimum (5 bits)",
    "NF4": "QLoRA: blocks of 64 normal-float 4-bit + a float32 absmax (4.5 bits)",
}


class Int8Linear(nn.Module):
    """``nn.Linear`` with an int8 weight and a float32 scale per output channel (weight-only).

    ``forward(x (..., in)) -> (..., out)``: ``x @ (scale * q).T + bias``, the weight
    de-quantised on the fly. Memory: 1 byte per weight + 4 per output channel (vs 4 per weight).
    """

    def __init__(self, q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        _check_int8_parts(q, scale, bias)
        self.register_buffer("q", q)  # (out, in) int8
        self.register_buffer("scale", scale)  # (out, 1) float32
        self.bias = None if bias is None else nn.Parameter(bias)
        self.in_features, self.out_features = q.shape[1], q.shape[0]

    @classmethod
    def from_linear(cls, linear: nn.Linear, per_channel: bool = True) -> Int8Linear:
        """Quantise ``linear``'s weight with :func:`~course_lib.int8_quantize`."""
        check_type(linear, "linear", nn.Linear)
        per_channel = check_flag(per_channel, "per_channel")
        q, scale = int8_quantize(linear.weight.detach().float().numpy(), per_channel)
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        return cls(torch.from_numpy(q), torch.from_numpy(scale), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_last_dim(x, "x", self.in_features, "in_features")
        return F.linear(x, self.q.to(x.dtype) * self.scale, self.bias)  # de-quantise, multiply

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def _check_int8_parts(q, scale, bias) -> None:
    """Int8Linear's door: q int8 ``(out, in)``, a finite float scale ``(out, 1)`` or ``(1, 1)``,
    a float bias ``(out,)`` or None."""
    if not isinstance(q, torch.Tensor) or q.dtype != torch.int8 or q.ndim != 2:
        got = f"{q.dtype} tensor of shape {tuple(q.shape)}" if isinstance(q, torch.Tensor) else (
            type(q).__name__)  # fmt: skip
        raise TypeError(f"q must be a 2-D torch.int8 tensor (out, in), got {got}")
    out = q.shape[0]
    for name, t, shapes in (("scale", scale, [(out, 1), (1, 1)]), ("bias", bias, [(out,)])):
        if t is None and name == "bias":
            continue
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            got = f"{t.dtype} tensor" if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"{name} must be a floating torch.Tensor, got {got}")
        if tuple(t.shape) not in shapes:
            raise ValueError(f"{name} must have shape {' or '.join(map(str, shapes))} for q of "
                             f"shape {tuple(q.shape)}, got {tuple(t.shape)}")  # fmt: skip
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} contains nan or inf")


def roundtrip(w: np.ndarray, fmt: str) -> np.ndarray:
    """``w (out, in)`` quantised to ``fmt`` and back to float32: what a kernel computes with."""
    check_choice(fmt, "fmt", FORMATS)
    w = as_finite_array(w, "w").astype(np.float32)
    if w.ndim != 2:
        raise ValueError(
            f"w must be a 2-D weight matrix (out_features, in_features), got {w.shape}"
        )
    if fmt == "fp32":
        return w.copy()
    if fmt in ("int8", "int8_per_tensor"):
        return int8_dequantize(*int8_quantize(w, per_channel=fmt == "int8"))
    if fmt == "NF4":
        return nf4_dequantize(*nf4_quantize(w), w.shape)
    return dequantize(quantize(w, fmt), fmt, w.shape)


def _format_bytes(shape: tuple[int, ...], fmt: str) -> int:
    n = int(np.prod(shape))
    if fmt == "fp32":
        return 4 * n
    if fmt == "int8":
        return n + 4 * shape[0]  # + a float32 scale per row
    if fmt == "int8_per_tensor":
        return n + 4
    if fmt == "NF4":
        return n // 2 + 4 * (n // 64)  # 4 bits + a float32 absmax per 64
    return n // BLOCK_SIZE * BLOCK_BYTES[fmt]


def _matrices(model: nn.Module, embeddings: bool) -> list[tuple[str, nn.Parameter]]:
    """The weights a format stores: each ``nn.Linear`` (and ``nn.Embedding``) weight once,
    tied ones once (the GPT's head is its token embedding)."""
    kinds = (nn.Linear, nn.Embedding) if embeddings else (nn.Linear,)
    seen, found = set(), []
    for name, module in model.named_modules():
        if isinstance(module, kinds) and id(module.weight) not in seen:
            seen.add(id(module.weight))
            found.append((name, module.weight))
    return found


def _check_fits(matrices: list[tuple[str, nn.Parameter]], fmt: str) -> None:
    """Every matrix splits into ``fmt``'s blocks (rows of 32 for llama.cpp's, 64 weights for
    NF4), else a ValueError naming model, fmt and the first matrix that does not."""
    for name, w in matrices:
        if fmt in BLOCK_BYTES and w.shape[-1] % BLOCK_SIZE:
            need = f"rows of a multiple of {BLOCK_SIZE} numbers"
        elif fmt == "NF4" and w.numel() % 64:
            need = "a multiple of 64 weights"
        else:
            continue
        raise ValueError(
            f"model's matrix {name or 'weight'!r} has shape {tuple(w.shape)}; fmt={fmt!r} stores "
            f"blocks and needs {need}: choose another fmt (e.g. 'int8') for this model"
        )


def quantize_weights(model: nn.Module, fmt: str, embeddings: bool = True) -> nn.Module:
    """A copy of ``model`` whose matrices went through ``fmt`` and back (:func:`roundtrip`).

    ``fmt``: a key of :data:`FORMATS`; ``embeddings``: quantise ``nn.Embedding`` weights too
    (with tied weights the LM head shares the token embedding's). The original is unchanged.
    """
    check_module(model)
    check_choice(fmt, "fmt", FORMATS)
    embeddings = check_flag(embeddings, "embeddings")
    _check_fits(_matrices(model, embeddings), fmt)
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for _, weight in _matrices(copied, embeddings):
            w = roundtrip(weight.detach().float().cpu().numpy(), fmt)
            weight.copy_(torch.from_numpy(w).to(weight.dtype))
    return copied


def weight_bytes(model: nn.Module, fmt: str, embeddings: bool = True) -> int:
    """Bytes to store ``model`` with its matrices in ``fmt`` and every other parameter (norms,
    biases, position embeddings when ``embeddings`` is False) in float32; tied weights once."""
    check_module(model)
    check_choice(fmt, "fmt", FORMATS)
    embeddings = check_flag(embeddings, "embeddings")
    matrices = _matrices(model, embeddings)
    _check_fits(matrices, fmt)
    quantised = {id(w) for _, w in matrices}
    rest = {id(p): p for p in model.parameters() if id(p) not in quantised}
    return sum(_format_bytes(tuple(w.shape), fmt) for _, w in matrices) + sum(
        4 * p.numel() for p in rest.values()
    )
