"""Checks for the exercises of lecture 05 (the transformer layer)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..nn import transformer_parameter_count
from . import Built, ExerciseError, call_student, check_count, check_mistakes, hidden_rng, passed
from .given_torch import make_layer

__all__ = [
    "check_layer_norm",
    "check_post_ln_decoder_layer",
    "check_pre_ln_layer",
    "check_decoder_parameter_count",
    "check_same_after_layer_norm",
    "make_layer",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "5.1": (),
    "5.2": ("course_lib.nn.blocks.DecoderLayer",),
    "5.3": ("course_lib.nn.blocks.EncoderLayer", "course_lib.nn.blocks.DecoderLayer"),
    "5.4": (
        "course_lib.nn.counting.transformer_parameter_count",
        "course_lib.nn.counting.count_parameters",
    ),
    "5.5": (),
}


def _numpy(ex: str, got, what: str):
    """The student's tensor as numpy (detached), or an ExerciseError if it is not an array."""
    if isinstance(got, torch.Tensor):
        return got.detach().cpu().numpy()
    if isinstance(got, tuple):
        raise ExerciseError(ex, f"{what}: expected one tensor, got a tuple of {len(got)} items.",
                            "return one tensor, the layer's output (batch, n, d_model).")  # fmt: skip
    return got


def _ln(x, gamma, beta, eps=1e-5, *, unbiased=False, eps_outside=False, dim=-1):
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, unbiased=unbiased, keepdim=True)
    denom = torch.sqrt(var) + eps if eps_outside else torch.sqrt(var + eps)
    return gamma * (x - mu) / denom + beta


def check_layer_norm(student_fn, *, seed: int = 0) -> None:
    """Exercise 5.1: LayerNorm over the last axis, then gain and shift."""
    ex = "5.1"
    gen = torch.Generator().manual_seed(51 + 1000 * seed)
    cases = [
        ("2 tokens of 4 features", (2, 4), 3.0),
        ("a batch (2, 3, 8)", (2, 3, 8), 3.0),
        ("3 tokens of 6 features with a tiny spread (std 0.001)", (3, 6), 1e-3),
        ("one token of 16 features", (1, 16), 3.0),
    ]
    for what, shape, scale in cases:
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale + 1
        gamma = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
        beta = torch.randn(shape[-1], generator=gen, dtype=torch.float64)
        with torch.no_grad():
            got = call_student(ex, student_fn, x.clone(), gamma.clone(), beta.clone())
        expected = F.layer_norm(x, (shape[-1],), gamma, beta, eps=1e-5)
        mistakes = {
            "the variance divides by D, not D - 1: x.var(-1, unbiased=False) "
            "(torch's default var is unbiased).": _ln(x, gamma, beta, unbiased=True),
            "eps goes INSIDE the square root: sqrt(var + eps), not sqrt(var) + eps (it matters "
            "when a token's variance is small).": _ln(x, gamma, beta, eps_outside=True),
            "normalise each token over its features, the LAST axis (dim=-1, keepdim=True), "
            "not over the tokens.": _ln(x, gamma, beta, dim=0),
            "add eps inside the square root, sqrt(var + eps): it is part of the formula (and "
            "keeps a constant token from dividing by 0).": _ln(x, gamma, beta, eps=0.0),
            "after normalising, multiply by gamma and add beta.": _ln(
                x, torch.ones_like(gamma), torch.zeros_like(beta)
            ),
            "gamma multiplies and beta is added: you swapped them.": _ln(x, beta, gamma),
        }
        check_mistakes(ex, _numpy(ex, got, what), expected.numpy(), what=f"LayerNorm of {what}",
                       hint="mean and variance over the LAST axis (keepdim=True); the variance "
                       "divides by D; add eps inside the square root; then multiply by gamma and "
                       "add beta.", mistakes={k: v.numpy() for k, v in mistakes.items()})  # fmt: skip
    x = torch.full((1, 4), 3.0, dtype=torch.float64)
    gamma = torch.ones(4, dtype=torch.float64)
    beta = torch.tensor([0.5, -1.0, 0.0, 2.0], dtype=torch.float64)
    with torch.no_grad():
        got = call_student(ex, student_fn, x, gamma, beta)
    check_mistakes(ex, _numpy(ex, got, "a constant token"), beta[None].numpy(),
                   what="LayerNorm of a constant token [3, 3, 3, 3] (variance 0)",
                   hint="with variance 0 only eps keeps the division finite: use sqrt(var + eps).")  # fmt: skip
    passed(ex, "LayerNorm by hand")


