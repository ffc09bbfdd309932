"""The translation corpus: grammar (checked against hand-written translations), agreement,
determinism, the train/test split, vocabularies and padded batches."""

import random

import pytest
import torch

from course_lib.data import (
    NP,
    VP,
    Clause,
    Sentence,
    Vocab,
    batch_iterator,
    generate_pairs,
    make_batch,
    make_translation_data,
    realize,
    sample_sentence,
    word_tokens,
)


def one(subj, vp):
    return Sentence((Clause(subj, vp),))


# Each tree with its translations, written by hand (not produced by the code under test).
HAND = [
    (one(NP("cat"), VP("sat", NP("mat"), "on")),
     "the cat sat on the mat", "le chat s'est assis sur le tapis", "кот сел на коврик"),
    (one(NP("cat"), VP("is", NP("mat"), "on")),
     "the cat is on the mat", "le chat est sur le tapis", "кот на коврике"),
    (one(NP("cat", plural=True), VP("is", NP("mat"), "on")),
     "the cats are on the mat", "les chats sont sur le tapis", "коты на коврике"),
    (one(NP("mouse", adjs=("small", "black")), VP("sat", NP("sofa", adjs=("red",)), "on")),
     "the small black mouse sat on the red sofa",
     "la petite souris noire s'est assise sur le canapé rouge",
     "маленькая чёрная мышь села на красный диван"),
    (one(NP("girl", plural=True), VP("sat", NP("box", adjs=("old",)), "in")),
     "the girls sat in the old box", "les filles se sont assises dans la vieille boîte",
     "девочки сели в старую коробку"),
    (one(NP("girl", plural=True), VP("slept", NP("box", adjs=("old",)), "in")),
     "the girls slept in the old box", "les filles ont dormi dans la vieille boîte",
     "девочки спали в старой коробке"),
    (one(NP("dog", definite=False, adjs=("big",)), VP("saw", NP("cat", plural=True, adjs=("white",)))),
     "a big dog saw the white cats", "un grand chien a vu les chats blancs",
     "большая собака увидела белых котов"),
    (one(NP("armchair"), VP("is", NP("house", adjs=("big",)), "in")),
     "the armchair is in the big house", "le fauteuil est dans la grande maison",
     "кресло в большом доме"),
    (one(NP("wolf", adjs=("old",), rel=VP("bit", NP("boy"))), VP("jumped", NP("bed"), "on")),
     "the old wolf that bit the boy jumped on the bed",
     "le vieux loup qui a mordu le garçon a sauté sur le lit",
     "старый волк , который укусил мальчика , прыгнул на кровать"),
    (one(NP("boy"), VP("found", NP("box", rel=VP("is", NP("table"), "on")))),
     "the boy found the box that is on the table",
     "le garçon a trouvé la boîte qui est sur la table",
     "мальчик нашёл коробку , которая на столе"),
    (one(NP("cat", definite=False, adjs=("old",)), VP("heard", NP("fox", plural=True, adjs=("small",)))),
     "an old cat heard the small foxes", "un vieux chat a entendu les petits renards",
     "старый кот услышал маленьких лис"),
    (Sentence((Clause(NP("fox"), VP("watched", NP("mouse", plural=True))),
               Clause(NP("rat"), VP("slept", NP("roof"), "on"))), "because"),
     "the fox watched the mice because the rat slept on the roof",
     "le renard a regardé les souris parce que le rat a dormi sur le toit",
     "лиса смотрела на мышей , потому что крыса спала на крыше"),
    (Sentence((Clause(NP("boy", rel=VP("played", NP("chair", plural=True), "on")),
                      VP("saw", NP("girl", definite=False))),
               Clause(NP("girl"), VP("sat", NP("armchair", adjs=("grey",)), "in"))), "but"),
     "the boy that played on the chairs saw a girl but the girl sat in the grey armchair",
     "le garçon qui a joué sur les chaises a vu une fille mais la fille s'est assise dans le fauteuil gris",
     "мальчик , который играл на стульях , увидел девочку , но девочка села в серое кресло"),
]  # fmt: skip


@pytest.mark.parametrize(("tree", "en", "fr", "ru"), HAND, ids=[h[1] for h in HAND])
def test_realize_matches_hand_translations(tree, en, fr, ru):
    assert realize(tree, "en") == en
    assert realize(tree, "fr") == fr
    assert realize(tree, "ru") == ru


def test_generation_is_deterministic_and_seeded():
    a = generate_pairs(300, "fr", seed=3)
    assert a == generate_pairs(300, "fr", seed=3)
    assert a != generate_pairs(300, "fr", seed=4)
    # the private generator leaves the global random state alone
    random.seed(0)
    x = random.random()
    random.seed(0)
    generate_pairs(10, "ru")
    assert random.random() == x


