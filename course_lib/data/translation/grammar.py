"""The grammar of the generated corpus: the lexicon (English, French, Russian), the sentence
trees (:class:`Sentence` of :class:`Clause`, :class:`NP`, :class:`VP`) and :func:`realize`, which
writes a tree out in one language. See :mod:`course_lib.data.translation` for why a grammar.

About 150 of its lines are the lexicon: data that belongs beside the rules that use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._validation import check_choice, check_type

__all__ = ["NP", "VP", "Clause", "Sentence", "LEXICON", "TARGET_LANGUAGES", "realize"]

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

    def __post_init__(self):
        check_choice(self.verb, "verb", _VERBS)
        check_type(self.obj, "obj", NP)
        if _VERBS[self.verb].kind == "place":
            check_choice(self.prep, "prep", _PREP, f" for the place verb {self.verb!r}")


@dataclass(frozen=True)
class NP:
    """A noun phrase: ``the/a [adj] [adj] noun [that VP]``; ``adjs`` in English order."""

    noun: str
    plural: bool = False
    definite: bool = True
    adjs: tuple[str, ...] = ()
    rel: VP | None = None

    def __post_init__(self):
        check_choice(self.noun, "noun", _NOUNS)
        check_type(self.adjs, "adjs", tuple)
        for adj in self.adjs:
            check_choice(adj, "adjs[i]", _ADJECTIVES)
        if self.rel is not None:
            check_type(self.rel, "rel", VP)


@dataclass(frozen=True)
class Clause:
    subj: NP
    vp: VP

    def __post_init__(self):
        check_type(self.subj, "subj", NP)
        check_type(self.vp, "vp", VP)


@dataclass(frozen=True)
class Sentence:
    """One or two clauses; ``connector`` ("because", "and", "but") joins them."""

    clauses: tuple[Clause, ...]
    connector: str | None = None

    def __post_init__(self):
        check_type(self.clauses, "clauses", tuple)
        if not self.clauses:
            raise ValueError("clauses is empty; a sentence needs at least one Clause")
        for clause in self.clauses:
            check_type(clause, "clauses[i]", Clause)
        if len(self.clauses) > 1:
            check_choice(self.connector, "connector", _CONNECTORS)


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
        word = {"en": sentence.connector, "fr": _CONNECTORS[sentence.connector][0],
                "ru": _CONNECTORS[sentence.connector][1]}[lang]  # fmt: skip
        for part in parts[1:]:
            tokens = tokens + word.split() + part
    return " ".join(_tidy_commas(tokens))