def _post_ln_decoder(x, memory, layer, self_mask, memory_mask, *, variant="right"):
    sa = lambda q, m: layer.self_attn(q, q, q, m)  # noqa: E731
    ca = lambda q, m: layer.cross_attn(q, memory, memory, m)  # noqa: E731
    if variant == "pre":
        x = x + layer.self_attn(*(3 * [layer.norm1(x)]), self_mask)
        x = x + layer.cross_attn(layer.norm2(x), memory, memory, memory_mask)
        return x + layer.ffn(layer.norm3(x))
    if variant == "self twice":
        ca = lambda q, m: layer.cross_attn(q, q, q, m if m is None else None)  # noqa: E731
    if variant == "queries from memory":
        ca = lambda q, m: layer.cross_attn(memory, q, q, None)  # noqa: E731
    x = layer.norm1(x + sa(x, None if variant == "no self mask" else self_mask))
    x = layer.norm2(x + ca(x, None if variant == "no memory mask" else memory_mask))
    return layer.norm3(x + layer.ffn(x))


_DECODER_MISTAKES = (
    ("pre", "that is the pre-LN order. Post-LN: x = norm(x + sublayer(x)), three times "
     "(norm1, norm2, norm3)."),
    ("self twice", "the second sublayer is CROSS-attention: queries from x, keys and values "
     "from memory: layer.cross_attn(x, memory, memory, memory_mask)."),
    ("queries from memory", "in cross-attention the QUERIES come from the decoder (x); keys "
     "and values come from memory."),
    ("no self mask", "pass self_mask to the self-attention: without it a token sees the words "
     "after it."),
    ("no memory mask", "pass memory_mask to the cross-attention: without it the decoder "
     "attends to the source's padding."),
)  # fmt: skip


def check_post_ln_decoder_layer(student_fn, *, seed: int = 0) -> None:
    """Exercise 5.2: the notes' post-LN form for a DECODER layer (self, cross, FFN)."""
    ex = "5.2"
    gen = torch.Generator().manual_seed(52 + 1000 * seed)
    for d, h, n, n_mem in ((8, 2, 5, 5), (12, 3, 3, 6), (4, 1, 1, 2)):
        recipe = Built("course_lib.checks.given_torch:make_layer", kind="decoder", d_model=d,
                       num_heads=h, norm_first=True, seed=seed * 100 + d)  # fmt: skip
        layer = recipe.build()
        x = torch.randn(2, n, d, generator=gen, dtype=torch.float64)
        memory = torch.randn(2, n_mem, d, generator=gen, dtype=torch.float64)
        self_mask = torch.tril(torch.ones(n, n, dtype=torch.bool)).expand(2, 1, n, n).clone()
        self_mask[1, :, :, n - 1 :] = False if n > 1 else True  # sentence 2: one padding token
        memory_mask = torch.ones(2, 1, n_mem, dtype=torch.bool)
        memory_mask[1, 0, n_mem - 1 :] = False  # its source has one padding token too
        with torch.no_grad():
            layer.norm_first = False
            expected = layer(x, memory, self_mask, memory_mask).numpy()
            mistakes = {}
            for v, hint in _DECODER_MISTAKES:
                try:
                    mistakes[hint] = _post_ln_decoder(
                        x, memory, layer, self_mask, memory_mask, variant=v
                    ).numpy()
                except RuntimeError:  # this mistake crashes on these shapes
                    pass
            got = call_student(ex, student_fn, x.clone(), memory.clone(), recipe,
                               self_mask.clone(), memory_mask.clone())  # fmt: skip
        what = f"post-LN decoder layer for x {tuple(x.shape)} and memory {tuple(memory.shape)}"
        check_mistakes(ex, _numpy(ex, got, what), expected, what=what,
                       hint="compose the sublayers yourself (the layer you get is set up as "
                       "pre-LN, so layer(x, ...) is wrong): x = norm1(x + self-attention), "
                       "x = norm2(x + cross-attention to memory), x = norm3(x + ffn(x)).",
                       mistakes=mistakes, atol=1e-10)  # fmt: skip
    passed(ex, "post-LN decoder layer")


