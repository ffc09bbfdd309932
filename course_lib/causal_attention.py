"""Causal self-attention with a KV cache: the attention every decoder-only model reuses.

One module, :class:`CausalSelfAttention`, serves GPT-2 (lecture 11) and a Llama-style decoder:

* ``num_kv_heads`` may be smaller than ``num_heads`` (grouped-query attention): each key/value
  head is shared by ``num_heads / num_kv_heads`` query heads (:func:`repeat_kv`);
* ``qk_transform(q, k, positions)`` is an optional hook that changes queries and keys given
  their **absolute** positions before the scores are taken (rotary embeddings plug in here);
* a :class:`KVCache` keeps, per layer, the keys and values of the positions already seen, so
  generating one more token costs one query row instead of recomputing the whole prefix.

The computation reads like the board::

    q, k, v = x W_q, x W_k, x W_v               split into heads
    scores  = q k^T / sqrt(d_head)              (batch, heads, n_new, n_seen)
    scores[j > i] = -inf                        causal mask: query i sees keys 0..i
    out     = softmax(scores) v, heads concatenated, then W_o

With a cache, the ``n_new`` queries sit at positions ``start .. start + n_new - 1`` where
``start`` is the number of positions cached before the call; the keys are the cached ones plus
the new ones. The cache stores keys *after* ``qk_transform`` and *before* :func:`repeat_kv`
(GQA's memory saving is in the cache).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ._validation import check_features, check_positive_int, check_tensor
from .grouped_query import repeat_kv  # one repeat_kv for the course (numpy and torch)

__all__ = ["KVCache", "LayerKVCache", "CausalSelfAttention", "causal_mask_from"]

QKTransform = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]
]


class LayerKVCache:
    """The keys and values one attention layer has seen: ``(batch, kv_heads, n_seen, d_head)``.

    ``len(cache)`` is ``n_seen``; :meth:`append` adds the new positions and returns all of them.
    """

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add ``k``, ``v`` ``(batch, kv_heads, n_new, d_head)``; return the keys and values of
        every position seen so far ``(batch, kv_heads, n_seen + n_new, d_head)``."""
        layout = "(batch, kv_heads, n_new, d_head)"
        check_tensor(k, "k", 4, layout)
        if not isinstance(v, torch.Tensor) or v.shape != k.shape:
            got = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
            raise ValueError(f"v must have the shape of k {tuple(k.shape)}, got {got}")
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            if k.shape[:2] != self.keys.shape[:2] or k.shape[-1] != self.keys.shape[-1]:
                raise ValueError(
                    f"the cache holds keys of shape {tuple(self.keys.shape)} (batch, kv_heads, "
                    f"n_seen, d_head); new keys of shape {tuple(k.shape)} do not fit"
                )
            self.keys = torch.cat([self.keys, k], dim=-2)  # (B, n_kv, n_seen + n_new, hs)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values


class KVCache:
    """Keys and values of every layer of a decoder, for the positions processed so far.

    Create an empty one and pass it to a model's ``forward(ids, cache=cache)``; the model fills
    it in place (layer ``i`` uses ``cache.layer(i)``, created on first use). The next call then
    only needs the new tokens: they are placed at positions ``len(cache), len(cache) + 1, ...``.

    Memory: ``2 * layers * n * kv_heads * d_head`` numbers per sequence (keys and values), i.e.
    ``2 * layers * n * d_model`` without GQA (:meth:`numel` counts them).
    """

    def __init__(self) -> None:
        self.layers: list[LayerKVCache] = []

    def layer(self, index: int) -> LayerKVCache:
        """The cache of layer ``index`` (0-based), created if it is the next one."""
        index = check_positive_int(index, "index", allow_zero=True)
        if index == len(self.layers):
            self.layers.append(LayerKVCache())
        if not 0 <= index < len(self.layers):
            raise IndexError(
                f"layer {index}: the cache has {len(self.layers)} layers; layers are filled in "
                "order 0, 1, 2, ..."
            )
        return self.layers[index]

    def __len__(self) -> int:
        """Number of positions cached (those of layer 0; every layer holds the same after a call)."""
        return len(self.layers[0]) if self.layers else 0

    def numel(self) -> int:
        """How many numbers the cache holds (keys and values of all layers and sequences)."""
        return sum(c.keys.numel() + c.values.numel() for c in self.layers if c.keys is not None)

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.layers)}, positions={len(self)})"


