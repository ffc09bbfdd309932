"""Transformer building blocks in torch (batch first), the ones every later model reuses.

* :class:`MultiHeadAttention` — ``Concat(head_1..head_h) W_O`` with per-head weights returned.
* :class:`EncoderLayer` — post-LN as in the notes: ``X' = LayerNorm(X + MHA(X))``,
  ``X'' = LayerNorm(X' + FFN(X'))``; ``norm_first=True`` gives the pre-LN variant
  ``X' = X + MHA(LN(X))``, ``X'' = X' + FFN(LN(X'))``.
* :class:`DecoderLayer` — causal self-attention, encoder–decoder cross-attention, FFN.
* :class:`Encoder` / :class:`Decoder` — stacks of layers.
* Parameter counts: :func:`count_parameters` (by summing tensors) and the closed-form
  :func:`transformer_parameter_count`.

Masks are boolean with **True = may attend** (torch SDPA's convention). ``torch.nn``'s
``MultiheadAttention`` / ``Transformer*Layer`` use the **opposite** convention for boolean
``attn_mask`` / ``key_padding_mask`` (True = masked out); convert with ``~mask`` at the
boundary. Each class has a ``from_torch`` that copies the weights of the matching torch
module, so the tests can hold these classes against torch to 1e-6.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MultiHeadAttention",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "count_parameters",
    "transformer_parameter_count",
]


def _check_int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


def _check_heads(d_model: int, num_heads: int) -> None:
    _check_int(d_model, "d_model")
    _check_int(num_heads, "num_heads")
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}; each head gets "
            "d_model / num_heads features"
        )


def _check_input(x, name: str, d_model: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 3 or x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (batch, n, d_model={d_model}), got {tuple(x.shape)}"
        )
    return x


def _check_dropout(p) -> float:
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout must be a probability in [0, 1), got {p!r}")
    return float(p)


def _attention_mask(mask, batch: int, heads: int, n_q: int, n_k: int, name: str = "mask"):
    """Bring a boolean mask (True = may attend) to a shape that broadcasts to
    ``(batch, heads, n_q, n_k)``:

    * 2-D ``(n_q, n_k)``: the same for every sequence (e.g. a causal mask);
    * 3-D ``(batch, n_q or 1, n_k)``: per sequence, e.g. ``padding_mask`` -> ``(batch, 1, n_k)``;
    * 4-D ``(batch, heads, n_q, n_k)``, any axis may be 1: used as it is.
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


