"""course_lib: the verified implementations behind the attention-course lectures.

Notebooks call these functions; tests hold each of them against an independent reference
(torch, sacrebleu, nltk, transformers, or values worked by hand in the lecture notes).

The numpy half is imported here; the torch half is imported the first time one of its names is
used (``course_lib.MultiHeadAttention``, ``from course_lib import GPT``), so that ``import
course_lib`` and the numpy lectures work where torch is not installed (the browser edition).
"""

from . import _optional, _quiet  # noqa: F401  (_quiet: one noisy third-party logger)

# Each module lists its public names in __all__; they are re-exported here, one line a module.
# The numpy half (no torch):
from .additive_attention import *  # noqa: F403
from .attention import *  # noqa: F403
from .bleu import *  # noqa: F403
from .chunked_attention import *  # noqa: F403
from .grouped_query import *  # noqa: F403
from .head_patterns import *  # noqa: F403
from .inference import *  # noqa: F403
from .multihead import *  # noqa: F403
from .positional import *  # noqa: F403
from .reproducibility import *  # noqa: F403
from .rmsnorm import *  # noqa: F403
from .rope import *  # noqa: F403
from .softmax import *  # noqa: F403
from .source import *  # noqa: F403
from .timing import *  # noqa: F403

# The torch half, imported on first use: the modules whose __all__ is re-exported lazily.
_TORCH_MODULES = (
    "configs",
    "data.chat",
    "data_parallel",
    "evaluation",
    "inference.quantized_model",
    "inference.speculative",
    "models.assistant",
    "models.bert",
    "models.dpo",
    "models.generation",
    "models.gpt",
    "models.lora",
    "models.modern",
    "models.ngram",
    "models.rl",
    "nn",
    "training",
)

__version__ = "0.1.0"

_optional.install_cell_skipper()  # cells starting `# needs: torch` skip with a note without torch


def __getattr__(name: str):
    from ._lazy import lazy_attribute

    return lazy_attribute(__name__, _TORCH_MODULES, name, globals())


def __dir__() -> list[str]:
    from ._lazy import lazy_names

    return sorted(set(globals()) | set(lazy_names(__name__, _TORCH_MODULES)))
