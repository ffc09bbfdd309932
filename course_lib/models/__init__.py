"""Models the lectures train: translation (seq2seq RNNs, a small Transformer) and decoding; BERT
(tiny BERT, the BertEncoder that runs real weights, its MLM head, fine-tuning heads); GPT and
text generation; a Llama-style ModernLM; the assistant of lecture 14 and its RL (GRPO, 17)."""

from .assistant import *  # noqa: F403
from .bert import *  # noqa: F403
from .bert_encoder import *  # noqa: F403
from .classifier import *  # noqa: F403
from .decoding import *  # noqa: F403
from .dpo import *  # noqa: F403
from .generation import *  # noqa: F403
from .gpt import *  # noqa: F403
from .lora import *  # noqa: F403
from .mlm_head import *  # noqa: F403
from .modern import *  # noqa: F403
from .ngram import *  # noqa: F403
from .rl import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .transformer import *  # noqa: F403