class MultiHeadAttention(nn.Module):
    """``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O``, batch first.

    Four ``d_model x d_model`` linear maps: ``w_q``, ``w_k``, ``w_v`` project, then the
    projected features are cut into ``num_heads`` heads of ``d_head = d_model / num_heads``;
    each head runs scaled dot-product attention; the heads are concatenated and ``w_o``
    mixes them. ``self.last_weights`` keeps the weights of the latest call (detached).

    Args:
        d_model: feature width of inputs and output.
        num_heads: number of heads; must divide ``d_model``.
        bias: whether the four linear maps have biases.
        dropout: dropout on the attention weights (training mode only).
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        _check_heads(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(_check_dropout(dropout))
        self.last_weights: torch.Tensor | None = None

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape  # (batch, n, d_model) -> (batch, heads, n, d_head)
        return x.view(b, n, self.num_heads, self.d_head).transpose(1, 2)

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
        _check_input(query, "query", self.d_model)
        _check_input(key, "key", self.d_model)
        _check_input(value, "value", self.d_model)
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(
                "query (batch, n_q, d), key and value (batch, n_k, d) must share the batch "
                "size, and key and value the length n_k: got query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        batch, n_q, n_k = query.shape[0], query.shape[1], key.shape[1]
        m = _attention_mask(mask, batch, self.num_heads, n_q, n_k)
        q = self._split(self.w_q(query))
        k = self._split(self.w_k(key))
        v = self._split(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, heads, n_q, n_k)
        if m is not None:
            scores = scores.masked_fill(~m, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        heads = self.dropout(weights) @ v  # (batch, heads, n_q, d_head)
        concat = heads.transpose(1, 2).reshape(batch, n_q, self.d_model)
        self.last_weights = weights.detach()
        return self.w_o(concat), weights

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a ``torch.nn.MultiheadAttention`` into a new instance.

        torch stacks the three input projections as ``in_proj_weight = [W_q; W_k; W_v]``
        ``(3 d_model, d_model)``, applied as ``x @ W.T + b`` — exactly ``nn.Linear``'s layout.
        The copy computes the same function; call it with **batch-first** tensors, and give
        it masks with True = may attend, i.e. ``~key_padding_mask`` of torch.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"expected torch.nn.MultiheadAttention, got {type(module).__name__}")
        if not module._qkv_same_embed_dim or module.bias_k is not None or module.add_zero_attn:
            raise ValueError(
                "only nn.MultiheadAttention with kdim = vdim = embed_dim, add_bias_kv=False "
                "and add_zero_attn=False can be copied"
            )
        bias = module.in_proj_bias is not None
        ref = module.in_proj_weight
        new = cls(module.embed_dim, module.num_heads, bias=bias, dropout=module.dropout)
        new = new.to(dtype=ref.dtype, device=ref.device)
        with torch.no_grad():
            for lin, w in zip((new.w_q, new.w_k, new.w_v), ref.chunk(3, dim=0), strict=True):
                lin.weight.copy_(w)
            new.w_o.weight.copy_(module.out_proj.weight)
            if bias:
                for lin, b in zip(
                    (new.w_q, new.w_k, new.w_v), module.in_proj_bias.chunk(3), strict=True
                ):
                    lin.bias.copy_(b)
                new.w_o.bias.copy_(module.out_proj.bias)
        return new


class _FeedForward(nn.Module):
    """Position-wise FFN: ``linear2(dropout(ReLU(linear1(x))))``, widening d_model -> d_ff -> d_model."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, bias: bool):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


def _copy_linear(dst: nn.Linear, src: nn.Linear) -> None:
    dst.weight.copy_(src.weight)
    if src.bias is not None:
        dst.bias.copy_(src.bias)


def _copy_norm(dst: nn.LayerNorm, src: nn.LayerNorm) -> None:
    dst.weight.copy_(src.weight)
    if src.bias is not None:
        dst.bias.copy_(src.bias)


def _torch_layer_settings(module, kind) -> dict:
    if not isinstance(module, kind):
        raise TypeError(f"expected torch.nn.{kind.__name__}, got {type(module).__name__}")
    act = getattr(module, "activation", None)
    if not (act is F.relu or isinstance(act, nn.ReLU)):
        raise ValueError(f"only activation='relu' can be copied, got {act!r}")
    return {
        "d_model": module.linear1.in_features,
        "num_heads": module.self_attn.num_heads,
        "d_ff": module.linear1.out_features,
        "dropout": module.dropout.p,
        "norm_first": bool(module.norm_first),
        "bias": module.linear1.bias is not None,
        "layer_norm_eps": module.norm1.eps,
    }


