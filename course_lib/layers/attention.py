"""Multi-head attention in torch (batch first) and the boolean masks it accepts.

Masks are boolean with **True = may attend** (torch SDPA's convention). ``torch.nn``'s
``MultiheadAttention`` / ``Transformer*Layer`` use the **opposite** convention for boolean
``attn_mask`` / ``key_padding_mask`` (True = masked out); convert with ``~mask`` at the boundary.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validation import check_dropout, check_features, check_heads, check_positive_int

__all__ = ["MultiHeadAttention", "attention_mask", "causal_mask_torch"]


def attention_mask(mask, batch: int, heads: int, n_q: int, n_k: int, name: str = "mask"):
    """Bring a boolean mask (True = may attend) to a shape that broadcasts to
    ``(batch, heads, n_q, n_k)``, or return None for None:

    * 2-D ``(n_q, n_k)``: the same for every sequence (e.g. a causal mask);
    * 3-D ``(batch, n_q or 1, n_k)``: per sequence, e.g. ``padding_mask`` -> ``(batch, 1, n_k)``;
    * 4-D ``(batch, heads, n_q, n_k)``, any axis may be 1: used as it is.

    Refuses a row of all False (a query that may see no key: its softmax would be 0/0).
    """
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"{name} must be a boolean torch.Tensor (True = may attend), got "
            f"{type(mask).__name__}; convert numpy masks with torch.as_tensor"
        )
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be boolean (True = may attend), got dtype {mask.dtype}; "
            "for a 0/1 tensor use `mask.bool()`"
        )
    expected = {
        2: f"(n_q={n_q}, n_k={n_k})",
        3: f"(batch={batch}, n_q={n_q} or 1, n_k={n_k})",
        4: f"(batch={batch}, heads={heads}, n_q={n_q}, n_k={n_k}) with any axis of size 1",
    }
    if mask.ndim == 2:
        m = mask[None, None]
    elif mask.ndim == 3:
        m = mask[:, None]
    elif mask.ndim == 4:
        m = mask
    else:
        raise ValueError(
            f"{name} must be 2-D (n_q, n_k), 3-D (batch, n_q or 1, n_k) or 4-D "
            f"(batch, heads, n_q, n_k), got shape {tuple(mask.shape)}"
        )
    full = (batch, heads, n_q, n_k)
    if any(s not in (1, f) for s, f in zip(m.shape, full, strict=True)) or m.shape[-1] != n_k:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not fit the attention scores "
            f"(batch={batch}, heads={heads}, n_q={n_q}, n_k={n_k}); a {mask.ndim}-D mask "
            f"must be {expected[mask.ndim]}"
        )
    if not m.any(dim=-1).all():
        raise ValueError(
            f"{name} hides every key from some query (a row of all False); each query "
            "needs at least one True, or its softmax is 0/0"
        )
    return m


def causal_mask_torch(n: int, device=None) -> torch.Tensor:
    """``(n, n)`` boolean, True on and below the diagonal: position i may attend to j <= i."""
    n = check_positive_int(n, "n")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


class MultiHeadAttention(nn.Module):
    """``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O``, batch first.

    Four ``d_model x d_model`` linear maps: ``w_q``, ``w_k``, ``w_v`` project, then the
    projected features are cut into ``num_heads`` heads of ``d_head = d_model / num_heads``;
    each head runs scaled dot-product attention; the heads are concatenated and ``w_o``
    mixes them. ``self.attention_weights`` keeps the weights of the latest call (detached);
    ``last_weights`` is the older name of the same tensor. Both weight tensors carry
    ``attention_layout = "batch"``, so the plots and views read their first axis as the batch
    (not as layers, which a 4-D stack of Hugging Face's ``outputs.attentions`` has there).

    Args:
        d_model: feature width of inputs and output.
        num_heads: number of heads; must divide ``d_model``.
        bias: whether the four linear maps have biases.
        dropout: dropout on the attention weights (training mode only).
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        check_heads(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.attention_weights: torch.Tensor | None = None

    @property
    def last_weights(self) -> torch.Tensor | None:
        """Old name of :attr:`attention_weights` (lecture 03 reads it)."""
        return self.attention_weights

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_head).transpose(1, 2)  # (b, heads, n, d_head)

    def forward(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask=None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(batch, n_q, d_model)``.
            key, value: ``(batch, n_k, d_model)``.
            mask: optional boolean, True = may attend: ``(n_q, n_k)``, ``(batch, n_q or 1,
                n_k)`` (e.g. ``torch.as_tensor(padding_mask(lengths, n_k))``) or
                ``(batch, heads, n_q, n_k)``.

        Returns:
            ``(output, weights)``: ``(batch, n_q, d_model)`` and the per-head attention
            weights ``(batch, heads, n_q, n_k)`` (before dropout; rows sum to 1).
        """
        check_features(query, "query", self.d_model)
        check_features(key, "key", self.d_model)
        check_features(value, "value", self.d_model)
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(
                "query (batch, n_q, d), key and value (batch, n_k, d) must share the batch "
                "size, and key and value the length n_k: got query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        batch, n_q, n_k = query.shape[0], query.shape[1], key.shape[1]
        m = attention_mask(mask, batch, self.num_heads, n_q, n_k)
        q = self._split(self.w_q(query))
        k = self._split(self.w_k(key))
        v = self._split(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, heads, n_q, n_k)
        if m is not None:
            scores = scores.masked_fill(~m, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        heads = self.dropout(weights) @ v  # (batch, heads, n_q, d_head)
        concat = heads.transpose(1, 2).reshape(batch, n_q, self.d_model)  # (batch, n_q, d_model)
        self.attention_weights = weights.detach()
        weights.attention_layout = self.attention_weights.attention_layout = "batch"  # for viz
        return self.w_o(concat), weights

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` into a new instance.

        See :func:`course_lib.layers.from_torch.mha_from_torch`.
        """
        from .from_torch import mha_from_torch

        return mha_from_torch(module)
