"""BLEU (Papineni et al., 2002) from scratch, with the same options and results as sacrebleu 2.6.

BLEU compares a system's output (the *hypotheses*) with human translations (the *references*):

    BLEU = BP · exp( (1/N) · Σ_n log p_n )          reported ×100, so 0–100

* ``p_n`` — modified n-gram precision: every hypothesis n-gram counts as correct at most as
  often as it occurs in the one reference that has it most often (*clipping*), so
  "the the the the the the" cannot score by repeating a word the reference contains.
* ``BP`` — brevity penalty: precision alone rewards short output, so a hypothesis shorter
  than its closest reference is penalised by ``exp(1 - r/c)``.

At the **corpus** level (the standard) counts and lengths are summed over all sentences first
and the formula is applied once to the sums; it is *not* the average of sentence scores.

One idea per module, in reading order (as sacrebleu splits ``tokenizers/tokenizer_13a.py``,
``helpers.py`` and ``metrics/bleu.py``):

* :mod:`.tokenizer_13a` — the ``13a`` and ``none`` tokenizers and sacrebleu's preprocessing;
* :mod:`.counting` — the building blocks the lecture uses one at a time (n-gram counts,
  clipped counts, modified precision, closest reference length, brevity penalty, geometric mean);
* :mod:`.formula` — :func:`compute_bleu`, the whole formula with its smoothing, and
  :class:`BLEUScore`;
* :mod:`.statistics` — the corpus statistics gathered once, vectorised with numpy;
* :mod:`.corpus` — :func:`corpus_bleu` / :func:`sentence_bleu`, which put them together.

References are given **per hypothesis** (``references[i]`` belongs to ``hypotheses[i]``), not as
sacrebleu's reference streams; streams are detected and refused with a message.
"""

from . import corpus, counting, formula, statistics, tokenizer_13a
from .corpus import *  # noqa: F403
from .counting import *  # noqa: F403
from .formula import *  # noqa: F403
from .statistics import *  # noqa: F403
from .tokenizer_13a import *  # noqa: F403

__all__ = [
    *tokenizer_13a.__all__,
    *counting.__all__,
    *formula.__all__,
    *statistics.__all__,
    *corpus.__all__,
]