class EncoderLayer(nn.Module):
    """One transformer encoder layer: self-attention and FFN, each with residual + LayerNorm.

    Post-LN (default, as in the notes and the 2017 paper)::

        x = norm1(x + dropout(self_attn(x, x, x)))
        x = norm2(x + dropout(ffn(x)))

    Pre-LN (``norm_first=True``; trains more stably in deep stacks)::

        x = x + dropout(self_attn(norm1(x)))
        x = x + dropout(ffn(norm2(x)))

    Args:
        d_model, num_heads: as for :class:`MultiHeadAttention`.
        d_ff: width of the FFN's hidden layer; default ``4 * d_model``.
        dropout: after attention, inside the FFN and after it (training only).
        norm_first: pre-LN instead of post-LN.
        bias: biases in the linear maps and LayerNorms.
        layer_norm_eps: epsilon of the LayerNorms (torch's default 1e-5).

    ``self.attn_weights`` holds the last call's attention weights ``(batch, heads, n, n)``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        _check_heads(d_model, num_heads)
        d_ff = 4 * d_model if d_ff is None else _check_int(d_ff, "d_ff")
        dropout = _check_dropout(dropout)
        self.d_model, self.num_heads, self.d_ff = d_model, num_heads, d_ff
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = _FeedForward(d_model, d_ff, dropout, bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def _sa(self, x: torch.Tensor, mask) -> torch.Tensor:
        out, weights = self.self_attn(x, x, x, mask)
        self.attn_weights = weights.detach()
        return self.dropout1(out)

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        """x ``(batch, n, d_model)`` -> ``(batch, n, d_model)``; mask as in
        :meth:`MultiHeadAttention.forward` (True = may attend), e.g. a padding mask."""
        _check_input(x, "x", self.d_model)
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            x = self.norm1(x + self._sa(x, mask))
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Copy a ``torch.nn.TransformerEncoderLayer`` (ReLU activation) into a new instance.

        Call the copy with batch-first input; torch's ``src_key_padding_mask`` (True =
        padding) becomes ``mask = ~src_key_padding_mask[:, None, :]`` here.
        """
        s = _torch_layer_settings(module, nn.TransformerEncoderLayer)
        ref = module.linear1.weight
        new = cls(s["d_model"], s["num_heads"], s["d_ff"], s["dropout"], s["norm_first"],
                  bias=s["bias"], layer_norm_eps=s["layer_norm_eps"])  # fmt: skip
        new = new.to(dtype=ref.dtype, device=ref.device)
        new.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        with torch.no_grad():
            _copy_linear(new.ffn.linear1, module.linear1)
            _copy_linear(new.ffn.linear2, module.linear2)
            _copy_norm(new.norm1, module.norm1)
            _copy_norm(new.norm2, module.norm2)
        return new


def _causal(n: int, device) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


