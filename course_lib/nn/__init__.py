"""The torch building blocks, one home (batch first). One idea per module:

* :mod:`.attention` — :class:`MultiHeadAttention` (self or cross, causal, KV cache, grouped
  key/value heads, a ``qk_transform`` hook for RoPE, QK-norm, a sliding window, stored
  ``attention_weights``), its core :func:`attend`, :func:`causal_mask_from` and
  :func:`sliding_window_mask`.
* :mod:`.cache` — :class:`KVCache`, :class:`LayerKVCache` and the ring buffer of a sliding
  window, :class:`SlidingWindowKVCache` (lecture 16).
* :mod:`.moe` — mixture of experts: :class:`Router` (:func:`softmax_top_k`,
  :func:`sigmoid_top_k`), :class:`MixtureOfExperts`, :func:`load_balancing_loss` (lecture 16).
* :mod:`.latent_attention` — :class:`MultiHeadLatentAttention` (DeepSeek's MLA, lecture 16).
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

from .attention import MultiHeadAttention, attend, causal_mask_from, sliding_window_mask
from .blocks import DecoderLayer, EncoderLayer
from .cache import KVCache, LayerKVCache, SlidingWindowKVCache
from .counting import count_parameters, multi_head_attention_flops, transformer_parameter_count
from .feedforward import FeedForward, SwiGLUFeedForward, swiglu_hidden_size
from .latent_attention import MultiHeadLatentAttention
from .modes import eval_mode
from .moe import MixtureOfExperts, Router, load_balancing_loss, sigmoid_top_k, softmax_top_k
from .norms import RMSNorm
from .residual import residual
from .rope import rope_qk
from .stacks import Decoder, Encoder

__all__ = [
    "MultiHeadAttention",
    "attend",
    "causal_mask_from",
    "sliding_window_mask",
    "KVCache",
    "LayerKVCache",
    "SlidingWindowKVCache",
    "MultiHeadLatentAttention",
    "MixtureOfExperts",
    "Router",
    "softmax_top_k",
    "sigmoid_top_k",
    "load_balancing_loss",
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