def _pre_ln(x, layer, mask, variant="right"):
    y = layer.norm1(x)
    if variant == "queries only":
        a = layer.self_attn(y, x, x, mask)
    else:
        a = layer.self_attn(y, y, y, mask)
    x1 = (y if variant == "normalised residual" else x) + a
    out = x1 + layer.ffn(layer.norm2(x1))
    return layer.norm2(out) if variant == "final norm" else out


def check_pre_ln_layer(student_fn, *, seed: int = 0) -> None:
    """Exercise 5.3: X' = X + MHA(LN1(X)), X'' = X' + FFN(LN2(X'))."""
    ex = "5.3"
    gen = torch.Generator().manual_seed(53 + 1000 * seed)
    for d, h, n, with_mask in ((8, 2, 5, False), (12, 3, 4, True), (4, 1, 1, False)):
        recipe = Built("course_lib.checks.given_torch:make_layer", kind="encoder", d_model=d,
                       num_heads=h, norm_first=False, seed=seed * 100 + d)  # fmt: skip
        layer = recipe.build()
        x = torch.randn(2, n, d, generator=gen, dtype=torch.float64)
        mask = None
        if with_mask:
            mask = torch.ones(2, 1, n, dtype=torch.bool)
            mask[1, 0, n - 1 :] = False  # the second sentence has one padding token
        with torch.no_grad():
            layer.norm_first = True
            expected = layer(x, mask).numpy()
            layer.norm_first = False
            mistakes = {
                "that is the post-LN layer: here normalise BEFORE each sublayer and add the "
                "un-normalised x back.": layer(x, mask).numpy(),
                "queries, keys AND values all come from LN1(x): "
                "layer.self_attn(y, y, y, mask) with y = layer.norm1(x).": _pre_ln(
                    x, layer, mask, "queries only"
                ).numpy(),
                "the residual adds the UN-normalised x: x + MHA(LN1(x)), not LN1(x) + MHA(...).": (
                    _pre_ln(x, layer, mask, "normalised residual").numpy()
                ),
                "the layer ends with the residual sum x' + FFN(LN2(x')); the final LayerNorm "
                "belongs to the whole stack, not to each layer.": _pre_ln(
                    x, layer, mask, "final norm"
                ).numpy(),
            }
            if mask is not None:
                mistakes["pass the mask to the self-attention (the padding token must get "
                          "weight 0)."] = _pre_ln(x, layer, None).numpy()  # fmt: skip
            args = (x.clone(), recipe) if mask is None else (x.clone(), recipe, mask.clone())
            got = call_student(ex, student_fn, *args)
        what = f"pre-LN encoder layer output for x of shape {tuple(x.shape)}" + (
            " with a padding mask" if mask is not None else ""
        )
        check_mistakes(ex, _numpy(ex, got, what), expected, what=what,
                       hint="normalize BEFORE each sublayer and add the un-normalized x back: "
                       "y = layer.norm1(x); x = x + layer.self_attn(y, y, y, mask); "
                       "x = x + layer.ffn(layer.norm2(x)). Do not call layer(x).",
                       mistakes=mistakes, atol=1e-10)  # fmt: skip
    passed(ex, "pre-LN encoder layer")


