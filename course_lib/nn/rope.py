"""Rotary position embedding in torch: the ``qk_transform`` of lecture 13's attention.

The formula, the conventions and the numpy version for the board are in
:mod:`course_lib.rope`. Here the angles are computed in torch on the input's device (float64,
then cast to the input's dtype), so a model never leaves torch::

    angle(pos, i) = pos * omega_i,   omega_i = theta ** (-2i / d_head)
    (x_2i, x_2i+1) -> (x_2i cos - x_2i+1 sin,  x_2i sin + x_2i+1 cos)
"""

from __future__ import annotations

import torch

__all__ = ["rotate", "rope_qk", "rope_qk_unchecked"]


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotate each pair ``(2i, 2i + 1)`` of ``x (..., n, d_head)`` by ``positions (n,) * omega_i``."""
    d_head = x.shape[-1]
    omega = theta ** (-torch.arange(0, d_head, 2, dtype=torch.float64, device=x.device) / d_head)
    angle = positions.to(torch.float64)[:, None] * omega  # (n, d_head/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., n, d_head/2) each
    out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)  # (..., n, d/2, 2)
    return out.flatten(-2)  # (..., n, d_head): pairs interleaved again


def rope_qk(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``qk_transform`` hook of :class:`~course_lib.nn.MultiHeadAttention` for RoPE: rotate
    queries ``(B, num_heads, n, d_head)`` and keys ``(B, num_kv_heads, n, d_head)`` by their
    absolute ``positions (n,)``. Values are not rotated: they carry content, not positions.
    Its input is checked (the door of a direct call); :class:`~course_lib.ModernLM`, whose
    ``forward`` has checked its input once, calls :func:`rope_qk_unchecked` in every layer."""
    _check_heads_and_positions(q, k, positions)
    return rotate(q, positions, theta), rotate(k, positions, theta)


def rope_qk_unchecked(
    q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`rope_qk` without the check, unchecked by name: the hook inside a model, which
    hands it the heads its attention built (the model's ``forward`` is the door)."""
    return rotate(q, positions, theta), rotate(k, positions, theta)


def _check_heads_and_positions(q, k, positions) -> None:
    """rope_qk's door: 4-D heads that agree in B, n, d_head, and ``positions`` of shape (n,)."""
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4:
            got = f"shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a 4-D tensor (B, heads, n, d_head), got {got}")
    if q.shape[0] != k.shape[0] or q.shape[2:] != k.shape[2:]:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree in B, n and d_head")
    if not isinstance(positions, torch.Tensor) or positions.shape != (q.shape[2],):
        got = tuple(positions.shape) if isinstance(positions, torch.Tensor) else type(positions)
        raise ValueError(f"positions must be a tensor of shape (n,) = ({q.shape[2]},), got {got}")
