"""Subword tokenisation: byte-pair encoding learned from a corpus, and BERT's WordPiece.

**BPE** (Sennrich et al., 2016) starts from characters and repeatedly *merges* the most frequent
adjacent pair of symbols into a new symbol. Training records the merges in order; encoding a
new word replays them (lowest-ranked merge first). Our trainer follows the rules of the
``tokenizers`` library's ``BpeTrainer`` exactly, so the two learn the same merges:

* pairs are counted inside words only, weighted by the word's frequency, overlapping pairs
  included ("a a a" holds the pair (a, a) twice);
* a tie between equally frequent pairs goes to the pair whose token ids are smaller, where the
  ids are: special tokens, then the characters sorted by code point, then merged tokens in the
  order they were made;
* training stops when the vocabulary (special tokens included) reaches ``vocab_size``, or when
  the best pair is rarer than ``min_frequency``.

Words come from :func:`pretokenize`, which keeps the space in front of a word as a visible
``▁`` (as SentencePiece does), so :meth:`BPETokenizer.decode` gives the text back exactly.

**WordPiece** as BERT uses it: a basic tokenizer (lower-casing, accent stripping, splitting off
punctuation) then, for each word, the *greedy longest match* against a fixed vocabulary, with
word-internal pieces written ``##piece``; a word that cannot be covered becomes ``[UNK]``.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from ._validation import check_positive_int

__all__ = [
    "SPACE",
    "pretokenize",
    "count_pairs",
    "merge_pair",
    "BPETokenizer",
    "train_bpe",
    "train_bpe_with_history",
    "BPETraining",
    "basic_tokenize",
    "wordpiece",
    "wordpiece_tokenize",
    "load_vocab",
]

SPACE = "▁"  # U+2581, marks "a space came before this word" inside BPE tokens
_WORDS = re.compile(r" ?\w+| ?[^\w\s]+")


def _check_text(text, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


def pretokenize(text: str, lowercase: bool = False) -> list[str]:
    """Split text into the words BPE works inside, keeping each word's leading space as ``▁``.

    Whitespace runs count as one space and the ends are stripped; then every word is a run of
    letters/digits/underscores or a run of punctuation, with the space before it (if any)
    written ``▁``. ``"".join(words).replace("▁", " ")`` gives the normalised text back.

    >>> pretokenize("The if statement: x.")
    ['The', '▁if', '▁statement', ':', '▁x', '.']
    """
    text = " ".join(_check_text(text).split())
    if lowercase:
        text = text.lower()
    return [w.replace(" ", SPACE) for w in _WORDS.findall(text)]


def count_pairs(words: Mapping[tuple[str, ...], int]) -> Counter:
    """Frequency of each adjacent symbol pair: ``words`` maps a word (tuple of symbols) to its count.

    Overlapping pairs count: ``{("a", "a", "a"): 1}`` holds ``("a", "a")`` twice.
    """
    pairs: Counter = Counter()
    for symbols, count in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            pairs[pair] += count
    return pairs


def merge_pair(symbols: Sequence[str], pair: tuple[str, str]) -> tuple[str, ...]:
    """One BPE merge step on one word: replace each occurrence of ``pair``, scanning left to right.

    ``merge_pair(("a", "a", "a"), ("a", "a"))`` is ``("aa", "a")``: once two symbols are
    merged, the second cannot start another occurrence.
    """
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeError(f"pair must be a tuple of two symbols, got {pair!r}")
    first, second = pair
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == first and symbols[i + 1] == second:
            out.append(first + second)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


class BPETokenizer:
    """A trained byte-pair encoder: a vocabulary (token -> id) and the ordered list of merges.

    Build one with :func:`train_bpe`. ``encode`` maps text to ids, ``decode`` maps ids back
    to text, ``tokenize`` shows the token strings.
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[tuple[str, str]],
        *,
        special_tokens: Sequence[str] = (),
        unk_token: str | None = None,
        lowercase: bool = False,
    ):
        self.vocab = dict(vocab)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.merges = [tuple(m) for m in merges]
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self.special_tokens = list(special_tokens)
        self.unk_token = unk_token
        self.lowercase = lowercase
        if unk_token is not None and unk_token not in self.vocab:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocabulary")
        self._cache: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={len(self.vocab)}, merges={len(self.merges)})"

    def encode_word(self, word: str) -> list[str]:
        """The tokens of one pre-tokenized word: start from characters, replay the merges.

        At each step the adjacent pair with the lowest merge rank is merged (the leftmost one
        if it occurs twice) until no adjacent pair is a known merge.
        """
        if word in self._cache:
            return self._cache[word]
        symbols = [c if c in self.vocab else self.unk_token for c in word]
        symbols = [s for s in symbols if s is not None]  # unknown characters vanish without unk
        while len(symbols) > 1:
            rank, pos = min(
                (self.ranks.get((a, b), len(self.ranks)), i)
                for i, (a, b) in enumerate(zip(symbols, symbols[1:], strict=False))
            )
            if rank == len(self.ranks):
                break
            symbols[pos : pos + 2] = [symbols[pos] + symbols[pos + 1]]
        self._cache[word] = symbols
        return symbols

    def tokenize(self, text: str) -> list[str]:
        """Token strings of ``text`` (words from :func:`pretokenize`, then :meth:`encode_word`)."""
        return [t for w in pretokenize(text, self.lowercase) for t in self.encode_word(w)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return [self.vocab[t] for t in self.tokenize(text)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of a list of ids: join the tokens and turn each ``▁`` back into a space."""
        tokens = []
        for i in ids:
            i = int(i)
            if i not in self.id_to_token:
                raise ValueError(f"ids: {i} is not a token id (vocabulary size {len(self.vocab)})")
            tok = self.id_to_token[i]
            if skip_special_tokens and tok in self.special_tokens:
                continue
            tokens.append(tok)
        return "".join(tokens).replace(SPACE, " ").strip()


def train_bpe(
    texts: Iterable[str] | str,
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    unk_token: str | None = None,
    lowercase: bool = False,
    min_frequency: int = 0,
    return_history: bool = False,
) -> BPETokenizer:
    """Learn BPE merges from ``texts`` until the vocabulary has ``vocab_size`` tokens; the
    arguments are :func:`train_bpe_with_history`'s. Returns the :class:`BPETokenizer`
    (``return_history=True``, which lecture 08 uses: the :class:`BPETraining` of
    :func:`train_bpe_with_history`, unpacking as ``tokenizer, history``).
    """
    result = train_bpe_with_history(
        texts, vocab_size, special_tokens=special_tokens, unk_token=unk_token,
        lowercase=lowercase, min_frequency=min_frequency,
    )  # fmt: skip
    return result if return_history else result.tokenizer


class BPETraining(NamedTuple):
    """What :func:`train_bpe_with_history` returns."""

    tokenizer: BPETokenizer  # the learned tokenizer
    history: list  # per merge, (pair, count): which pair was merged and how often it occurred


def train_bpe_with_history(
    texts: Iterable[str] | str,
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    unk_token: str | None = None,
    lowercase: bool = False,
    min_frequency: int = 0,
) -> BPETraining:
    """Learn BPE merges from ``texts`` until the vocabulary has ``vocab_size`` tokens, and
    keep the history of merges.

    Args:
        texts: a string or an iterable of strings (e.g. one sentence each).
        vocab_size: target size, special tokens included (as in ``tokenizers``).
        special_tokens: tokens given the first ids, e.g. ``["[PAD]", "[UNK]", ...]``.
        unk_token: the special token unknown characters become when encoding (None: dropped).
        lowercase: lower-case the text before learning (and before encoding later).
        min_frequency: stop when the most frequent pair occurs fewer times than this.

    Returns:
        :class:`BPETraining` ``(tokenizer, history)``: the :class:`BPETokenizer` and, per merge,
        ``(pair, count)``.
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if isinstance(texts, str):
        texts = [texts]
    if unk_token is not None and unk_token not in special_tokens:
        raise ValueError(f"unk_token {unk_token!r} must be one of special_tokens")
    word_counts = Counter(w for t in texts for w in pretokenize(t, lowercase))

    vocab: dict[str, int] = {}
    for tok in [*special_tokens, *sorted({c for w in word_counts for c in w})]:
        vocab.setdefault(tok, len(vocab))
    id_to_token = {i: t for t, i in vocab.items()}

    # Words as lists of ids, so that ties can be broken by id as the tokenizers library does.
    words = [[vocab[c] for c in w] for w in word_counts]
    counts = list(word_counts.values())
    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, w in enumerate(words):
        for pair in zip(w, w[1:], strict=False):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    # Max-heap on (count, then smallest pair) with lazy updates: a popped entry whose count
    # is out of date is pushed back with its current count.
    heap = [(-c, pair) for pair, c in pair_counts.items() if c > 0]
    heapq.heapify(heap)

    merges: list[tuple[str, str]] = []
    history: list[tuple[tuple[str, str], int]] = []
    while len(vocab) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if -neg != current:
            if current > 0:
                heapq.heappush(heap, (-current, pair))
            continue
        if current < 1 or current < min_frequency:
            break
        a, b = id_to_token[pair[0]], id_to_token[pair[1]]
        new_tok = a + b
        if new_tok not in vocab:
            vocab[new_tok] = len(vocab)
            id_to_token[vocab[new_tok]] = new_tok
        new_id = vocab[new_tok]
        merges.append((a, b))
        history.append(((a, b), current))
        # Re-count the pairs of the words that contain the merged pair.
        grown: set[tuple[int, int]] = set()
        for i in where.pop(pair):
            w, c = words[i], counts[i]
            for p in zip(w, w[1:], strict=False):
                pair_counts[p] -= c
            merged, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == pair[0] and w[j + 1] == pair[1]:
                    merged.append(new_id)
                    j += 2
                else:
                    merged.append(w[j])
                    j += 1
            words[i] = merged
            for p in zip(merged, merged[1:], strict=False):
                pair_counts[p] += c
                where[p].add(i)
                grown.add(p)
        for p in grown:
            if pair_counts[p] > 0:
                heapq.heappush(heap, (-pair_counts[p], p))

    tok = BPETokenizer(
        vocab, merges, special_tokens=special_tokens, unk_token=unk_token, lowercase=lowercase
    )
    return BPETraining(tok, history)


# ----------------------------------------------------------------------------- WordPiece (BERT)


def _is_punctuation(ch: str) -> bool:
    # BERT counts all non-alphanumeric ASCII (e.g. "$", "^", "`") as punctuation, plus Unicode P*.
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """BERT's basic tokenizer: clean, (lower-case and strip accents), split off punctuation.

    Control characters are dropped, whitespace splits words, every punctuation character is a
    word of its own, and every CJK ideograph too.

    >>> basic_tokenize("Héllo, world!")
    ['hello', ',', 'world', '!']
    """
    chars = []
    for ch in _check_text(text):
        cp = ord(ch)
        if (
            cp == 0
            or cp == 0xFFFD
            or (unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r")
        ):
            continue
        if _is_cjk(cp):
            chars.append(f" {ch} ")
        elif ch.isspace() or unicodedata.category(ch) == "Zs":
            chars.append(" ")
        else:
            chars.append(ch)
    words = []
    for word in "".join(chars).split():
        if lowercase:
            word = word.lower()
            word = "".join(
                c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn"
            )
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(
    word: str, vocab: Mapping[str, int] | set[str], unk_token: str = "[UNK]", max_chars: int = 100
) -> list[str]:
    """Greedy longest-match WordPiece of one word: take the longest prefix in ``vocab``, repeat.

    Pieces after the first are looked up with a ``##`` prefix (they continue a word). If at some
    point no piece matches, the whole word becomes ``unk_token`` (BERT does not keep a partial
    split); words longer than ``max_chars`` characters too.

    >>> wordpiece("unaffable", {"un", "##aff", "##able"})
    ['un', '##aff', '##able']
    """
    _check_text(word, "word")
    if not isinstance(vocab, (Mapping, set, frozenset, list, tuple)):
        raise TypeError(
            "vocab must be a set of tokens or a dict token -> id (a str would be searched as a "
            f"substring), got {type(vocab).__name__}"
        )
    if len(word) > max_chars:
        return [unk_token]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_tokenize(
    text: str, vocab: Mapping[str, int] | set[str], lowercase: bool = True, unk_token: str = "[UNK]"
) -> list[str]:
    """BERT's full tokenisation of ``text``: :func:`basic_tokenize`, then :func:`wordpiece` per word."""
    return [p for w in basic_tokenize(text, lowercase) for p in wordpiece(w, vocab, unk_token)]


def load_vocab(path: str | Path) -> dict[str, int]:
    """Read a BERT ``vocab.txt`` (one token a line; the line number is the id)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {tok: i for i, tok in enumerate(lines)}