def check_decoder_parameter_count(student_fn, *, seed: int = 0) -> None:
    """Exercise 5.4: parameters of one DECODER layer (biases everywhere), d_ff given (fixed
    sizes, and hidden ones for seed > 0)."""
    ex = "5.4"
    cases = ((512, 2048), (768, 3072), (16, 64), (8, 20), (1, 1))
    if seed:
        rng = hidden_rng(seed, 54)
        cases = tuple((int(d), int(f)) for d, f in rng.integers(2, 2000, size=(3, 2)))
    for d, f in cases:
        got = call_student(ex, student_fn, d, f)
        attn, ffn, norm = 4 * d * d + 4 * d, 2 * d * f + f + d, 2 * d
        hints = {
            attn + ffn + 2 * norm: "that is an ENCODER layer. A decoder layer has a second "
            "attention (cross-attention) and a third LayerNorm.",
            2 * attn + ffn + 2 * norm: "three sublayers, three LayerNorms (each with a gain "
            "and a shift of d_model).",
            2 * attn + 8 * d * d + 4 * d + d + 3 * norm: "use the d_ff you are given, not 4 * d_model.",
            2 * attn + ffn + 3 * d: "each LayerNorm has a gain AND a shift: 2 * d_model.",
            2 * (4 * d * d) + 2 * d * f + 3 * norm: "the attention maps and the FFN have biases too.",
        }  # fmt: skip
        key = int(got) if isinstance(got, (int, np.integer)) and not isinstance(got, bool) else None
        check_count(ex, got, transformer_parameter_count(d, f, num_decoder_layers=1),
                    what=f"parameters of one decoder layer with d_model={d}, d_ff={f}",
                    hint=hints.get(key) or "self-attention and cross-attention: 4 d x d maps + 4 "
                    "biases each; FFN: d x d_ff + d_ff + d_ff x d + d; three LayerNorms of 2d.")  # fmt: skip
    passed(ex, "parameter count of a decoder layer")


LN_EPS = 1e-5  # torch's LayerNorm default, the one exercise 5.5 compares with
_U32 = 2.0**-24  # float32's unit roundoff: a float32 answer is right to this relative precision


def _twin_cases(seed: int) -> list[tuple[np.ndarray, float, float]]:
    """(token, mean, std): the notebook's (seed 0) or hidden ones (D = 4, 6 or 8 features).

    Every token's spread (np.std) and every requested std lie in [0.5, 6]: there eps = 1e-5
    moves a LayerNorm output by less than 2e-5 per unit of |z| (see :func:`_ln_tolerance`).
    """
    if seed == 0:
        return [(np.array([1.0, -1.0, 0.0, 5.0]), 10.0, 3.0),
                (np.array([2.0, 2.5, -4.0, 0.5]), -1.0, 0.5)]  # fmt: skip
    rng = hidden_rng(seed, 55)
    cases = []
    for d in (4, 6, 8):
        g = rng.normal(size=d)
        z = (g - g.mean()) / g.std()  # spread exactly 1, so the token's spread is the drawn one
        token = z * rng.uniform(0.5, 4.0) + rng.uniform(-5, 5)
        cases.append((token, float(rng.uniform(-8, 8)), float(rng.uniform(0.5, 6.0))))
    return cases


def _layer_norm(x: np.ndarray) -> np.ndarray:
    return F.layer_norm(torch.tensor(x)[None], (x.shape[-1],), eps=LN_EPS)[0].numpy()