def causal_mask_from(
    start: int, n_new: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Boolean mask ``(n_new, start + n_new)``, True = may attend: the query at absolute position
    ``start + i`` sees the keys at positions ``0 .. start + i``."""
    start = check_positive_int(start, "start", allow_zero=True)
    n_new = check_positive_int(n_new, "n_new")
    return torch.ones(n_new, start + n_new, dtype=torch.bool, device=device).tril(diagonal=start)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with an optional KV cache and grouped-query attention.

    Args:
        d_model: width of the input and output.
        num_heads: query heads; ``d_head = d_model / num_heads``.
        num_kv_heads: key/value heads (default ``num_heads``; must divide ``num_heads``).
            With fewer, each key/value head serves ``num_heads / num_kv_heads`` query heads.
        bias: biases in the four linear maps (GPT-2: yes; Llama: no).
        dropout: dropout on the attention weights (training only).
        qk_transform: optional ``f(q, k, positions) -> (q, k)`` applied to the heads
            ``q (B, num_heads, n, hs)``, ``k (B, num_kv_heads, n, hs)`` with ``positions (n,)``
            the absolute positions (long); rotary position embeddings plug in here.

    ``forward(x, cache=None)``: ``x (B, n, d_model) -> (B, n, d_model)``; a
    :class:`LayerKVCache` is extended in place with this call's keys and values.
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
    ):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        num_heads = check_positive_int(num_heads, "num_heads")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        num_kv_heads = check_positive_int(num_kv_heads, "num_kv_heads")
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}; each head gets "
                "d_model / num_heads features"
            )
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads} (each key/value "
                "head serves the same number of query heads)"
            )
        if (
            not isinstance(dropout, (int, float))
            or isinstance(dropout, bool)
            or not 0 <= dropout < 1
        ):
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        if qk_transform is not None and not callable(qk_transform):
            raise TypeError(
                f"qk_transform must be callable or None, got {type(qk_transform).__name__}"
            )
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, num_heads * self.d_head, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=bias)
        self.w_o = nn.Linear(num_heads * self.d_head, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.qk_transform = qk_transform

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        b, n, _ = x.shape  # (B, n, heads*hs) -> (B, heads, n, hs)
        return x.view(b, n, heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, cache: LayerKVCache | None = None) -> torch.Tensor:
        """``x (B, n_new, d_model)`` -> ``(B, n_new, d_model)``; ``cache`` is updated in place."""
        check_features(x, "x", self.d_model)
        if cache is not None and not isinstance(cache, LayerKVCache):
            raise TypeError(
                f"cache must be a LayerKVCache or None, got {type(cache).__name__} "
                "(a model passes cache.layer(i) of its KVCache)"
            )
        b, n_new, _ = x.shape
        start = 0 if cache is None else len(cache)
        q = self._heads(self.w_q(x), self.num_heads)  # (B, nh, n_new, hs)
        k = self._heads(self.w_k(x), self.num_kv_heads)  # (B, n_kv, n_new, hs)
        v = self._heads(self.w_v(x), self.num_kv_heads)  # (B, n_kv, n_new, hs)
        if self.qk_transform is not None:
            positions = torch.arange(start, start + n_new, device=x.device)
            q, k = self.qk_transform(q, k, positions)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, n_kv, start + n_new, hs)
        groups = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (B, nh, n_seen, hs)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, nh, n_new, n_seen)
        mask = causal_mask_from(start, n_new, x.device)  # (n_new, n_seen)
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = self.dropout(weights) @ v  # (B, nh, n_new, hs)
        out = out.transpose(1, 2).reshape(b, n_new, self.num_heads * self.d_head)
        return self.w_o(out)