class DecoderLayer(nn.Module):
    """One transformer decoder layer: causal self-attention, cross-attention to the encoder's
    output (``memory``), FFN; each with residual + LayerNorm (post-LN or pre-LN as in
    :class:`EncoderLayer`).

    Post-LN::

        x = norm1(x + self_attn(x, x, x, causal & self_mask))
        x = norm2(x + cross_attn(x, memory, memory, memory_mask))
        x = norm3(x + ffn(x))

    ``self.self_attn_weights`` ``(batch, heads, n, n)`` and ``self.cross_attn_weights``
    ``(batch, heads, n, n_memory)`` hold the last call's weights.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        _check_heads(d_model, num_heads)
        d_ff = 4 * d_model if d_ff is None else _check_int(d_ff, "d_ff")
        dropout = _check_dropout(dropout)
        self.d_model, self.num_heads, self.d_ff = d_model, num_heads, d_ff
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, bias=bias, dropout=dropout)
        self.ffn = _FeedForward(d_model, d_ff, dropout, bias)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.self_attn_weights: torch.Tensor | None = None
        self.cross_attn_weights: torch.Tensor | None = None

    def _sa(self, x, mask):
        out, w = self.self_attn(x, x, x, mask)
        self.self_attn_weights = w.detach()
        return self.dropout1(out)

    def _ca(self, x, memory, mask):
        out, w = self.cross_attn(x, memory, memory, mask)
        self.cross_attn_weights = w.detach()
        return self.dropout2(out)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask=None,
        memory_mask=None,
        *,
        causal: bool = True,
    ) -> torch.Tensor:
        """x ``(batch, n, d_model)``, memory ``(batch, n_memory, d_model)`` -> ``(batch, n, d_model)``.

        Args:
            self_mask: optional boolean (True = may attend) for self-attention, shaped as in
                :meth:`MultiHeadAttention.forward`, e.g. a target padding mask ``(batch, 1, n)``.
                With ``causal=True`` (default) it is combined (AND) with the causal mask, so
                position i never sees j > i; passing a causal mask again is harmless.
            memory_mask: optional boolean for cross-attention, e.g. the source padding mask
                ``(batch, 1, n_memory)``.
            causal: set False only for a non-autoregressive decoder.
        """
        _check_input(x, "x", self.d_model)
        _check_input(memory, "memory", self.d_model)
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                f"x {tuple(x.shape)} and memory {tuple(memory.shape)} must share the batch size"
            )
        n = x.shape[1]
        if causal:
            m = _attention_mask(self_mask, x.shape[0], self.num_heads, n, n, "self_mask")
            self_mask = _causal(n, x.device) if m is None else m & _causal(n, x.device)
        if self.norm_first:
            x = x + self._sa(self.norm1(x), self_mask)
            x = x + self._ca(self.norm2(x), memory, memory_mask)
            x = x + self.dropout3(self.ffn(self.norm3(x)))
        else:
            x = self.norm1(x + self._sa(x, self_mask))
            x = self.norm2(x + self._ca(x, memory, memory_mask))
            x = self.norm3(x + self.dropout3(self.ffn(x)))
        return x

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Copy a ``torch.nn.TransformerDecoderLayer`` (ReLU) into a new instance.

        torch calls the cross-attention ``multihead_attn``. Compare with torch called with
        ``tgt_mask=nn.Transformer.generate_square_subsequent_mask(n)`` (or ``tgt_is_causal``);
        torch's key padding masks (True = padding) become ``~mask[:, None, :]`` here.
        """
        s = _torch_layer_settings(module, nn.TransformerDecoderLayer)
        ref = module.linear1.weight
        new = cls(s["d_model"], s["num_heads"], s["d_ff"], s["dropout"], s["norm_first"],
                  bias=s["bias"], layer_norm_eps=s["layer_norm_eps"])  # fmt: skip
        new = new.to(dtype=ref.dtype, device=ref.device)
        new.self_attn = MultiHeadAttention.from_torch(module.self_attn)
        new.cross_attn = MultiHeadAttention.from_torch(module.multihead_attn)
        with torch.no_grad():
            _copy_linear(new.ffn.linear1, module.linear1)
            _copy_linear(new.ffn.linear2, module.linear2)
            for i in (1, 2, 3):
                _copy_norm(getattr(new, f"norm{i}"), getattr(module, f"norm{i}"))
        return new


class _Stack(nn.Module):
    """What :class:`Encoder` and :class:`Decoder` share: ``num_layers`` copies of one layer class
    and an optional final LayerNorm (on by default for pre-LN stacks, as in torch)."""

    layer_class: type[nn.Module]
    torch_class: type[nn.Module]

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = False,
        *,
        final_norm: bool | None = None,
        bias: bool = True,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        _check_int(num_layers, "num_layers")
        self.layers = nn.ModuleList(
            self.layer_class(
                d_model, num_heads, d_ff, dropout, norm_first, bias=bias,
                layer_norm_eps=layer_norm_eps,
            )
            for _ in range(num_layers)
        )  # fmt: skip
        final_norm = norm_first if final_norm is None else final_norm
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias) if final_norm else None

    @classmethod
    def from_torch(cls, module):
        """Copy a torch stack of the matching kind (its layers and optional final ``norm``)."""
        if not isinstance(module, cls.torch_class):
            raise TypeError(
                f"expected torch.nn.{cls.torch_class.__name__}, got {type(module).__name__}"
            )
        layers = [cls.layer_class.from_torch(layer) for layer in module.layers]
        first = layers[0]
        new = cls(len(layers), first.d_model, first.num_heads, first.d_ff,
                  final_norm=module.norm is not None)  # fmt: skip
        new.layers = nn.ModuleList(layers)
        if module.norm is not None:
            new.norm = nn.LayerNorm(first.d_model, eps=module.norm.eps,
                                    bias=module.norm.bias is not None)  # fmt: skip
            new.norm = new.norm.to(dtype=module.norm.weight.dtype)
            with torch.no_grad():
                _copy_norm(new.norm, module.norm)
        return new