def _ln_tolerance(token: np.ndarray, mean: float, std: float) -> float:
    """How far LN(twin) may lie from LN(token) for a RIGHT twin, derived, not guessed.

    The right twin is y = mean + std z with z = (token - token.mean()) / token.std(). LayerNorm
    with eps gives z * std / sqrt(std^2 + eps) for y and z * s / sqrt(s^2 + eps) for the token
    (s its spread): they differ by |z| |f(std) - f(s)|, f(a) = a / sqrt(a^2 + eps) (the eps
    term). A float32 twin adds a rounding error of at most a few float32 units of |y| per entry,
    which LayerNorm divides by the spread std (the rounding term; 8 units, a generous bound).
    """
    s = float(token.std())
    z = float(np.max(np.abs(token - token.mean()))) / s

    def f(a: float) -> float:
        return a / np.sqrt(a * a + LN_EPS)

    eps_term = z * abs(f(std) - f(s))
    rounding_term = 8 * _U32 * (abs(mean) + std * z) / std
    return eps_term + rounding_term + 1e-12


def check_same_after_layer_norm(student_fn, *, seed: int = 0) -> None:
    """Exercise 5.5 (construct): ``same_after_layer_norm(token, mean, std) -> twin``, a token of
    mean ``mean`` and spread ``std`` (``np.std``) with the same LayerNorm output as ``token``.

    gamma = 1, beta = 0, eps = 1e-5: outputs must agree to the tolerance :func:`_ln_tolerance`
    derives (eps and float32 rounding; at most ~1e-4 for these spreads), the twin's mean and
    std to 1e-6 of the largest of 1, |mean|, std, plus what eps changes when the twin is built
    with a LayerNorm (``F.layer_norm(token) * std + mean`` is a right answer too). The grader
    varies the token (4, 6 or 8 features), mean and std.
    """
    ex = "5.5"
    for token, mean, std in _twin_cases(seed):
        got = call_student(ex, student_fn, token.copy(), mean, std)
        d = token.shape[0]
        given = f"for token {np.round(token, 3).tolist()}, mean {mean:.4g}, std {std:.4g}"
        try:
            if isinstance(got, torch.Tensor):  # a torch answer (float32 included) is right too
                got = got.detach().cpu().numpy()
            twin = np.array(got, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"{given}: expected {d} numbers, got {got!r:.80}.") from None
        if twin.shape != (d,) or not np.all(np.isfinite(twin)):
            raise ExerciseError(ex, f"{given}: expected {d} finite numbers (one per feature of "
                                f"the token), got shape {twin.shape}.")  # fmt: skip
        out, want = _layer_norm(twin), _layer_norm(token)
        tol = _ln_tolerance(token, mean, std)
        if not np.allclose(out, want, rtol=0, atol=tol):
            if np.allclose(out, -want, rtol=0, atol=tol):
                hint = "a NEGATIVE factor flips the sign of the output; scale by a positive number."
            elif np.allclose(np.sort(out), np.sort(want), rtol=0, atol=tol):
                hint = "a permutation of the features permutes the output too; LayerNorm keeps the order."
            else:
                hint = (
                    "LayerNorm removes each token's mean and divides by its spread: what can you "
                    "ADD to every feature, or multiply every feature by, without changing the result?"
                )
            raise ExerciseError(ex, f"{given}, LayerNorm outputs:\n  token -> {np.round(want, 4)}\n"
                                f"  yours -> {np.round(out, 4)}", hint)  # fmt: skip
        scale = max(1.0, abs(mean), std)
        s = float(token.std())  # built with LayerNorm's eps, the spread is std * s / sqrt(s^2+eps)
        eps_std = std * (1 - s / np.sqrt(s * s + LN_EPS))
        if abs(twin.mean() - mean) > 1e-6 * scale or abs(twin.std() - std) > 1e-6 * scale + eps_std:
            hint = (
                "shift every feature by the same amount to set the mean; scale to set the spread."
            )
            if np.isclose(twin.std(ddof=1), std, rtol=1e-6):
                hint = ("the spread here is np.std (ddof=0, dividing by D), the one LayerNorm uses; "
                        "you matched the sample std (ddof=1).")  # fmt: skip
            raise ExerciseError(
                ex, f"{given}: your token has the same LayerNorm output, but mean "
                f"{twin.mean():.6g} and std {twin.std():.6g}.", hint,
            )  # fmt: skip
    passed(ex, "a different token with the same LayerNorm output")
