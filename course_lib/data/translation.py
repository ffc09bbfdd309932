"""A parallel corpus English → French and English → Russian, generated from a small grammar.

Real corpora are too big to train on a laptop in a lecture; a grammar gives sentences that are
simple in vocabulary but not in structure, so that a translation model has to *look back* at
the right source word:

* **agreement** — French articles, adjectives and past participles agree with the gender and
  number of their noun (``la petite souris noire s'est assise``); Russian adjectives, verbs in
  the past tense and the relative pronoun ``который`` agree in gender and number, and nouns and
  adjectives take the case their verb or preposition asks for (``сел на коврик`` — accusative,
  where to; ``спал на коврике`` — prepositional, where);
* **word order** — French puts colour adjectives after the noun (``le grand chat noir``);
* **long sentences** — relative clauses (``the cat that saw the dog``) and two clauses joined by
  *because / and / but* give sentences from 3 to 30 words.

A sentence is first sampled as a small tree (:class:`Sentence` of :class:`Clause`, :class:`NP`,
:class:`VP`), then *realised* in each language by :func:`realize`, so the English, French and
Russian sides always mean the same thing. Tokens are lowercase words separated by single
spaces; punctuation (the Russian commas) is a token of its own.

Then come the pieces every translation model needs: :class:`Vocab` (with ``<pad>``, ``<bos>``,
``<eos>``, ``<unk>``), :func:`make_batch` (padded tensors and padding masks) and
:func:`batch_iterator` (shuffled, length-bucketed batches for training).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from .._validation import check_positive_int

__all__ = [
    "NP",
    "VP",
    "Clause",
    "Sentence",
    "LEXICON",
    "TARGET_LANGUAGES",
    "sample_sentence",
    "realize",
    "generate_pairs",
    "TranslationData",
    "make_translation_data",
    "tokenize",
    "Vocab",
    "Batch",
    "make_batch",
    "batch_iterator",
    "PAD",
    "BOS",
    "EOS",
    "UNK",
]

TARGET_LANGUAGES = ("fr", "ru")

# --------------------------------------------------------------------------------------------
# The lexicon. Russian nouns list (singular, plural) per case: nominative, accusative,
# prepositional. Genders: "m", "f", "n". French gender is separate: "rat" is masculine in
# French and feminine (крыса) in Russian, so the two targets disagree — on purpose.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Noun:
    en: tuple[str, str]
    fr: tuple[str, str]
    fr_gender: str
    ru_gender: str
    animate: bool
    ru: dict[str, tuple[str, str]]


def _noun(en, fr, fr_g, ru_g, animate, nom, acc, prep) -> _Noun:
    return _Noun(tuple(en), tuple(fr), fr_g, ru_g, animate, {"nom": nom, "acc": acc, "prep": prep})


_NOUNS: dict[str, _Noun] = {
    # animals and people: subjects of every verb, objects of transitive verbs
    "cat": _noun(("cat", "cats"), ("chat", "chats"), "m", "m", True,
                 ("кот", "коты"), ("кота", "котов"), ("коте", "котах")),
    "dog": _noun(("dog", "dogs"), ("chien", "chiens"), "m", "f", True,
                 ("собака", "собаки"), ("собаку", "собак"), ("собаке", "собаках")),
    "mouse": _noun(("mouse", "mice"), ("souris", "souris"), "f", "f", True,
                   ("мышь", "мыши"), ("мышь", "мышей"), ("мыши", "мышах")),
    "rat": _noun(("rat", "rats"), ("rat", "rats"), "m", "f", True,
                 ("крыса", "крысы"), ("крысу", "крыс"), ("крысе", "крысах")),
    "fox": _noun(("fox", "foxes"), ("renard", "renards"), "m", "f", True,
                 ("лиса", "лисы"), ("лису", "лис"), ("лисе", "лисах")),
    "wolf": _noun(("wolf", "wolves"), ("loup", "loups"), "m", "m", True,
                  ("волк", "волки"), ("волка", "волков"), ("волке", "волках")),
    "girl": _noun(("girl", "girls"), ("fille", "filles"), "f", "f", True,
                  ("девочка", "девочки"), ("девочку", "девочек"), ("девочке", "девочках")),
    "boy": _noun(("boy", "boys"), ("garçon", "garçons"), "m", "m", True,
                 ("мальчик", "мальчики"), ("мальчика", "мальчиков"), ("мальчике", "мальчиках")),
    # things: places (after "on"/"in"), objects, and subjects of "is/are"
    "mat": _noun(("mat", "mats"), ("tapis", "tapis"), "m", "m", False,
                 ("коврик", "коврики"), ("коврик", "коврики"), ("коврике", "ковриках")),
    "table": _noun(("table", "tables"), ("table", "tables"), "f", "m", False,
                   ("стол", "столы"), ("стол", "столы"), ("столе", "столах")),
    "chair": _noun(("chair", "chairs"), ("chaise", "chaises"), "f", "m", False,
                   ("стул", "стулья"), ("стул", "стулья"), ("стуле", "стульях")),
    "bed": _noun(("bed", "beds"), ("lit", "lits"), "m", "f", False,
                 ("кровать", "кровати"), ("кровать", "кровати"), ("кровати", "кроватях")),
    "sofa": _noun(("sofa", "sofas"), ("canapé", "canapés"), "m", "m", False,
                  ("диван", "диваны"), ("диван", "диваны"), ("диване", "диванах")),
    "roof": _noun(("roof", "roofs"), ("toit", "toits"), "m", "f", False,
                  ("крыша", "крыши"), ("крышу", "крыши"), ("крыше", "крышах")),
    "box": _noun(("box", "boxes"), ("boîte", "boîtes"), "f", "f", False,
                 ("коробка", "коробки"), ("коробку", "коробки"), ("коробке", "коробках")),
    "house": _noun(("house", "houses"), ("maison", "maisons"), "f", "m", False,
                   ("дом", "дома"), ("дом", "дома"), ("доме", "домах")),
    "basket": _noun(("basket", "baskets"), ("panier", "paniers"), "m", "f", False,
                    ("корзина", "корзины"), ("корзину", "корзины"), ("корзине", "корзинах")),
    "armchair": _noun(("armchair", "armchairs"), ("fauteuil", "fauteuils"), "m", "n", False,
                      ("кресло", "кресла"), ("кресло", "кресла"), ("кресле", "креслах")),
}  # fmt: skip

_ANIMATE = tuple(k for k, n in _NOUNS.items() if n.animate)
_PLACES = {"on": ("mat", "table", "chair", "bed", "sofa", "roof"),
           "in": ("box", "house", "basket", "armchair")}  # fmt: skip
_PREP = {"on": ("sur", "на"), "in": ("dans", "в")}

# Russian adjective endings by stem type, keyed by (case, gender or "pl", animate-for-acc).
_HARD = {"m": "ый", "f": "ая", "n": "ое", "pl": "ые"}
_RU_NOM = {
    "hard": _HARD,
    "hard_stressed": {**_HARD, "m": "ой"},  # молодой
    "velar": {"m": "ий", "f": "ая", "n": "ое", "pl": "ие"},  # маленький
    "velar_stressed": {"m": "ой", "f": "ая", "n": "ое", "pl": "ие"},  # большой
}


@dataclass(frozen=True)
class _Adjective:
    en: str
    fr: tuple[str, str, str, str]  # m sg, f sg, m pl, f pl
    fr_before_noun: bool
    ru_stem: str
    ru_type: str
    animate_only: bool = False

    def ru(self, case: str, gender: str, plural: bool, animate: bool) -> str:
        nom = _RU_NOM[self.ru_type]
        soft_pl = nom["pl"] == "ие"  # -ие adjectives take -их where hard ones take -ых
        g = "pl" if plural else gender
        if case == "nom" or (case == "acc" and not animate and g != "f"):
            ending = nom[g]  # inanimate accusative = nominative (except feminine singular)
        elif case == "acc" and g == "f":
            ending = "ую"
        elif case == "acc":  # animate accusative = genitive
            ending = ("их" if soft_pl else "ых") if g == "pl" else "ого"
        elif case == "prep":
            ending = {"m": "ом", "n": "ом", "f": "ой", "pl": "их" if soft_pl else "ых"}[g]
        else:
            raise ValueError(f"case must be 'nom', 'acc' or 'prep', got {case!r}")
        return self.ru_stem + ending


_ADJECTIVES: dict[str, _Adjective] = {
    # size, age, beauty: before the noun in French too
    "big": _Adjective("big", ("grand", "grande", "grands", "grandes"), True, "больш", "velar_stressed"),
    "small": _Adjective("small", ("petit", "petite", "petits", "petites"), True, "маленьк", "velar"),
    "old": _Adjective("old", ("vieux", "vieille", "vieux", "vieilles"), True, "стар", "hard"),
    "young": _Adjective("young", ("jeune", "jeune", "jeunes", "jeunes"), True, "молод", "hard_stressed", True),
    "beautiful": _Adjective("beautiful", ("beau", "belle", "beaux", "belles"), True, "красив", "hard"),
    # colour and character: after the noun in French
    "black": _Adjective("black", ("noir", "noire", "noirs", "noires"), False, "чёрн", "hard"),
    "white": _Adjective("white", ("blanc", "blanche", "blancs", "blanches"), False, "бел", "hard"),
    "red": _Adjective("red", ("rouge", "rouge", "rouges", "rouges"), False, "красн", "hard"),
    "grey": _Adjective("grey", ("gris", "grise", "gris", "grises"), False, "сер", "hard"),
    "lazy": _Adjective("lazy", ("paresseux", "paresseuse", "paresseux", "paresseuses"), False, "ленив", "hard", True),
    "happy": _Adjective("happy", ("heureux", "heureuse", "heureux", "heureuses"), False, "весёл", "hard", True),
}  # fmt: skip
_ADJ_BEFORE = tuple(k for k, a in _ADJECTIVES.items() if a.fr_before_noun)
_ADJ_AFTER = tuple(k for k, a in _ADJECTIVES.items() if not a.fr_before_noun)


@dataclass(frozen=True)
class _Verb:
    en: str | tuple[str, str]  # one past form, or (singular, plural) for "is/are"
    kind: str  # "transitive" or "place"
    fr: tuple[str, ...]  # see _fr_verb
    ru: tuple[str, str, str, str]  # past m, f, n, pl ("" for the zero copula)
    ru_case: str = "acc"  # case of the object / place noun
    ru_prep_override: str | None = None  # "смотрел на кого": a preposition English lacks


_VERBS: dict[str, _Verb] = {
    "saw": _Verb("saw", "transitive", ("avoir", "vu"), ("увидел", "увидела", "увидело", "увидели")),
    "found": _Verb("found", "transitive", ("avoir", "trouvé"), ("нашёл", "нашла", "нашло", "нашли")),
    "bit": _Verb("bit", "transitive", ("avoir", "mordu"), ("укусил", "укусила", "укусило", "укусили")),
    "heard": _Verb("heard", "transitive", ("avoir", "entendu"), ("услышал", "услышала", "услышало", "услышали")),
    "watched": _Verb("watched", "transitive", ("avoir", "regardé"), ("смотрел", "смотрела", "смотрело", "смотрели"), "acc", "на"),
    # where to (motion): Russian accusative; where (place): Russian prepositional
    "sat": _Verb("sat", "place", ("s'asseoir",), ("сел", "села", "село", "сели"), "acc"),
    "jumped": _Verb("jumped", "place", ("avoir", "sauté"), ("прыгнул", "прыгнула", "прыгнуло", "прыгнули"), "acc"),
    "slept": _Verb("slept", "place", ("avoir", "dormi"), ("спал", "спала", "спало", "спали"), "prep"),
    "played": _Verb("played", "place", ("avoir", "joué"), ("играл", "играла", "играло", "играли"), "prep"),
    "is": _Verb(("is", "are"), "place", ("être",), ("", "", "", ""), "prep"),
}  # fmt: skip
_CONNECTORS = {
    "because": ("parce que", ", потому что"),
    "and": ("et", ", и"),
    "but": ("mais", ", но"),
}

LEXICON = {
    "nouns": tuple(_NOUNS),
    "adjectives": tuple(_ADJECTIVES),
    "verbs": tuple(_VERBS),
    "connectors": tuple(_CONNECTORS),
}
"""The English words the grammar knows, by part of speech (plus ``the``, ``a``, ``that``, ``on``, ``in``)."""

# --------------------------------------------------------------------------------------------
# Sentence trees
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VP:
    """A verb phrase: ``verb`` (a key of ``LEXICON['verbs']``) with an object or a place.

    Transitive verbs take ``obj``; place verbs take ``prep`` ("on"/"in") and ``obj`` as the place.
    """

    verb: str
    obj: NP
    prep: str | None = None


@dataclass(frozen=True)
class NP:
    """A noun phrase: ``the/a [adj] [adj] noun [that VP]``; ``adjs`` in English order."""

    noun: str
    plural: bool = False
    definite: bool = True
    adjs: tuple[str, ...] = ()
    rel: VP | None = None


@dataclass(frozen=True)
class Clause:
    subj: NP
    vp: VP


@dataclass(frozen=True)
class Sentence:
    """One or two clauses; ``connector`` ("because", "and", "but") joins them."""

    clauses: tuple[Clause, ...]
    connector: str | None = None


# --------------------------------------------------------------------------------------------
# Realisation: tree -> tokens
# --------------------------------------------------------------------------------------------


def _en_np(np_: NP) -> list[str]:
    n = _NOUNS[np_.noun]
    words = [*np_.adjs, n.en[np_.plural]]
    if np_.definite or np_.plural:
        det = "the"
    else:
        det = "an" if words[0][0] in "aeiou" else "a"
    out = [det, *words]
    if np_.rel is not None:
        out += ["that", *_en_vp(np_.rel, np_.plural)]
    return out


def _en_vp(vp: VP, plural: bool) -> list[str]:
    v = _VERBS[vp.verb]
    verb = v.en[plural] if isinstance(v.en, tuple) else v.en
    if v.kind == "transitive":
        return [verb, *_en_np(vp.obj)]
    return [verb, vp.prep, *_en_np(vp.obj)]


def _fr_gender_number(np_: NP) -> int:
    """Index into French (m sg, f sg, m pl, f pl) tables."""
    return (2 if np_.plural else 0) + (_NOUNS[np_.noun].fr_gender == "f")


def _fr_np(np_: NP) -> list[str]:
    n = _NOUNS[np_.noun]
    gn = _fr_gender_number(np_)
    if np_.plural:
        det = "les"
    elif np_.definite:
        det = "la" if n.fr_gender == "f" else "le"
    else:
        det = "une" if n.fr_gender == "f" else "un"
    before = [_ADJECTIVES[a].fr[gn] for a in np_.adjs if _ADJECTIVES[a].fr_before_noun]
    after = [_ADJECTIVES[a].fr[gn] for a in np_.adjs if not _ADJECTIVES[a].fr_before_noun]
    out = [det, *before, n.fr[np_.plural], *after]
    if np_.rel is not None:
        out += ["qui", *_fr_vp(np_.rel, np_)]
    return out


def _fr_vp(vp: VP, subj: NP) -> list[str]:
    v = _VERBS[vp.verb]
    gn = _fr_gender_number(subj)
    if v.fr[0] == "avoir":
        verb = ["ont" if subj.plural else "a", v.fr[1]]
    elif v.fr[0] == "être":
        verb = ["sont" if subj.plural else "est"]
    else:  # s'asseoir: reflexive, so the participle agrees with the subject
        aux = ["se", "sont"] if subj.plural else ["s'est"]
        verb = [*aux, ("assis", "assise", "assis", "assises")[gn]]
    if v.kind == "transitive":
        return [*verb, *_fr_np(vp.obj)]
    return [*verb, _PREP[vp.prep][0], *_fr_np(vp.obj)]


def _ru_np(np_: NP, case: str) -> list[str]:
    n = _NOUNS[np_.noun]
    adjs = [_ADJECTIVES[a].ru(case, n.ru_gender, np_.plural, n.animate) for a in np_.adjs]
    out = [*adjs, n.ru[case][np_.plural]]
    if np_.rel is not None:
        # "который" agrees with its noun in gender and number; it is the subject of the clause
        which = (
            "которые"
            if np_.plural
            else {"m": "который", "f": "которая", "n": "которое"}[n.ru_gender]
        )
        out += [",", which, *_ru_vp(np_.rel, np_), ","]
    return out


def _ru_vp(vp: VP, subj: NP) -> list[str]:
    v = _VERBS[vp.verb]
    g = _NOUNS[subj.noun].ru_gender
    verb = v.ru[3] if subj.plural else v.ru["mfn".index(g)]
    out = [verb] if verb else []  # present-tense "is" has no Russian verb: кот на коврике
    if v.kind == "transitive":
        prep = [v.ru_prep_override] if v.ru_prep_override else []
        return [*out, *prep, *_ru_np(vp.obj, v.ru_case)]
    return [*out, _PREP[vp.prep][1], *_ru_np(vp.obj, v.ru_case)]


def _tidy_commas(tokens: list[str]) -> list[str]:
    """Drop a comma that doubles another one or ends the sentence (Russian clause commas)."""
    out: list[str] = []
    for tok in tokens:
        if tok == "," and out and out[-1] == ",":
            continue
        out.append(tok)
    while out and out[-1] == ",":
        out.pop()
    return out


def realize(sentence: Sentence | Clause, lang: str) -> str:
    """The sentence in ``lang`` ("en", "fr" or "ru"): lowercase tokens joined by single spaces.

    >>> s = Sentence((Clause(NP("cat"), VP("sat", NP("mat"), "on")),))
    >>> realize(s, "en"), realize(s, "fr"), realize(s, "ru")
    ('the cat sat on the mat', "le chat s'est assis sur le tapis", 'кот сел на коврик')
    """
    if lang not in ("en", "fr", "ru"):
        raise ValueError(f"lang must be 'en', 'fr' or 'ru', got {lang!r}")
    if isinstance(sentence, Clause):
        sentence = Sentence((sentence,))
    if not isinstance(sentence, Sentence):
        raise TypeError(f"sentence must be a Sentence or Clause, got {type(sentence).__name__}")
    parts: list[list[str]] = []
    for clause in sentence.clauses:
        if lang == "en":
            parts.append(_en_np(clause.subj) + _en_vp(clause.vp, clause.subj.plural))
        elif lang == "fr":
            parts.append(_fr_np(clause.subj) + _fr_vp(clause.vp, clause.subj))
        else:
            parts.append(_ru_np(clause.subj, "nom") + _ru_vp(clause.vp, clause.subj))
    tokens = parts[0]
    if len(parts) > 1:
        if sentence.connector not in _CONNECTORS:
            raise ValueError(
                f"connector must be one of {tuple(_CONNECTORS)}, got {sentence.connector!r}"
            )
        word = {"en": sentence.connector, "fr": _CONNECTORS[sentence.connector][0],
                "ru": _CONNECTORS[sentence.connector][1]}[lang]  # fmt: skip
        for part in parts[1:]:
            tokens = tokens + word.split() + part
    return " ".join(_tidy_commas(tokens))


# --------------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------------


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
    if rng.random() < 0.4:
        first, second = _sample_clause(rng, 0.3), _sample_clause(rng, 0.3)
        return Sentence((first, second), rng.choice(tuple(_CONNECTORS)))
    return Sentence((_sample_clause(rng, 0.35),))


def generate_pairs(
    n: int, target: str = "ru", *, seed: int = 0, max_len: int = 30
) -> list[tuple[str, str]]:
    """``n`` distinct (English, target) sentence pairs, the same for the same seed.

    Args:
        n: number of pairs; English sides are all different.
        target: "fr" or "ru".
        seed: seed of the private random generator (global random state is not touched).
        max_len: longest sentence allowed, in tokens, on either side.

    Returns:
        A list of ``(source, target)`` strings, tokens separated by single spaces.
    """
    n = check_positive_int(n, "n")
    max_len = check_positive_int(max_len, "max_len")
    if target not in TARGET_LANGUAGES:
        raise ValueError(f"target must be one of {TARGET_LANGUAGES}, got {target!r}")
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    tries = 0
    while len(pairs) < n:
        tries += 1
        if tries > 50 * n + 1000:
            raise ValueError(f"could not draw {n} distinct sentences of at most {max_len} tokens")
        s = sample_sentence(rng)
        src = realize(s, "en")
        if src in seen:
            continue
        tgt = realize(s, target)
        if max(len(src.split()), len(tgt.split())) > max_len:
            continue
        seen.add(src)
        pairs.append((src, tgt))
    return pairs


# --------------------------------------------------------------------------------------------
# Tokens, vocabularies, batches
# --------------------------------------------------------------------------------------------

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
_PUNCT = re.compile(r"([,.!?;:])")


def tokenize(sentence: str) -> list[str]:
    """Lowercase words; punctuation becomes its own token; a final full stop is dropped.

    ``"The cat sat on the mat."`` → ``['the', 'cat', 'sat', 'on', 'the', 'mat']``.
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    tokens = _PUNCT.sub(r" \1 ", sentence.lower()).split()
    while tokens and tokens[-1] in ".!?":
        tokens.pop()
    return tokens


