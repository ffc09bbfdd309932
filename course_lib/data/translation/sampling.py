"""Sampling sentence pairs from the grammar, and the train/test split with its vocabularies."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..._validation import check_positive_int, check_type
from .batches import Vocab
from .grammar import (
    _ADJ_AFTER,
    _ADJ_BEFORE,
    _ADJECTIVES,
    _ANIMATE,
    _CONNECTORS,
    _NOUNS,
    _PLACES,
    _VERBS,
    NP,
    TARGET_LANGUAGES,
    VP,
    Clause,
    Sentence,
    realize,
)

__all__ = ["sample_sentence", "generate_pairs", "TranslationData", "make_translation_data"]


_COLOURS = ("black", "white", "red", "grey")


def _adjective_choices(noun: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(before-noun, after-noun) adjectives that make sense for ``noun`` (no "grey girl")."""
    n = _NOUNS[noun]
    person = noun in ("girl", "boy")
    ok = [a for a, adj in _ADJECTIVES.items()
          if (n.animate or not adj.animate_only) and not (person and a in _COLOURS)]  # fmt: skip
    return tuple(a for a in ok if a in _ADJ_BEFORE), tuple(a for a in ok if a in _ADJ_AFTER)


_ADJ_CHOICES = {noun: _adjective_choices(noun) for noun in _NOUNS}


def _sample_adjs(rng: random.Random, noun: str) -> tuple[str, ...]:
    before, after = _ADJ_CHOICES[noun]
    r = rng.random()
    if r < 0.45:
        return ()
    if r < 0.65:
        return (rng.choice(before),)
    if r < 0.85:
        return (rng.choice(after),)
    return (rng.choice(before), rng.choice(after))  # English order: size/age before colour


def _sample_np(
    rng: random.Random, nouns: Sequence[str], *, rel_p: float, place: bool = False
) -> NP:
    noun = rng.choice(nouns)
    plural = rng.random() < 0.3
    definite = plural or rng.random() < 0.75
    rel = None
    if rng.random() < rel_p:
        # "the cat that slept on the mat": only animals and people do things; things just "are"
        rel = _sample_vp(rng, rel_p=0.0) if _NOUNS[noun].animate else _sample_place_vp(rng, "is")
    if place and rel is not None and not _NOUNS[noun].animate:
        rel = None  # "on the mat that is on the table": too deep to read
    return NP(noun, plural, definite, _sample_adjs(rng, noun), rel)


def _sample_place_vp(rng: random.Random, verb: str, rel_p: float = 0.0) -> VP:
    prep = rng.choice(("on", "in"))
    return VP(verb, _sample_np(rng, _PLACES[prep], rel_p=rel_p, place=True), prep)


def _sample_vp(rng: random.Random, rel_p: float) -> VP:
    verb = rng.choice(tuple(v for v in _VERBS if v != "is"))
    if _VERBS[verb].kind == "transitive":
        return VP(verb, _sample_np(rng, tuple(_NOUNS), rel_p=rel_p))
    return _sample_place_vp(rng, verb)


def _sample_clause(rng: random.Random, rel_p: float) -> Clause:
    if rng.random() < 0.12:  # "the box is on the table": things can be subjects of "is"
        things = tuple(k for k in _NOUNS if not _NOUNS[k].animate)
        return Clause(_sample_np(rng, things, rel_p=0.0), _sample_place_vp(rng, "is"))
    subj = _sample_np(rng, _ANIMATE, rel_p=rel_p)
    return Clause(subj, _sample_vp(rng, rel_p=rel_p))


def sample_sentence(rng: random.Random) -> Sentence:
    """Draw one sentence tree from the grammar with ``rng`` (a :class:`random.Random`)."""
    check_type(rng, "rng", random.Random)
    if rng.random() < 0.4:
        first, second = _sample_clause(rng, 0.3), _sample_clause(rng, 0.3)
        return Sentence((first, second), rng.choice(tuple(_CONNECTORS)))
    return Sentence((_sample_clause(rng, 0.35),))


def generate_pairs(
    n: int, target: str = "ru", *, seed: int = 0, max_words: int = 30
) -> list[tuple[str, str]]:
    """``n`` distinct (English, target) sentence pairs, the same for the same seed.

    Args:
        n: number of pairs; English sides are all different.
        target: "fr" or "ru".
        seed: seed of the private random generator (global random state is not touched).
        max_words: longest sentence kept, in words, on either side.

    Returns:
        A list of ``(source, target)`` strings, tokens separated by single spaces.
    """
    n = check_positive_int(n, "n")
    max_words = check_positive_int(max_words, "max_words")
    if target not in TARGET_LANGUAGES:
        raise ValueError(f"target must be one of {TARGET_LANGUAGES}, got {target!r}")
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    tries = 0
    while len(pairs) < n:
        tries += 1
        if tries > 50 * n + 1000:
            raise ValueError(f"could not draw {n} distinct sentences of at most {max_words} words")
        s = sample_sentence(rng)
        src = realize(s, "en")
        if src in seen:
            continue
        tgt = realize(s, target)
        if max(len(src.split()), len(tgt.split())) > max_words:
            continue
        seen.add(src)
        pairs.append((src, tgt))
    return pairs


@dataclass
class TranslationData:
    """Train/test pairs of one language pair and the vocabularies built from the training set."""

    train: list[tuple[str, str]]
    test: list[tuple[str, str]]
    src_vocab: Vocab
    tgt_vocab: Vocab
    target: str


def make_translation_data(
    target: str = "ru",
    n_train: int = 20000,
    n_test: int = 600,
    *,
    seed: int = 0,
    max_words: int = 30,
) -> TranslationData:
    """Generate a corpus and split it: no test sentence (source or target) occurs in training.

    Different English sentences can share a translation (Russian has no articles: "a cat" and
    "the cat" are both "кот"), so test pairs whose target also occurs in training are dropped
    and replaced.
    """
    n_train = check_positive_int(n_train, "n_train")
    n_test = check_positive_int(n_test, "n_test")
    pairs = generate_pairs(n_train + 2 * n_test, target, seed=seed, max_words=max_words)
    random.Random(seed + 1).shuffle(pairs)
    train = pairs[:n_train]
    train_targets = {t for _, t in train}
    test = [p for p in pairs[n_train:] if p[1] not in train_targets]
    if len(test) < n_test:
        raise ValueError(f"only {len(test)} test pairs are new; lower n_test or n_train")
    test = test[:n_test]
    src_vocab = Vocab.build(s for s, _ in train)
    tgt_vocab = Vocab.build(t for _, t in train)
    return TranslationData(train, test, src_vocab, tgt_vocab, target)
