"""Grouped-query attention (GQA, Ainslie et al. 2023): fewer key/value heads than query heads.

Multi-head attention (lecture 03) gives every one of the ``num_heads`` query heads its own key
and value head. GQA keeps ``num_heads`` query heads but only ``num_kv_heads`` key/value heads;
query heads ``j * g .. (j + 1) * g - 1`` (``g = num_heads / num_kv_heads``) all read key/value
head ``j``. Two special cases:

* ``num_kv_heads == num_heads``: plain multi-head attention;
* ``num_kv_heads == 1``: multi-query attention (MQA, Shazeer 2019), one K/V for all heads.

What it saves: the ``W_K``/``W_V`` parameters and, above all, the **KV cache** a decoder keeps
while it generates (:func:`kv_cache_bytes`), which is proportional to ``num_kv_heads``.
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import as_float_array, check_flag, check_heads, check_positive_int

__all__ = ["repeat_kv", "attention_parameter_count", "kv_cache_bytes"]


def repeat_kv(kv: np.ndarray, groups: int) -> np.ndarray:
    """Repeat each key/value head ``groups`` times, for the query heads of its group.

    Args:
        kv: keys or values ``(..., num_kv_heads, n, head_dim)``.
        groups: query heads per key/value head, ``num_heads // num_kv_heads``.

    Returns:
        ``(..., num_kv_heads * groups, n, head_dim)`` where output head ``h`` is input head
        ``h // groups``: each head repeated *in place* (``[k0, k0, k1, k1]``, not
        ``[k0, k1, k0, k1]``), as ``transformers``' ``repeat_kv(hidden_states, n_rep)`` and
        torch's ``repeat_interleave`` inside :class:`course_lib.nn.MultiHeadAttention`.

    Raises:
        ValueError: ``kv`` has fewer than 3 axes.
    """
    groups = check_positive_int(groups, "groups")
    kv = as_float_array(kv, "kv")
    if kv.ndim < 3:
        raise ValueError(
            f"kv must have shape (..., num_kv_heads, n, head_dim), got {tuple(kv.shape)}"
        )
    return np.repeat(kv, groups, axis=-3)  # (..., num_kv_heads * groups, n, head_dim)


def attention_parameter_count(
    d_model: int, num_heads: int, num_kv_heads: int, head_dim: int | None = None,
    bias: bool = False,
) -> int:  # fmt: skip
    """Parameters of one (grouped-query) attention layer.

    ``W_Q``: ``d_model x num_heads * head_dim``; ``W_K``, ``W_V``: ``d_model x num_kv_heads *
    head_dim`` each; ``W_O``: ``num_heads * head_dim x d_model``; plus one bias per output feature
    if ``bias``. ``head_dim`` defaults to ``d_model // num_heads``. With ``num_kv_heads ==
    num_heads`` and ``head_dim = d_model / num_heads`` this is lecture 03's ``4 d^2 (+ 4 d)``.
    """
    check_positive_int(num_kv_heads, "num_kv_heads")  # check_heads reads None as "= num_heads"
    if head_dim is None:
        check_heads(d_model, num_heads, num_kv_heads)
        head_dim = d_model // num_heads
    else:
        check_heads(num_heads, num_heads, num_kv_heads)  # head_dim given: d_model is free
        check_positive_int(d_model, "d_model")
    head_dim = check_positive_int(head_dim, "head_dim")
    q_out, kv_out = num_heads * head_dim, num_kv_heads * head_dim
    weights = d_model * q_out + 2 * d_model * kv_out + q_out * d_model
    biases = q_out + 2 * kv_out + d_model if check_flag(bias, "bias") else 0
    return weights + biases


def kv_cache_bytes(
    num_layers: int, num_kv_heads: int, head_dim: int, seq_len: int, batch: int = 1,
    bytes_per_value: int = 2,
) -> int:  # fmt: skip
    """Memory of a decoder's KV cache: ``2 * num_layers * batch * num_kv_heads * seq_len *
    head_dim * bytes_per_value`` (the 2: one key and one value per token, layer and KV head).

    ``bytes_per_value``: 2 for float16/bfloat16 (how large models are served), 4 for float32.
    """
    values = [
        check_positive_int(v, name)
        for v, name in (
            (num_layers, "num_layers"), (num_kv_heads, "num_kv_heads"), (head_dim, "head_dim"),
            (seq_len, "seq_len"), (batch, "batch"), (bytes_per_value, "bytes_per_value"),
        )
    ]  # fmt: skip
    return 2 * math.prod(values)  # Python integers: exact, never overflow
