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

**Byte-level BPE** (GPT-2; ``byte_level=True``): the text is split with GPT-2's pattern
(:func:`pretokenize_bytes`) and each word is written as its UTF-8 *bytes*, each byte shown as
one printable character (:func:`bytes_to_unicode`: a space is ``Ġ``). The starting alphabet is
all 256 bytes, so any text can be encoded and nothing is ever unknown; the merges are learned
by the same trainer, and match the ``tokenizers`` library's ``ByteLevel`` BPE.

**WordPiece** as BERT uses it: a basic tokenizer (lower-casing, accent stripping, splitting off
punctuation) then, for each word, the *greedy longest match* against a fixed vocabulary, with
word-internal pieces written ``##piece``; a word that cannot be covered becomes ``[UNK]``.
"""

from __future__ import annotations

import functools
import heapq
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import regex

from ._validation import check_positive_int

__all__ = [
    "SPACE",
    "pretokenize",
    "bytes_to_unicode",
    "pretokenize_bytes",
    "count_pairs",
    "merge_pair",
    "BPETokenizer",
    "train_bpe",
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


# GPT-2's pre-tokenizer: contractions, letters, digits, other symbols (each with the space before
# them), and whitespace runs (a run before a word leaves its last space to the word).
_GPT2_WORDS = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table byte -> printable character: printable bytes stand for themselves, the
    others (space, control bytes, ...) get the characters from U+0100 on (a space is ``Ġ``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def pretokenize_bytes(text: str) -> list[str]:
    """Split text with GPT-2's pattern and write each word as bytes, one character a byte.

    Nothing is normalised: ``decode`` gives back exactly the same text.

    >>> pretokenize_bytes("The if-statement: x")
    ['The', 'Ġif', '-', 'statement', ':', 'Ġx']
    """
    table = bytes_to_unicode()
    return [
        "".join(table[b] for b in w.encode("utf-8")) for w in _GPT2_WORDS.findall(_check_text(text))
    ]


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
        byte_level: bool = False,
    ):
        self.vocab = dict(vocab)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.merges = [tuple(m) for m in merges]
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self.special_tokens = list(special_tokens)
        self.unk_token = unk_token
        self.lowercase = lowercase
        self.byte_level = byte_level
        if unk_token is not None and unk_token not in self.vocab:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocabulary")
        self._cache: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        kind = ", byte_level=True" if self.byte_level else ""
        return f"BPETokenizer(vocab_size={len(self.vocab)}, merges={len(self.merges)}{kind})"

    def _words(self, text: str) -> list[str]:
        if self.byte_level:
            return pretokenize_bytes(text)
        return pretokenize(text, self.lowercase)

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
        return [t for w in self._words(text) for t in self.encode_word(w)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return [self.vocab[t] for t in self.tokenize(text)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of a list of ids: join the tokens and turn each ``▁`` back into a space (byte
        level: turn the characters back into bytes and decode them as UTF-8)."""
        tokens = []
        for i in ids:
            i = int(i)
            if i not in self.id_to_token:
                raise ValueError(f"ids: {i} is not a token id (vocabulary size {len(self.vocab)})")
            tok = self.id_to_token[i]
            if skip_special_tokens and tok in self.special_tokens:
                continue
            tokens.append(tok)
        if self.byte_level:
            return self._bytes_to_text(tokens)
        return "".join(tokens).replace(SPACE, " ").strip()

    def _bytes_to_text(self, tokens: list[str]) -> str:
        to_byte = {c: b for b, c in bytes_to_unicode().items()}
        parts, data = [], bytearray()
        for tok in tokens:
            if tok in self.special_tokens:  # special tokens are text, not bytes
                parts.append(data.decode("utf-8", errors="replace") + tok)
                data = bytearray()
            else:
                data.extend(to_byte[c] for c in tok)
        return "".join(parts) + data.decode("utf-8", errors="replace")


def train_bpe(
    texts: Iterable[str] | str,
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    unk_token: str | None = None,
    lowercase: bool = False,
    min_frequency: int = 0,
    return_history: bool = False,
    byte_level: bool = False,
):
    """Learn BPE merges from ``texts`` until the vocabulary has ``vocab_size`` tokens.

    Args:
        texts: a string or an iterable of strings (e.g. one sentence each).
        vocab_size: target size, special tokens included (as in ``tokenizers``).
        special_tokens: tokens given the first ids, e.g. ``["[PAD]", "[UNK]", ...]``.
        unk_token: the special token unknown characters become when encoding (None: dropped).
        lowercase: lower-case the text before learning (and before encoding later).
        min_frequency: stop when the most frequent pair occurs fewer times than this.
        return_history: also return, per merge, ``(pair, count)``.
        byte_level: GPT-2's byte-level BPE: words from :func:`pretokenize_bytes`, and all 256
            byte characters in the starting vocabulary (``lowercase`` and ``unk_token`` are
            then not needed: every text can be encoded).

    Returns:
        A :class:`BPETokenizer` (and the history list if ``return_history``).
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if isinstance(texts, str):
        texts = [texts]
    if unk_token is not None and unk_token not in special_tokens:
        raise ValueError(f"unk_token {unk_token!r} must be one of special_tokens")
    if byte_level:
        if lowercase or unk_token is not None:
            raise ValueError("byte_level BPE keeps the text as it is: no lowercase, no unk_token")
        word_counts = Counter(w for t in texts for w in pretokenize_bytes(t))
        alphabet = set(bytes_to_unicode().values())
    else:
        word_counts = Counter(w for t in texts for w in pretokenize(t, lowercase))
        alphabet = {c for w in word_counts for c in w}

    vocab: dict[str, int] = {}
    for tok in [*special_tokens, *sorted(alphabet)]:
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

    tok = BPETokenizer(vocab, merges, special_tokens=special_tokens, unk_token=unk_token,
                       lowercase=lowercase, byte_level=byte_level)  # fmt: skip
    return (tok, history) if return_history else tok


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
