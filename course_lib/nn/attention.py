"""Multi-head attention in torch, the one attention every torch model of the course uses.

One class, :class:`MultiHeadAttention`, serves lecture 03's multi-head attention, the encoder and
decoder layers of lecture 05 (self- and cross-attention, padding masks), GPT (lecture 11: causal,
with a KV cache) and the Llama-style model of lecture 13 (fewer key/value heads, rotary
positions through ``qk_transform``). It reads like the board::

    q, k, v = x_q W_q, x_kv W_k, x_kv W_v            split into heads
    scores  = q k^T / sqrt(d_head)                   (batch, heads, n_q, n_k)
    scores[not mask] = -inf                          padding, and j > i when causal
    out     = softmax(scores) v, heads concatenated, then W_o

:func:`attend` is the core (scores -> mask -> softmax -> weighted sum), written once.

Masks are boolean with **True = may attend** (torch SDPA's convention). ``torch.nn``'s
``MultiheadAttention`` / ``Transformer*Layer`` use the **opposite** convention for boolean
``attn_mask`` / ``key_padding_mask`` (True = masked out); convert with ``~mask`` at the boundary.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from .._validation import (
    check_dropout,
    check_eps,
    check_features,
    check_flag,
    check_heads,
    check_positive_int,
)
from .cache import LayerKVCache, SlidingWindowKVCache
from .norms import RMSNorm

__all__ = [
    "MultiHeadAttention",
    "attend",
    "causal_mask_from",
    "sliding_window_mask",
    "check_mask",
    "check_window",
]

QKTransform = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]
]


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """``softmax(q k^T / sqrt(d_head)) v`` for heads ``q (..., n_q, d_head)``, ``k, v (..., n_k,
    d_head)``; ``mask`` (True = may attend) broadcasts to the scores. Returns the output
    ``(..., n_q, d_head)`` and the weights ``(..., n_q, n_k)`` (before dropout)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., n_q, n_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # each row sums to 1
    return (weights if dropout is None else dropout(weights)) @ v, weights