def test_sources_are_distinct_and_lengths_span_3_to_30():
    pairs = generate_pairs(4000, "ru", seed=0)
    sources = [s for s, _ in pairs]
    assert len(set(sources)) == len(sources)
    lengths = [len(s.split()) for s in sources] + [len(t.split()) for _, t in pairs]
    assert min(lengths) <= 4 and max(lengths) >= 28 and max(lengths) <= 30


def test_notes_sentence_is_in_the_grammar():
    # the grammar's vocabulary covers the notes' example, and the model's vocabulary too
    data = make_translation_data("ru", n_train=3000, n_test=100, seed=0)
    for word in "the cat sat on mat is".split():
        assert word in data.src_vocab.stoi
    for word in "кот сел на коврик коврике".split():
        assert word in data.tgt_vocab.stoi


def test_train_and_test_do_not_overlap():
    data = make_translation_data("ru", n_train=3000, n_test=200, seed=1)
    assert len(data.train) == 3000 and len(data.test) == 200
    assert not {s for s, _ in data.train} & {s for s, _ in data.test}
    # Russian has no articles: "a cat"/"the cat" share a translation; such test pairs are dropped
    assert not {t for _, t in data.train} & {t for _, t in data.test}
    again = make_translation_data("ru", n_train=3000, n_test=200, seed=1)
    assert again.test == data.test and again.tgt_vocab.itos == data.tgt_vocab.itos


# ---- agreement rules, checked on many sampled sentences with word lists written here ----

FR_FEMININE = {"souris", "fille", "filles", "chaise", "chaises", "boîte", "boîtes", "maison",
               "maisons", "table", "tables"}  # fmt: skip
FR_NOUNS = FR_FEMININE | {"chat", "chats", "chien", "chiens", "rat", "rats", "renard", "renards",
    "loup", "loups", "garçon", "garçons", "tapis", "lit", "lits", "canapé", "canapés", "toit",
    "toits", "panier", "paniers", "fauteuil", "fauteuils"}  # fmt: skip
FR_PLURAL_NOUNS = {n for n in FR_NOUNS if n.endswith("s") or n.endswith("x")} - {"souris", "tapis"}


def _next_noun(tokens, i):
    return next(t for t in tokens[i + 1 :] if t in FR_NOUNS)


def test_french_articles_agree_with_their_noun():
    for _, fr in generate_pairs(1500, "fr", seed=5):
        tokens = fr.split()
        for i, tok in enumerate(tokens):
            if tok in ("la", "une"):
                assert _next_noun(tokens, i) in FR_FEMININE, fr
            elif tok in ("le", "un"):
                assert _next_noun(tokens, i) not in FR_FEMININE, fr
            elif tok == "les":
                noun = _next_noun(tokens, i)
                assert noun in FR_PLURAL_NOUNS or noun in ("souris", "tapis"), fr


def test_french_colour_adjectives_follow_the_noun_and_agree():
    colours = {"noir": "ms", "noire": "fs", "noirs": "mp", "noires": "fp", "blanc": "ms",
               "blanche": "fs", "blancs": "mp", "blanches": "fp"}  # fmt: skip
    for _, fr in generate_pairs(1500, "fr", seed=6):
        tokens = fr.split()
        for i, tok in enumerate(tokens):
            if tok in colours:
                noun = tokens[i - 1]
                assert noun in FR_NOUNS, fr  # after the noun, not before it
                gender = "f" if noun in FR_FEMININE else "m"
                assert colours[tok][0] == gender, fr


def test_russian_past_tense_agrees_with_the_subject():
    # single clauses whose subject is a bare noun: the verb right after it shows its gender
    subject_gender = {"кот": "m", "волк": "m", "мальчик": "m", "собака": "f", "мышь": "f",
                      "крыса": "f", "лиса": "f", "девочка": "f"}  # fmt: skip
    plural_subjects = {"коты", "волки", "мальчики", "собаки", "мыши", "крысы", "лисы", "девочки"}
    rng = random.Random(7)
    checked = 0
    for _ in range(3000):
        s = sample_sentence(rng)
        if len(s.clauses) != 1 or s.clauses[0].subj.adjs or s.clauses[0].subj.rel:
            continue
        if s.clauses[0].vp.verb == "is":
            continue
        noun, verb = realize(s, "ru").split()[:2]
        if noun in plural_subjects:
            assert verb.endswith("и"), (noun, verb)
        elif subject_gender[noun] == "f":
            assert verb.endswith("а"), (noun, verb)
        else:
            assert verb[-1] in "лн" or verb == "нашёл", (noun, verb)
        checked += 1
    assert checked > 200


