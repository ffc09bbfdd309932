"""Transformer building blocks in torch (batch first), the ones every later model reuses.

One idea per module:

* :mod:`.attention` — :class:`MultiHeadAttention` and :func:`attention_mask`, which brings a
  2-D/3-D/4-D boolean mask (True = may attend) to the scores' shape.
* :mod:`.feedforward` — :class:`FeedForward` with ``activation`` relu / gelu / gelu_new.
* :mod:`.residual` — :func:`residual`, the one post-LN / pre-LN wrapper around a sublayer.
* :mod:`.blocks` — :class:`EncoderLayer` and :class:`DecoderLayer`.
* :mod:`.stacks` — :class:`Encoder` and :class:`Decoder`.
* :mod:`.counting` — :func:`count_parameters` and the closed-form
  :func:`transformer_parameter_count`.
* :mod:`.from_torch` — copy torch's modules into these (each class's ``from_torch``).

Masks are boolean with **True = may attend** (torch SDPA's convention); ``torch.nn``'s layers
use the opposite convention for boolean masks, so convert with ``~mask`` at the boundary.
``from course_lib.layers import MultiHeadAttention, EncoderLayer, ...`` keeps working.
"""

# attention_mask, causal_mask_torch and ACTIVATIONS: for course_lib.layers users, not top level
from .attention import MultiHeadAttention, attention_mask, causal_mask_torch  # noqa: F401
from .blocks import DecoderLayer, EncoderLayer
from .counting import count_parameters, multi_head_attention_flops, transformer_parameter_count
from .feedforward import ACTIVATIONS, FeedForward  # noqa: F401
from .residual import residual
from .stacks import Decoder, Encoder

__all__ = [
    "MultiHeadAttention",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "FeedForward",
    "residual",
    "count_parameters",
    "transformer_parameter_count",
    "multi_head_attention_flops",
]
