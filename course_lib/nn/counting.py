"""Parameter counts: by summing the tensors, and in closed form for the transformer stacks."""

from __future__ import annotations

from torch import nn

from .._validation import check_positive_int

__all__ = ["count_parameters", "transformer_parameter_count", "multi_head_attention_flops"]


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
    d = check_positive_int(d_model, "d_model")
    f = 4 * d if d_ff is None else check_positive_int(d_ff, "d_ff")
    n_enc = check_positive_int(num_encoder_layers, "num_encoder_layers", allow_zero=True)
    n_dec = check_positive_int(num_decoder_layers, "num_decoder_layers", allow_zero=True)
    attn = 4 * d * d + (4 * d if bias else 0)
    ffn = 2 * d * f + (f + d if bias else 0)
    norm = 2 * d if bias else d
    total = n_enc * (attn + ffn + 2 * norm) + n_dec * (2 * attn + ffn + 3 * norm)
    if final_norm:
        total += norm * ((n_enc > 0) + (n_dec > 0))
    return total


def multi_head_attention_flops(n: int, d_model: int) -> int:
    """FLOPs of one self-attention call of :class:`MultiHeadAttention` on ``n`` tokens (a
    multiply-add counts 2, biases and softmax not counted, as torch's ``FlopCounterMode``):

    * four projections ``(n, D) @ (D, D)``          -> ``4 * 2 n D^2 = 8 n D^2``
    * scores ``Q K^T`` and weights ``A V``, all heads -> ``2 * 2 n^2 D = 4 n^2 D``

    The number of heads does not appear; lecture 03 compares this with the counter.
    """
    n = check_positive_int(n, "n")
    d = check_positive_int(d_model, "d_model")
    return 8 * n * d * d + 4 * n * n * d