def test_russian_case_follows_the_verb():
    # "sat on" asks where to (accusative), "slept on" asks where (prepositional)
    for verb, expected in (
        ("sat", "крышу"),
        ("jumped", "крышу"),
        ("slept", "крыше"),
        ("played", "крыше"),
    ):
        assert realize(one(NP("cat"), VP(verb, NP("roof"), "on")), "ru").split()[-1] == expected
    # animate objects take the genitive form in the accusative, inanimate ones do not
    assert realize(one(NP("cat"), VP("saw", NP("boy"))), "ru").endswith("мальчика")
    assert realize(one(NP("cat"), VP("saw", NP("sofa"))), "ru").endswith("диван")
    assert realize(one(NP("cat"), VP("saw", NP("sofa", adjs=("red",)))), "ru").endswith(
        "красный диван"
    )
    assert realize(one(NP("cat"), VP("saw", NP("boy", adjs=("happy",)))), "ru").endswith(
        "весёлого мальчика"
    )


def test_realize_and_generate_reject_bad_arguments():
    tree = one(NP("cat"), VP("sat", NP("mat"), "on"))
    with pytest.raises(ValueError, match="lang must be"):
        realize(tree, "de")
    with pytest.raises(TypeError, match="Sentence or Clause"):
        realize("the cat", "fr")
    with pytest.raises(ValueError, match="target must be one of"):
        generate_pairs(5, "de")
    with pytest.raises(ValueError, match="n must be >= 1"):
        generate_pairs(0, "fr")


# ---- tokens, vocabularies, batches ----


def test_word_tokens_lowercases_and_splits_punctuation():
    assert word_tokens("The cat sat on the mat.") == ["the", "cat", "sat", "on", "the", "mat"]
    assert word_tokens("Кот, который спал") == ["кот", ",", "который", "спал"]
    assert word_tokens("le chat s'est assis") == ["le", "chat", "s'est", "assis"]
    with pytest.raises(TypeError, match="sentence must be a str"):
        word_tokens(["the", "cat"])


def test_vocab_special_tokens_encode_and_decode():
    v = Vocab.build(["the cat sat", "the mat"])
    assert v.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (v.pad_id, v.bos_id, v.eos_id, v.unk_id) == (0, 1, 2, 3)
    assert v.itos[4] == "the"  # most frequent first
    ids = v.encode("The cat sat on the mat", bos=True, eos=True)
    assert ids[0] == 1 and ids[-1] == 2 and ids[4] == v.unk_id  # "on" is unknown
    assert v.decode(ids) == "the cat sat <unk> the mat"
    assert v.decode([v.stoi["cat"], 2, v.stoi["mat"]]) == "cat"  # stops at <eos>
    assert len(v) == 4 + 4


def test_make_batch_pads_and_masks():
    pairs = [("the cat sat on the mat", "кот сел на коврик"), ("the cat slept", "кот спал")]
    sv, tv = Vocab.build(s for s, _ in pairs), Vocab.build(t for _, t in pairs)
    b = make_batch(pairs, sv, tv)
    assert b.src.shape == (2, 6) and b.src.dtype == torch.long
    assert b.src_mask.tolist() == [[True] * 6, [True] * 3 + [False] * 3]
    assert (b.src[1, 3:] == 0).all()
    assert b.tgt_in.shape == b.tgt_out.shape == b.tgt_mask.shape == (2, 5)
    assert b.tgt_in[:, 0].tolist() == [1, 1]  # <bos>
    assert tv.decode(b.tgt_in[0, 1:]) == "кот сел на коврик"
    assert b.tgt_out[0, 4].item() == 2 and b.tgt_out[1, 2].item() == 2  # <eos> after the last word
    assert b.tgt_mask.sum(1).tolist() == [5, 3]
    assert (b.tgt_out[~b.tgt_mask] == 0).all()
    words = b.tgt_mask[:, 1:]  # positions t whose target is a word (not <eos>, not padding)
    assert torch.equal(b.tgt_in[:, 1:][words], b.tgt_out[:, :-1][words])  # shifted by one
    with pytest.raises(ValueError, match="pairs is empty"):
        make_batch([], sv, tv)


def test_batch_iterator_is_seeded_and_buckets_lengths():
    data = make_translation_data("fr", n_train=600, n_test=50, seed=2)
    a = batch_iterator(data.train, data.src_vocab, data.tgt_vocab, 32, seed=0)
    b = batch_iterator(data.train, data.src_vocab, data.tgt_vocab, 32, seed=0)
    first = [next(a) for _ in range(40)]  # more than one epoch (600 // 32 = 18 batches)
    for x in first:
        y = next(b)
        assert torch.equal(x.src, y.src) and torch.equal(x.tgt_out, y.tgt_out)
        assert len(x) == 32
        lengths = x.src_mask.sum(1)
        assert lengths.max() - lengths.min() <= 8  # similar lengths in one batch
    with pytest.raises(ValueError, match="batch_size"):
        next(batch_iterator(data.train[:10], data.src_vocab, data.tgt_vocab, 32))
