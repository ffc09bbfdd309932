"""The KV cache: the keys and values a decoder has already computed, kept for the next token.

Generating token ``t + 1`` needs the keys and values of positions ``0..t``; they do not change
(a causal model's past never sees the future), so each attention layer keeps them and the next
call only computes one new query, key and value. The cache stores keys *after* ``qk_transform``
(RoPE) and *before* they are repeated for grouped-query attention (GQA's saving is here).
"""

from __future__ import annotations

import torch

__all__ = ["KVCache", "LayerKVCache"]


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
        every position seen so far ``(batch, kv_heads, n_seen + n_new, d_head)``. The values'
        last dimension may differ from the keys' (``d_v``); the other three must agree."""
        self._check_new(k, v)
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=-2)  # (B, n_kv, n_seen + n_new, d_head)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def crop(self, n: int) -> None:
        """Keep only the first ``n`` positions (speculative decoding drops rejected drafts)."""
        if self.keys is not None:
            self.keys, self.values = self.keys[..., :n, :], self.values[..., :n, :]

    def _check_new(self, k, v) -> None:
        """append's door: 4-D k and v that agree with each other and with the cached ones."""
        for name, t in (("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor) or t.ndim != 4:
                got = f"shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__
                raise TypeError(
                    f"{name} must be a 4-D torch.Tensor (batch, kv_heads, n_new, d_head), got {got}"
                )
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(
                f"k {tuple(k.shape)} and v {tuple(v.shape)} must agree in (batch, kv_heads, n_new)"
            )
        if self.keys is not None and (
            k.shape[:2] != self.keys.shape[:2]
            or k.shape[-1] != self.keys.shape[-1]
            or v.shape[-1] != self.values.shape[-1]
        ):
            raise ValueError(
                f"cache holds keys {tuple(self.keys.shape)} and values {tuple(self.values.shape)}; "
                f"new k {tuple(k.shape)}, v {tuple(v.shape)} do not fit (batch, kv_heads and the "
                "last dimensions must match): start a new KVCache for another model or batch"
            )

    def check_fits(self, batch: int, kv_heads: int, d_head: int) -> None:
        """Refuse new keys ``(batch, kv_heads, n_new, d_head)`` that do not fit the cached ones."""
        if self.keys is not None and (
            self.keys.shape[0] != batch
            or self.keys.shape[1] != kv_heads
            or self.keys.shape[-1] != d_head
        ):
            raise ValueError(
                f"cache holds keys of shape {tuple(self.keys.shape)} (batch, kv_heads, n_seen, "
                f"d_head); this call needs batch={batch}, kv_heads={kv_heads}, d_head={d_head}: "
                "start a new KVCache for another model or batch"
            )


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
        if (
            isinstance(index, bool)
            or not isinstance(index, int)
            or not 0 <= index <= len(self.layers)
        ):
            raise ValueError(
                f"index must be a layer number in [0, {len(self.layers)}] (layers are created in "
                f"order 0, 1, ...; this cache has {len(self.layers)}), got {index!r}"
            )
        if index == len(self.layers):
            self.layers.append(LayerKVCache())
        return self.layers[index]

    def __len__(self) -> int:
        """Number of positions cached (those of layer 0; every layer holds the same after a call)."""
        return len(self.layers[0]) if self.layers else 0

    def numel(self) -> int:
        """How many numbers the cache holds (keys and values of all layers and sequences)."""
        return sum(c.keys.numel() + c.values.numel() for c in self.layers if c.keys is not None)

    def crop(self, n: int) -> None:
        """Keep only the first ``n`` positions of every layer (as ``transformers``'
        ``DynamicCache.crop``): the cache then holds what it held after reading ``n`` tokens."""
        for layer in self.layers:
            layer.crop(n)

    def check_fits(self, num_layers: int, batch: int, kv_heads: int, d_head: int) -> None:
        """Refuse a cache filled by another model (other layer count or shapes) or batch."""
        if self.layers and len(self.layers) != num_layers:
            raise ValueError(
                f"cache holds {len(self.layers)} layers but the model has {num_layers}: a "
                "KVCache belongs to the model that filled it; start a new KVCache()"
            )
        if self.layers:
            self.layers[0].check_fits(batch, kv_heads, d_head)

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.layers)}, positions={len(self)})"
