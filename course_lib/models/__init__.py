"""Models the lectures train: translation (seq2seq RNNs, a small Transformer) and decoding."""

from .bert import *  # noqa: F403
from .configs import *  # noqa: F403
from .decoding import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .transformer import *  # noqa: F403
