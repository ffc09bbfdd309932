"""The torch building blocks, one home (batch first). One idea per module:

* :mod:`.attention` — :class:`MultiHeadAttention` (self or cross, causal, KV cache, grouped
  key/value heads, a ``qk_transform`` hook for RoPE, stored ``attention_weights``), its core
  :func:`attend` and :func:`causal_mask_from`.
* :mod:`.cache` — :class:`KVCache` and :class:`LayerKVCache`.
* :mod:`.norms` — :class:`RMSNorm` (LayerNorm is torch's ``nn.LayerNorm``).
* :mod:`.feedforward` — :class:`FeedForward` (relu / gelu / gelu_new) and
  :class:`SwiGLUFeedForward`.
* :mod:`.rope` — rotary embeddings in torch (:func:`rope_qk`, the attention's hook).
* :mod:`.residual` — :func:`residual`, post-LN / pre-LN around a sublayer (lecture 05's layers).
* :mod:`.blocks`, :mod:`.stacks` — :class:`EncoderLayer`, :class:`DecoderLayer`,
  :class:`Encoder`, :class:`Decoder`.
* :mod:`.counting` — :func:`count_parameters` and closed-form counts.
* :mod:`.modes` — ``with eval_mode(model):``.

Masks are boolean with **True = may attend** (torch SDPA's convention); ``torch.nn``'s layers
use the opposite convention for boolean masks, so convert with ``~mask`` at the boundary.
Copying weights in from torch or ``transformers``: :mod:`course_lib.interop`.
"""

from .attention import MultiHeadAttention, attend, causal_mask_from
from .blocks import DecoderLayer, EncoderLayer
from .cache import KVCache, LayerKVCache
from .counting import count_parameters, multi_head_attention_flops, transformer_parameter_count
from .feedforward import FeedForward, SwiGLUFeedForward, swiglu_hidden_size
from .modes import eval_mode
from .norms import RMSNorm
from .residual import residual
from .rope import rope_qk
from .stacks import Decoder, Encoder

__all__ = [
    "MultiHeadAttention",
    "attend",
    "causal_mask_from",
    "KVCache",
    "LayerKVCache",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "FeedForward",
    "SwiGLUFeedForward",
    "swiglu_hidden_size",
    "RMSNorm",
    "residual",
    "rope_qk",
    "eval_mode",
    "count_parameters",
    "transformer_parameter_count",
    "multi_head_attention_flops",
]
