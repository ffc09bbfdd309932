"""Making a model cheap to run (lecture 15): quantised weights and speculative decoding.

The numpy half (imported with ``course_lib``): llama.cpp's block formats (``quantization``),
absmax int8 (``int8``), QLoRA's NF4 (``nf4``), the KV cache's memory (``kv_memory``). The torch
half (imported on first use, see ``course_lib/__init__.py``): quantised models
(``quantized_model``) and speculative decoding (``speculative``).
"""

from .int8 import *  # noqa: F403
from .kv_memory import *  # noqa: F403
from .nf4 import *  # noqa: F403
from .quantization import *  # noqa: F403
