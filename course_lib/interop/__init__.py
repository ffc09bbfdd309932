"""Copy weights in from elsewhere: every ``from_torch`` and ``from_hf`` of the course, one way.

* :func:`from_torch` — ``torch.nn.MultiheadAttention``, ``TransformerEncoderLayer``,
  ``TransformerDecoderLayer``, ``TransformerEncoder``, ``TransformerDecoder`` -> the course's
  :mod:`course_lib.nn` classes (the tests hold each copy to torch to 1e-6);
* :func:`from_hf` — ``transformers``' ``GPT2LMHeadModel``/``GPT2Model`` -> :class:`GPT`,
  ``LlamaForCausalLM`` -> :class:`ModernLM`, ``BertModel`` -> :class:`BertEncoder`;
* :func:`from_gguf` — a Llama-architecture GGUF file (llama.cpp) -> :class:`ModernLM` and its
  byte-level BPE, read and dequantised by the course's code (:mod:`.gguf`).

Each is written as nanoGPT's ``from_pretrained``: read the settings into our config, build our
model, then a **key map** (our module -> theirs, and how to change the tensor when the layouts
differ) and **one copy loop** (:func:`copy_weights`) that refuses a missing key or a shape
mismatch. torch's boolean masks mean the opposite of ours (True = masked out): give the copies
``~mask``.
"""

from .gguf import from_gguf, read_gguf
from .hf import from_hf
from .torch_nn import copy_weights, from_torch

__all__ = ["from_torch", "from_hf", "from_gguf", "read_gguf", "copy_weights"]