def causal_mask_from(
    start: int, n_new: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Boolean ``(n_new, start + n_new)``, True = may attend: the query at absolute position
    ``start + i`` sees the keys at positions ``0 .. start + i`` (``start = 0``: the square
    lower-triangular mask of lecture 02)."""
    _check_span(start, n_new)
    return torch.ones(n_new, start + n_new, dtype=torch.bool, device=device).tril(diagonal=start)


def check_window(window, name: str = "window") -> int:
    """A sliding window is a whole number of positions >= 1 (a query sees itself and the
    ``window - 1`` positions before it); else a ValueError/TypeError naming ``name``."""
    return check_positive_int(window, name)


def sliding_window_mask(
    start: int, n_new: int, window: int, n_keys: int | None = None
) -> torch.Tensor:
    """Boolean ``(n_new, n_keys)``, True = may attend: the query at position ``i = start + a``
    sees the key at position ``j`` when ``0 <= i - j < window`` (itself and the ``window - 1``
    positions before it; Mistral, Gemma, ``transformers``: ``j > i - window``).

    The keys are the **last** ``n_keys`` positions ``start + n_new - n_keys .. start + n_new -
    1`` (default ``start + n_new``: every position, as :func:`causal_mask_from`); a cache that
    keeps only the window hands over fewer. ``window >= start + n_new`` gives the causal mask.
    """
    check_window(window)
    check_positive_int(start, "start", allow_zero=True)
    check_positive_int(n_new, "n_new")
    n_keys = start + n_new if n_keys is None else check_positive_int(n_keys, "n_keys")
    if n_keys > start + n_new:
        raise ValueError(f"n_keys must be in [1, start + n_new = {start + n_new}], got {n_keys}")
    i = torch.arange(start, start + n_new)[:, None]  # (n_new, 1): query positions
    j = torch.arange(start + n_new - n_keys, start + n_new)[None, :]  # (1, n_keys): key positions
    return (j <= i) & (i - j < window)


def _check_span(start, n_new) -> None:
    for name, value, least in (("start", start, 0), ("n_new", n_new, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an int >= {least}, got {value!r}")


class MultiHeadAttention(nn.Module):
    """``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O``, batch first.

    Four linear maps ``w_q``, ``w_k``, ``w_v``, ``w_o``; the projected features are cut into
    ``num_heads`` heads of ``d_head = d_model / num_heads``. ``self.attention_weights`` keeps
    the weights of the latest call ``(batch, heads, n_q, n_k)`` (detached, before dropout); it
    carries ``attention_layout = "batch"`` so the plots read its first axis as the batch.

    Args:
        d_model: feature width of inputs and output.
        num_heads: query heads; must divide ``d_model``.
        num_kv_heads: key/value heads (default ``num_heads``; must divide ``num_heads``). With
            fewer, query heads ``j g .. (j + 1) g - 1`` share key/value head ``j``
            (grouped-query attention, lecture 13; ``g = num_heads / num_kv_heads``).
        bias: biases in the four linear maps (BERT, GPT-2: yes; Llama: no).
        dropout: dropout on the attention weights (training mode only).
        qk_transform: optional ``f(q, k, positions) -> (q, k)`` applied to the heads with the
            **absolute** positions ``(n,)`` of the queries; rotary embeddings plug in here.
        d_head: width of each head (default ``d_model / num_heads``; Qwen3 sets it apart, HF's
            ``head_dim``).
        qk_norm: an RMSNorm over each head's ``d_head`` features of the queries and of the keys,
            before ``qk_transform`` (QK-norm: Qwen3, Gemma 3, OLMo 2), with epsilon ``norm_eps``.
        window: a sliding window (causal self-attention only): query ``i`` sees keys ``j`` with
            ``0 <= i - j < window`` (:func:`sliding_window_mask`); :meth:`new_cache` then makes
            a :class:`SlidingWindowKVCache` that keeps only the last ``window`` positions.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        qk_transform: QKTransform | None = None,
        d_head: int | None = None,
        qk_norm: bool = False,
        norm_eps: float = 1e-6,
        window: int | None = None,
    ):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_head is None:
            check_heads(d_model, num_heads, num_kv_heads)
        else:
            check_heads(num_heads, num_kv_heads, names=("num_heads", "num_kv_heads"))
            check_positive_int(d_model, "d_model")
            check_positive_int(d_head, "d_head")
        bias = check_flag(bias, "bias")
        if qk_transform is not None and not callable(qk_transform):
            raise TypeError(
                f"qk_transform must be callable or None, got {type(qk_transform).__name__}"
            )
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_head = d_model // num_heads if d_head is None else d_head
        self.w_q = nn.Linear(d_model, num_heads * self.d_head, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.w_o = nn.Linear(num_heads * self.d_head, d_model, bias=bias)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self.qk_transform = qk_transform
        norm_eps = check_eps(norm_eps, "norm_eps")
        if check_flag(qk_norm, "qk_norm"):
            self.q_norm = RMSNorm(self.d_head, norm_eps)  # over each head's d_head features
            self.k_norm = RMSNorm(self.d_head, norm_eps)
        self.qk_norm = qk_norm
        self.window = None if window is None else check_window(window)
        self.attention_weights: torch.Tensor | None = None
        self.checks = True  # off inside a model whose forward has checked its input

    def new_cache(self) -> LayerKVCache:
        """An empty cache for this layer: a ring buffer of ``window`` positions when the layer
        has a sliding window, else one that keeps every position."""
        return LayerKVCache() if self.window is None else SlidingWindowKVCache(self.window)

    def split_heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        b, n, _ = x.shape  # (B, n, heads * d_head) -> (B, heads, n, d_head)
        return x.view(b, n, heads, self.d_head).transpose(1, 2)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        cache: LayerKVCache | None = None,
    ) -> torch.Tensor:
        """Attend from ``query (B, n_q, d_model)`` to ``key``/``value (B, n_k, d_model)``
        (self-attention when they are None); returns ``(B, n_q, d_model)``.

        ``mask``: boolean, True = may attend, ``(n_q, n_k)``, ``(B, n_q or 1, n_k)`` (e.g. a
        padding mask ``(B, 1, n_k)``) or ``(B, heads, n_q, n_k)``. ``causal``: query ``i`` sees
        keys ``<= i`` (self-attention). ``cache``: a :class:`LayerKVCache` extended in place;
        the queries then sit at positions ``len(cache), len(cache) + 1, ...``.
        """
        if self.checks:
            self._check_inputs(query, key, value, mask, causal, cache)
        key = query if key is None else key
        value = key if value is None else value
        b, n_q, _ = query.shape
        start = 0 if cache is None else len(cache)
        q = self.split_heads(self.w_q(query), self.num_heads)  # (B, nh, n_q, d_head)
        k = self.split_heads(self.w_k(key), self.num_kv_heads)  # (B, n_kv, n_k, d_head)
        v = self.split_heads(self.w_v(value), self.num_kv_heads)  # (B, n_kv, n_k, d_head)
        if self.qk_norm:  # RMSNorm of each head's query and key, before RoPE
            q, k = self.q_norm(q), self.k_norm(k)  # (B, nh, n_q, d_head), (B, n_kv, n_k, d_head)
        if self.qk_transform is not None:
            q, k = self.qk_transform(q, k, torch.arange(start, start + n_q, device=q.device))
        if cache is not None:
            k, v = cache.append(k, v)  # (B, n_kv, n_seen, d_head): all, or the window's
        n_seen = k.shape[-2]
        groups = self.num_heads // self.num_kv_heads  # query heads per key/value head
        k = k.repeat_interleave(groups, dim=1)  # (B, nh, n_seen, d_head)
        v = v.repeat_interleave(groups, dim=1)  # (B, nh, n_seen, d_head)
        if mask is not None and mask.ndim == 3:
            mask = mask[:, None]  # (B, 1, n_q or 1, n_k): the same for every head
        if causal and self.window is not None:
            future = sliding_window_mask(start, n_q, self.window, n_seen).to(query.device)
            mask = future if mask is None else mask & future
        elif causal:
            future = causal_mask_from(start, n_q, query.device)  # (n_q, n_seen)
            mask = future if mask is None else mask & future
        out, weights = attend(q, k, v, mask, self.dropout)  # (B, nh, n_q, d_head)
        self.attention_weights = weights.detach()  # (B, nh, n_q, n_seen)
        self.attention_weights.attention_layout = "batch"  # for viz: axis 0 is the batch
        out = out.transpose(1, 2).reshape(b, n_q, self.num_heads * self.d_head)  # (B, n_q, d)
        return self.w_o(out)

    def _check_inputs(self, query, key, value, mask, causal, cache) -> None:
        """The door's checks: shapes, the mask, the cache (a model checks once for all layers)."""
        check_features(query, "query", self.d_model, like=self)
        check_flag(causal, "causal")
        if self.window is not None and not causal:
            raise ValueError(
                f"window={self.window} needs causal=True (a sliding window looks back only)"
            )
        key = query if key is None else check_features(key, "key", self.d_model, like=self)
        value = key if value is None else check_features(value, "value", self.d_model, like=self)
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(
                "query (batch, n_q, d), key and value (batch, n_k, d) must share the batch "
                "size, and key and value the length n_k: got query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        if key.shape[1] == 0 or query.shape[1] == 0:
            raise ValueError(
                f"query and key need at least one position each, got query {tuple(query.shape)}"
                f" and key {tuple(key.shape)}: a softmax over no key has no weights"
            )
        if causal and key is not query:
            raise ValueError("causal=True is for self-attention: call it without key and value")
        if cache is not None:
            if not isinstance(cache, LayerKVCache):
                raise TypeError(
                    f"cache must be a LayerKVCache or None, got {type(cache).__name__} "
                    "(a model passes cache.layer(i) of its KVCache)"
                )
            if key is not query:
                raise ValueError("cache is for self-attention: call it without key and value")
            if mask is not None:
                raise ValueError("mask and cache together are not supported; use causal=True")
            if isinstance(cache, SlidingWindowKVCache) and cache.window != self.window:
                raise ValueError(
                    f"cache keeps a window of {cache.window} positions but this layer's window "
                    f"is {self.window}: use layer.new_cache()"
                )
            cache.check_fits(query.shape[0], self.num_kv_heads, self.d_head)
        if self.qk_transform is not None and key is not query:
            raise ValueError("qk_transform needs self-attention (positions of queries = keys)")
        n_k = key.shape[1] + (0 if cache is None else len(cache))
        if self.window is not None and mask is not None:
            raise ValueError("mask and window together are not supported; use causal=True")
        check_mask(mask, query.shape[0], self.num_heads, query.shape[1], n_k)


def check_mask(mask, batch: int, heads: int, n_q: int, n_k: int, name: str = "mask") -> None:
    """Refuse a mask that is not boolean, does not broadcast to ``(batch, heads, n_q, n_k)`` as
    2-D ``(n_q, n_k)``, 3-D ``(batch, n_q or 1, n_k)`` or 4-D, or hides every key from a query
    (its softmax would be 0/0)."""
    if mask is None:
        return
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
    if mask.ndim not in expected:
        raise ValueError(
            f"{name} must be 2-D (n_q, n_k), 3-D (batch, n_q or 1, n_k) or 4-D "
            f"(batch, heads, n_q, n_k), got shape {tuple(mask.shape)}"
        )
    m = mask[None, None] if mask.ndim == 2 else mask[:, None] if mask.ndim == 3 else mask
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
