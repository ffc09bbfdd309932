"""The KV cache's memory per token: multi-head, grouped-query, multi-query and latent attention.

Generating token ``t + 1`` re-reads the keys and values of every earlier token, so a decoder keeps
them (lecture 11's :class:`~course_lib.nn.KVCache`). Per token and layer it stores:

* **MHA / GQA / MQA**: a key and a value per key/value head, ``2 * num_kv_heads * head_dim``
  numbers (MHA: ``num_kv_heads = num_heads``; MQA: 1; GQA in between, lecture 13);
* **MLA** (multi-head latent attention, DeepSeek-V2/V3): one compressed latent of
  ``kv_lora_rank`` numbers, from which every head's key and value are re-made, plus the
  ``qk_rope_head_dim`` numbers of the one rotated key all heads share: ``kv_lora_rank +
  qk_rope_head_dim`` numbers, not ``2 * num_heads * head_dim``.

Times ``num_layers`` and the bytes per number (2 for bfloat16, how large models are served).
:data:`PUBLISHED_CONFIGS` holds the numbers of five published models, from their ``config.json``
(sources in :data:`CONFIG_SOURCES`). numpy-free, torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._validation import check_positive_int
from ..grouped_query import kv_cache_bytes

__all__ = ["kv_cache_bytes_per_token", "PUBLISHED_CONFIGS", "CONFIG_SOURCES"]

#: the attention settings of published models, as their config.json names them
PUBLISHED_CONFIGS: dict[str, dict[str, int]] = {
    "Llama 2 7B": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                       num_key_value_heads=32, head_dim=128, intermediate_size=11008,
                       vocab_size=32000),
    "Llama 3 8B": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                       num_key_value_heads=8, head_dim=128),
    "Qwen3 8B": dict(num_hidden_layers=36, hidden_size=4096, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128),
    "Gemma 3 27B": dict(num_hidden_layers=62, hidden_size=5376, num_attention_heads=32,
                        num_key_value_heads=16, head_dim=128, sliding_window=1024),
    "DeepSeek-V3": dict(num_hidden_layers=61, hidden_size=7168, num_attention_heads=128,
                        kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                        v_head_dim=128),
}  # fmt: skip
#: where each configuration's numbers come from
CONFIG_SOURCES = {
    "Llama 2 7B": "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json "
    "(also transformers' LlamaConfig defaults)",
    "Llama 3 8B": "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
    "Qwen3 8B": "https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json (model card: "
    "36 layers, 32 query and 8 KV heads)",
    "Gemma 3 27B": "https://huggingface.co/google/gemma-3-27b-it/blob/main/config.json "
    "(text_config; 5 sliding-window layers of 1024 tokens per global layer, Gemma 3 report)",
    "DeepSeek-V3": "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json "
    "(also transformers' DeepseekV3Config defaults)",
}


def _get(config, key: str, default=None):
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)


def kv_cache_bytes_per_token(config: Mapping | object, bytes_per_value: int = 2) -> int:
    """Bytes the KV cache holds per token of one sequence, for a ``transformers``-style config.

    ``config``: a mapping or an object with ``num_hidden_layers`` and either ``kv_lora_rank``
    and ``qk_rope_head_dim`` (MLA) or ``num_key_value_heads`` (default ``num_attention_heads``)
    and ``head_dim`` (default ``hidden_size // num_attention_heads``).

    MLA: ``num_layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value``; otherwise
    :func:`~course_lib.kv_cache_bytes` for one token: ``2 * num_layers * num_kv_heads *
    head_dim * bytes_per_value``. (A sliding window is not counted: it caps what its layers
    keep at ``sliding_window`` tokens, so this is the cost of each token within the window.)

    Raises:
        ValueError: a size is missing or not a positive integer.
    """
    if not isinstance(config, Mapping) and not hasattr(config, "num_hidden_layers"):
        raise TypeError(
            "config must be a mapping (or a transformers config) with num_hidden_layers, got "
            f"{type(config).__name__}"
        )
    bytes_per_value = check_positive_int(bytes_per_value, "bytes_per_value")
    layers = check_positive_int(_get(config, "num_hidden_layers"), "config.num_hidden_layers")
    if _get(config, "kv_lora_rank") is not None:  # MLA: a latent + the shared rotated key
        latent = check_positive_int(_get(config, "kv_lora_rank"), "config.kv_lora_rank")
        rope = check_positive_int(_get(config, "qk_rope_head_dim"), "config.qk_rope_head_dim")
        return layers * (latent + rope) * bytes_per_value
    heads = check_positive_int(_get(config, "num_attention_heads"), "config.num_attention_heads")
    kv_heads = _get(config, "num_key_value_heads")
    kv_heads = (
        heads if kv_heads is None else check_positive_int(kv_heads, "config.num_key_value_heads")
    )
    head_dim = _get(config, "head_dim")
    if head_dim is None:
        head_dim = check_positive_int(_get(config, "hidden_size"), "config.hidden_size") // heads
    head_dim = check_positive_int(head_dim, "config.head_dim")
    return kv_cache_bytes(layers, kv_heads, head_dim, seq_len=1, bytes_per_value=bytes_per_value)