class Encoder(_Stack):
    """A stack of ``num_layers`` :class:`EncoderLayer` s (layers in series, each with its own
    weights). With ``norm_first=True`` a final LayerNorm follows the stack (pre-LN layers
    leave their output un-normalised); ``final_norm`` overrides that choice.

    ``forward(x, mask=None)``: ``(batch, n, d_model)`` -> ``(batch, n, d_model)``.
    :attr:`attn_weights` lists each layer's last weights ``(batch, heads, n, n)``.
    """

    layer_class = EncoderLayer
    torch_class = nn.TransformerEncoder

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)

    @property
    def attn_weights(self) -> list[torch.Tensor | None]:
        return [layer.attn_weights for layer in self.layers]

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoder) -> Encoder:
        """Copy a ``torch.nn.TransformerEncoder`` (its layers and optional final ``norm``).

        Build the torch stack with ``enable_nested_tensor=False`` when comparing: otherwise
        torch's fast path returns zeros at padded positions in eval mode under no_grad.
        """
        return super().from_torch(module)


class Decoder(_Stack):
    """A stack of ``num_layers`` :class:`DecoderLayer` s, all attending to the same ``memory``.

    ``forward(x, memory, self_mask=None, memory_mask=None)`` -> ``(batch, n, d_model)``.
    Final LayerNorm as in :class:`Encoder`.
    """

    layer_class = DecoderLayer
    torch_class = nn.TransformerDecoder

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor, self_mask=None, memory_mask=None, *,
        causal: bool = True,
    ) -> torch.Tensor:  # fmt: skip
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask, causal=causal)
        return x if self.norm is None else self.norm(x)

    @property
    def self_attn_weights(self) -> list[torch.Tensor | None]:
        return [layer.self_attn_weights for layer in self.layers]

    @property
    def cross_attn_weights(self) -> list[torch.Tensor | None]:
        return [layer.cross_attn_weights for layer in self.layers]

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoder) -> Decoder:
        """Copy a ``torch.nn.TransformerDecoder`` (its layers and optional final ``norm``)."""
        return super().from_torch(module)


def count_parameters(module: nn.Module, trainable_only: bool = False) -> int:
    """Number of scalar parameters: ``sum(p.numel() for p in module.parameters())``."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def transformer_parameter_count(
    d_model: int,
    d_ff: int | None = None,
    *,
    num_encoder_layers: int = 0,
    num_decoder_layers: int = 0,
    bias: bool = True,
    final_norm: bool = False,
) -> int:
    """Closed-form parameter count of :class:`Encoder`/:class:`Decoder` stacks (no embeddings).

    With D = d_model, F = d_ff (default 4D) and biases:

    * attention: 4 maps of D x D + 4 biases of D         -> ``4 D^2 + 4 D``
    * FFN: D x F + F, then F x D + D                      -> ``2 D F + F + D``
    * LayerNorm: gain and shift                           -> ``2 D``
    * encoder layer = attention + FFN + 2 LayerNorms; decoder layer = 2 attentions + FFN + 3.

    The number of heads does not appear: splitting D into heads only reshapes.
    ``final_norm`` adds one LayerNorm per non-empty stack.
    """
    d = _check_int(d_model, "d_model")
    f = 4 * d if d_ff is None else _check_int(d_ff, "d_ff")
    n_enc = _check_int(num_encoder_layers, "num_encoder_layers", low=0)
    n_dec = _check_int(num_decoder_layers, "num_decoder_layers", low=0)
    attn = 4 * d * d + (4 * d if bias else 0)
    ffn = 2 * d * f + (f + d if bias else 0)
    norm = 2 * d if bias else d
    total = n_enc * (attn + ffn + 2 * norm) + n_dec * (2 * attn + ffn + 3 * norm)
    if final_norm:
        total += norm * ((n_enc > 0) + (n_dec > 0))
    return total
