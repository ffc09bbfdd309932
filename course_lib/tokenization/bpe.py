"""Byte-pair encoding, one merge at a time, and the trained encoder that replays the merges.

:func:`count_pairs` and :func:`merge_pair` are the two steps lecture 08 runs by hand;
:class:`BPETokenizer` encodes a new word by replaying the learned merges (lowest rank first)
and decodes ids back to text. :mod:`.bpe_training` learns the merges.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from .._validation import check_flag, check_special_tokens, check_str, check_token_sequence
from .byte_level import bytes_to_unicode, pretokenize_bytes
from .pretokenizer import SPACE, pretokenize

__all__ = ["count_pairs", "merge_pair", "BPETokenizer"]


def count_pairs(words: Mapping[tuple[str, ...], int]) -> Counter:
    """Frequency of each adjacent symbol pair: ``words`` maps a word (tuple of symbols) to its count.

    Overlapping pairs count: ``{("a", "a", "a"): 1}`` holds ``("a", "a")`` twice.
    """
    if not isinstance(words, Mapping):
        raise TypeError(
            f"words must be a dict word (tuple of symbols) -> count, got {type(words).__name__}"
        )
    pairs: Counter = Counter()
    for symbols, count in words.items():
        check_token_sequence(symbols, "words' keys")
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(
                f"words' counts must be integers, got {type(count).__name__} {count!r} for {symbols}"
            )
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
    symbols = check_token_sequence(symbols, "symbols")
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


def _as_list(ids):
    """A torch tensor or numpy array of ids as a list of Python ints; anything else as it is."""
    return ids.tolist() if hasattr(ids, "tolist") and not isinstance(ids, list) else ids


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
        if not isinstance(vocab, Mapping):
            raise TypeError(f"vocab must be a dict token -> id, got {type(vocab).__name__}")
        for i, m in enumerate(check_token_sequence(merges, "merges")):
            if isinstance(m, str) or len(m) != 2 or not all(isinstance(p, str) for p in m):
                raise TypeError(f"merges[{i}] must be a pair of str (left, right), got {m!r}")
        self.vocab = dict(vocab)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.merges = [tuple(m) for m in merges]
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self.special_tokens = check_special_tokens(special_tokens, unk_token)
        self.unk_token = unk_token
        self.lowercase = check_flag(lowercase, "lowercase")
        self.byte_level = check_flag(byte_level, "byte_level")
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
        if check_str(word, "word") in self._cache:
            return self._cache[word]
        symbols = [c if c in self.vocab else self.unk_token for c in word]
        if self.byte_level and None in symbols:  # a byte-level vocabulary must hold every byte
            char = next(c for c, s in zip(word, symbols, strict=True) if s is None)
            byte = {c: b for b, c in bytes_to_unicode().items()}.get(char)
            raise ValueError(
                f"word {word!r}: byte {byte if byte is None else hex(byte)} ({char!r}) is not in "
                "the byte-level vocabulary and there is no unk_token; a byte-level vocabulary "
                "needs all 256 bytes"
            )
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
        try:
            check_str(text, "text").encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate such as "\ud800"
            raise ValueError(
                f"text has {text[exc.start]!r} at index {exc.start}, a lone surrogate: not "
                "valid Unicode text, so it has no UTF-8 bytes to tokenize"
            ) from None
        return [t for w in self._words(text) for t in self.encode_word(w)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return [self.vocab[t] for t in self.tokenize(text)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of a list of ids: join the tokens and turn each ``▁`` back into a space (byte
        level: turn the characters back into bytes and decode them as UTF-8)."""
        skip_special_tokens = check_flag(skip_special_tokens, "skip_special_tokens")
        tokens = []
        for i in check_token_sequence(_as_list(ids), "ids"):
            if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                raise TypeError(f"ids must be integer token ids, got {type(i).__name__} {i!r}")
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