class Vocab:
    """Token ↔ id table; ids 0–3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``."""

    def __init__(self, tokens: Iterable[str]):
        self.itos: list[str] = [PAD, BOS, EOS, UNK]
        for tok in tokens:
            if tok not in self.itos:
                self.itos.append(tok)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    @classmethod
    def build(cls, sentences: Iterable[str], min_freq: int = 1) -> Vocab:
        """Vocabulary of the tokens seen at least ``min_freq`` times, most frequent first."""
        counts = Counter(tok for s in sentences for tok in tokenize(s))
        ordered = sorted(counts, key=lambda t: (-counts[t], t))
        return cls(t for t in ordered if counts[t] >= min_freq)

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[:8])} …)"

    def encode(
        self, sentence: str | Sequence[str], *, bos: bool = False, eos: bool = False
    ) -> list[int]:
        """Ids of the tokens of ``sentence`` (a string or a token list); unknown → ``<unk>``."""
        tokens = tokenize(sentence) if isinstance(sentence, str) else list(sentence)
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Tokens of ``ids`` up to the first ``<eos>``, without ``<pad>``/``<bos>``."""
        out = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            out.append(self.itos[i] if 0 <= i < len(self.itos) else UNK)
        return " ".join(out)


@dataclass
class TranslationData:
    """Train/test pairs of one language pair and the vocabularies built from the training set."""

    train: list[tuple[str, str]]
    test: list[tuple[str, str]]
    src_vocab: Vocab
    tgt_vocab: Vocab
    target: str


def make_translation_data(
    target: str = "ru", n_train: int = 20000, n_test: int = 600, *, seed: int = 0, max_len: int = 30
) -> TranslationData:
    """Generate a corpus and split it: no test sentence (source or target) occurs in training.

    Different English sentences can share a translation (Russian has no articles: "a cat" and
    "the cat" are both "кот"), so test pairs whose target also occurs in training are dropped
    and replaced.
    """
    n_train = check_positive_int(n_train, "n_train")
    n_test = check_positive_int(n_test, "n_test")
    pairs = generate_pairs(n_train + 2 * n_test, target, seed=seed, max_len=max_len)
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


@dataclass
class Batch:
    """Padded id tensors of a batch of pairs (``B`` pairs, ``S``/``T`` the longest lengths).

    Attributes:
        src: ``(B, S)`` source ids (no ``<bos>``/``<eos>``), ``<pad>`` on the right.
        src_mask: ``(B, S)`` bool, True for real tokens (the keys a decoder may attend to).
        tgt_in: ``(B, T)`` decoder input: ``<bos> y_1 … y_n`` (teacher forcing).
        tgt_out: ``(B, T)`` what to predict at each position: ``y_1 … y_n <eos>``.
        tgt_mask: ``(B, T)`` bool, True where ``tgt_out`` is a real token (counts in the loss).
    """

    src: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_mask: torch.Tensor

    def __len__(self) -> int:
        return self.src.shape[0]


def _pad(seqs: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out


def make_batch(pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> Batch:
    """Encode and pad ``pairs`` into a :class:`Batch`."""
    if len(pairs) == 0:
        raise ValueError("pairs is empty; a batch needs at least one (source, target) pair")
    src = _pad([src_vocab.encode(s) for s, _ in pairs], src_vocab.pad_id)
    tgt = [tgt_vocab.encode(t, bos=True, eos=True) for _, t in pairs]
    tgt_in = _pad([t[:-1] for t in tgt], tgt_vocab.pad_id)
    tgt_out = _pad([t[1:] for t in tgt], tgt_vocab.pad_id)
    return Batch(src, src != src_vocab.pad_id, tgt_in, tgt_out, tgt_out != tgt_vocab.pad_id)


def batch_iterator(
    pairs: Sequence[tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int = 64,
    *,
    seed: int = 0,
    bucket: int = 20,
) -> Iterator[Batch]:
    """Endless shuffled batches, epoch after epoch, the same sequence for the same seed.

    Sentences of similar length go together (pools of ``bucket`` batches are sorted by length
    before they are cut), so little compute is spent on padding.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    if len(pairs) < batch_size:
        raise ValueError(f"need at least batch_size={batch_size} pairs, got {len(pairs)}")
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    while True:
        rng.shuffle(order)
        pool = batch_size * bucket
        chunks = []
        for start in range(0, len(order) - batch_size + 1, pool):
            part = sorted(order[start : start + pool], key=lambda i: len(pairs[i][0].split()))
            chunks += [
                part[k : k + batch_size] for k in range(0, len(part) - batch_size + 1, batch_size)
            ]
        rng.shuffle(chunks)
        for idx in chunks:
            yield make_batch([pairs[i] for i in idx], src_vocab, tgt_vocab)
