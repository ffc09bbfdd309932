"""Checks for the exercises of lecture 05 (the transformer layer)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..layers import EncoderLayer, transformer_parameter_count
from . import ExerciseError, call_student, check_array, check_count, passed

__all__ = [
    "check_layer_norm",
    "check_post_ln_layer",
    "check_pre_ln_layer",
    "check_layer_parameter_count",
]


def _numpy(ex: str, got, what: str):
    """The student's tensor as numpy (detached), or an ExerciseError if it is not an array."""
    if isinstance(got, torch.Tensor):
        return got.detach().cpu().numpy()
    if isinstance(got, tuple):
        raise ExerciseError(ex, f"{what}: expected one tensor, got a tuple of {len(got)} items.",
                            "attention returns (output, weights); keep only the output.")  # fmt: skip
    return got


def check_layer_norm(student_fn) -> None:
    """Exercise 5.1: LayerNorm over the last axis, then gain and shift."""
    ex = "5.1"
    gen = torch.Generator().manual_seed(51)
    cases = [
        ("2 tokens of 4 features", (2, 4)),
        ("a batch (2, 3, 8)", (2, 3, 8)),
        ("one token of 16 features", (1, 16)),
    ]
    for what, shape in cases:
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * 3 + 1
        gamma = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
        beta = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
        with torch.no_grad():
            got = call_student(ex, student_fn, x.clone(), gamma.clone(), beta.clone())
        expected = F.layer_norm(x, (shape[-1],), gamma, beta, eps=1e-5)
        check_array(ex, _numpy(ex, got, what), expected.numpy(), what=f"LayerNorm of {what}",
                    hint="mean and variance over the LAST axis (keepdim=True); the variance "
                    "divides by D, not D-1 (x.var(-1, unbiased=False)); add eps inside the "
                    "square root; then multiply by gamma and add beta.")  # fmt: skip
    x = torch.full((1, 4), 3.0, dtype=torch.float64)
    gamma, beta = (
        torch.ones(4, dtype=torch.float64),
        torch.tensor([0.5, -1.0, 0.0, 2.0], dtype=torch.float64),
    )
    with torch.no_grad():
        got = call_student(ex, student_fn, x, gamma, beta)
    check_array(ex, _numpy(ex, got, "a constant token"), beta[None].numpy(),
                what="LayerNorm of a constant token [3, 3, 3, 3] (variance 0)",
                hint="with variance 0 only eps keeps the division finite: use sqrt(var + eps).")  # fmt: skip
    passed(ex, "LayerNorm by hand")


def _layer_case(ex: str, student_fn, norm_first: bool, title: str, trap_hint: str) -> None:
    torch.manual_seed(52 if not norm_first else 53)
    for d, h, n, with_mask in ((8, 2, 5, False), (12, 3, 4, True), (4, 1, 1, False)):
        layer = EncoderLayer(d, h, norm_first=norm_first).double().eval()
        with torch.no_grad():
            for p in layer.parameters():
                if p.ndim == 1:
                    p.normal_(0.0, 0.5)
            x = torch.randn(2, n, d, dtype=torch.float64)
            mask = None
            if with_mask:
                mask = torch.ones(2, 1, n, dtype=torch.bool)
                mask[1, 0, n - 1 :] = False  # the second sentence has one padding token
            expected = layer(x, mask).numpy()
            # If the answer just calls layer(x), it gets the other variant and fails.
            layer.norm_first = not norm_first
            args = (x.clone(), layer) if mask is None else (x.clone(), layer, mask)
            got = call_student(ex, student_fn, *args)
        what = f"{title} output for x of shape {tuple(x.shape)}" + (
            " with a padding mask" if mask is not None else ""
        )
        check_array(ex, _numpy(ex, got, what), expected, what=what, hint=trap_hint)
    passed(ex, title)


def check_post_ln_layer(student_fn) -> None:
    """Exercise 5.2: X' = LN1(X + MHA(X)), X'' = LN2(X' + FFN(X'))."""
    _layer_case(
        "5.2",
        student_fn,
        norm_first=False,
        title="post-LN encoder layer",
        trap_hint="compose the sublayers yourself (do not call layer(x)): "
        "out, _ = layer.self_attn(x, x, x, mask); x = layer.norm1(x + out); "
        "then x = layer.norm2(x + layer.ffn(x)).",
    )


def check_pre_ln_layer(student_fn) -> None:
    """Exercise 5.3: X' = X + MHA(LN1(X)), X'' = X' + FFN(LN2(X'))."""
    _layer_case(
        "5.3",
        student_fn,
        norm_first=True,
        title="pre-LN encoder layer",
        trap_hint="normalize BEFORE each sublayer and add the un-normalized x back: "
        "y = layer.norm1(x); x = x + layer.self_attn(y, y, y, mask)[0]; "
        "x = x + layer.ffn(layer.norm2(x)). Do not call layer(x).",
    )


def check_layer_parameter_count(student_fn) -> None:
    """Exercise 5.4: parameters of one encoder layer (biases everywhere), d_ff given."""
    ex = "5.4"
    for d, f in ((512, 2048), (768, 3072), (16, 64), (8, 20), (1, 1)):
        got = call_student(ex, student_fn, d, f)
        check_count(
            ex,
            got,
            transformer_parameter_count(d, f, num_encoder_layers=1),
            what=f"parameters of one encoder layer with d_model={d}, d_ff={f}",
            hint="attention: 4 matrices d x d + 4 biases of d; FFN: d x d_ff + d_ff, then "
            "d_ff x d + d; two LayerNorms with a gain and a shift of d each.",
        )
    passed(ex, "parameter count of an encoder layer")
