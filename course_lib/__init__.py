"""course_lib: the verified implementations behind the attention-course lectures.

Notebooks call these functions; tests hold each of them against an independent reference
(torch, sacrebleu, nltk, transformers, or values worked by hand in the lecture notes).
"""

# Each module lists its public names in __all__; they are re-exported here, one line a module.
from .additive_attention import *  # noqa: F403
from .attention import *  # noqa: F403
from .bleu import *  # noqa: F403
from .chunked_attention import *  # noqa: F403
from .configs import *  # noqa: F403
from .grouped_query import *  # noqa: F403
from .head_patterns import *  # noqa: F403
from .models.bert import *  # noqa: F403
from .models.generation import *  # noqa: F403
from .models.gpt import *  # noqa: F403
from .models.modern import *  # noqa: F403
from .models.ngram import *  # noqa: F403
from .multihead import *  # noqa: F403
from .nn import *  # noqa: F403
from .positional import *  # noqa: F403
from .reproducibility import *  # noqa: F403
from .rmsnorm import *  # noqa: F403
from .rope import *  # noqa: F403
from .softmax import *  # noqa: F403
from .source import *  # noqa: F403
from .timing import *  # noqa: F403
from .training import *  # noqa: F403

__version__ = "0.1.0"
