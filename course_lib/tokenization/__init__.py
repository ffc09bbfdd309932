"""Subword tokenisation: byte-pair encoding learned from a corpus, and BERT's WordPiece.

**BPE** (Sennrich et al., 2016) starts from characters and repeatedly *merges* the most frequent
adjacent pair of symbols into a new symbol. Training records the merges in order; encoding a
new word replays them (lowest-ranked merge first). Our trainer follows the rules of the
``tokenizers`` library's ``BpeTrainer`` exactly, so the two learn the same merges.

Words come from :func:`pretokenize`, which keeps the space in front of a word as a visible
``▁`` (as SentencePiece does), so :meth:`BPETokenizer.decode` gives the text back exactly.

**Byte-level BPE** (GPT-2; ``byte_level=True``): the text is split with GPT-2's pattern
(:func:`pretokenize_bytes`) and each word is written as its UTF-8 *bytes*, each byte shown as
one printable character (:func:`bytes_to_unicode`: a space is ``Ġ``). The starting alphabet is
all 256 bytes, so any text can be encoded and nothing is ever unknown; the merges are learned
by the same trainer, and match the ``tokenizers`` library's ``ByteLevel`` BPE.

**WordPiece** as BERT uses it: a basic tokenizer (lower-casing, accent stripping, splitting off
punctuation) then, for each word, the *greedy longest match* against a fixed vocabulary, with
word-internal pieces written ``##piece``; a word that cannot be covered becomes ``[UNK]``.

One idea per module, in reading order (a module is not named like the function it holds, so
``from course_lib.tokenization import pretokenize, wordpiece`` gives the functions):

* :mod:`.pretokenizer` — the words BPE merges inside (``▁`` for a leading space), lecture 08;
* :mod:`.byte_level` — GPT-2's byte alphabet and pattern, lecture 11;
* :mod:`.bpe` — one merge step by hand (:func:`count_pairs`, :func:`merge_pair`) and the
  trained :class:`BPETokenizer` that replays the merges;
* :mod:`.bpe_training` — :func:`train_bpe`, learning the merges as ``tokenizers`` does;
* :mod:`.bert_wordpiece` — BERT's basic tokenizer and greedy longest-match WordPiece, lecture 08.
"""

from . import bert_wordpiece, bpe, bpe_training, byte_level, pretokenizer
from .bert_wordpiece import *  # noqa: F403
from .bpe import *  # noqa: F403
from .bpe_training import *  # noqa: F403
from .byte_level import *  # noqa: F403
from .pretokenizer import *  # noqa: F403

__all__ = [
    *pretokenizer.__all__,
    *byte_level.__all__,
    *bpe.__all__,
    *bpe_training.__all__,
    *bert_wordpiece.__all__,
]
