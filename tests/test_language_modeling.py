"""Lecture 11's data pipeline (held-out split, byte-level tokens, bits per character) and the
unigram/bigram count baselines, checked by hand."""

import math

import pytest
import torch

from course_lib import GPT, GPTConfig, generate
from course_lib.data.language_modeling import (
    END_OF_TEXT,
    bits_per_char,
    encode_documents,
    evaluate_lm,
    known_word_fraction,
    lm_corpus,
    lm_documents,
    lm_tokenizer,
    random_windows,
)
from course_lib.data.pretraining import load_pretraining_corpus
from course_lib.models.ngram import CountLM, bigram_lm, unigram_lm


@pytest.fixture(scope="module")
def corpus():
    return lm_corpus(300)


def test_held_out_documents_share_no_sentence_with_training():
    train, held = lm_documents()
    docs = load_pretraining_corpus()
    assert len(held) == len(docs) // 10 and len(train) + len(held) == len(docs)
    train_sentences = {s for i, d in enumerate(docs) if i % 10 != 9 for s in d}
    held_sentences = [s for i, d in enumerate(docs) if i % 10 == 9 for s in d]
    assert len(held_sentences) > 300
    assert not train_sentences.intersection(held_sentences)
    assert held == [" ".join(d) for i, d in enumerate(docs) if i % 10 == 9]


def test_tokenizer_is_byte_level_with_end_of_text_first(corpus):
    tok = corpus.tokenizer
    assert tok.byte_level and len(tok) == 300 and tok.vocab[END_OF_TEXT] == 0 == corpus.eot_id
    assert lm_tokenizer(300) is tok  # cached
    with pytest.raises(ValueError, match="257"):
        lm_tokenizer(200)


def test_streams_decode_back_to_the_documents(corpus):
    train, held = lm_documents()
    assert corpus.tokenizer.decode(corpus.held_out_ids.tolist(), skip_special_tokens=False) == (
        "".join(d + END_OF_TEXT for d in held)
    )
    assert int((corpus.train_ids == 0).sum()) == len(train)
    assert corpus.held_out_chars == sum(len(d) + 1 for d in held)
    ids = encode_documents(corpus.tokenizer, ["a b", "c"])
    assert ids.tolist() == corpus.tokenizer.encode("a b") + [0] + corpus.tokenizer.encode("c") + [0]


def test_bits_per_char_by_hand():
    # 10 tokens at ln 2 nats each = 10 bits, over 5 characters = 2 bits/char
    assert bits_per_char(math.log(2), 10, 5) == pytest.approx(2.0)


def test_random_windows_are_consecutive_slices():
    ids = torch.arange(100)
    w = random_windows(ids, 4, 9, torch.Generator().manual_seed(0))
    assert w.shape == (4, 10)
    assert ((w[:, 1:] - w[:, :-1]) == 1).all()
    again = random_windows(ids, 4, 9, torch.Generator().manual_seed(0))
    assert torch.equal(w, again)
    with pytest.raises(ValueError, match="at least length"):
        random_windows(ids[:5], 2, 9)


def test_evaluate_lm_predicts_every_token_but_the_first_once():
    torch.manual_seed(0)
    model = GPT(GPTConfig(20, 8, 16, 2, 1)).eval()
    ids = torch.randint(0, 20, (19,))
    total = 0.0
    for start in (0, 8, 16):  # blocks of 8 predictions: 8 + 8 + 2 = 18 targets
        x = ids[start : start + 9]
        logp = torch.log_softmax(model(x[None, :-1])[0], dim=-1)
        total -= logp[torch.arange(len(x) - 1), x[1:]].sum().item()
    assert evaluate_lm(model, ids) == pytest.approx(total / 18, rel=1e-6)


def test_unigram_and_bigram_by_hand():
    ids = torch.tensor([0, 1, 1, 2, 1])
    uni = unigram_lm(ids, 3)  # counts 1, 3, 1 of 5 tokens: (c + 1) / (5 + 3)
    torch.testing.assert_close(
        uni.log_probs.exp(), torch.tensor([2, 4, 2], dtype=torch.float64) / 8
    )
    big = bigram_lm(ids, 3, beta=2.0)
    # after token 1: pairs (1,1) and (1,2) once each -> (c + 2 P(b)) / (2 + 2)
    expected = (torch.tensor([0, 1, 1]) + 2 * torch.tensor([0.25, 0.5, 0.25])) / 4
    torch.testing.assert_close(big.next_token_log_probs(1).exp(), expected.double())
    # after token 2 only (2,1): row sums to 1
    torch.testing.assert_close(big.log_probs.exp().sum(1), torch.ones(3, dtype=torch.float64))
    # nll of [1, 2]: -log P(2 | 1)
    assert big.nll(torch.tensor([1, 2])) == pytest.approx(-math.log(expected[2].item()))
    assert uni.nll(torch.tensor([2, 1, 0])) == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 2)


def test_count_model_errors():
    with pytest.raises(ValueError, match="vocab_size=3"):
        unigram_lm(torch.tensor([0, 3]), 3)
    with pytest.raises(TypeError, match=r"torch.long tensor of token ids \(n,\)"):
        bigram_lm(torch.tensor([0.0, 1.0]), 3)
    with pytest.raises(ValueError, match="beta"):
        bigram_lm(torch.tensor([0, 1]), 3, beta=0)
    with pytest.raises(ValueError, match="previous token"):
        bigram_lm(torch.tensor([0, 1]), 3).next_token_log_probs()
    with pytest.raises(ValueError, match="at least 2 tokens"):
        CountLM(torch.zeros(3)).nll(torch.tensor([1]))


def test_known_word_fraction_by_hand():
    assert known_word_fraction("The cat, the DOG! x2", "the cat sat") == pytest.approx(3 / 5)
    assert known_word_fraction(["abc", "def"], ["ABC def"]) == 1.0
    with pytest.raises(ValueError, match="no words"):
        known_word_fraction("123 !!", "abc")


def test_count_models_as_language_models_for_generate():
    ids = torch.tensor([0, 1, 1, 2, 1, 0, 1, 2])
    big = bigram_lm(ids, 3, beta=2.0)
    uni = unigram_lm(ids, 3)
    batch = torch.tensor([[0, 2], [1, 1]])
    out = big(batch)  # (2, 2, 3): row t is P(next | batch[:, t])
    assert out.shape == (2, 2, 3)
    torch.testing.assert_close(out[0, 1], big.next_token_log_probs(2), rtol=0, atol=0)
    torch.testing.assert_close(uni(batch)[1, 0], uni.next_token_log_probs(), rtol=0, atol=0)
    # greedy from a bigram: each next token is the argmax of its row, worked out by hand
    # counts after 0: {1: 2}; after 1: {1: 1, 2: 2, 0: 1}; after 2: {1: 1}
    assert generate(big, torch.tensor([[0]]), 4, temperature=0).tolist() == [[0, 1, 2, 1, 2]]
    # sampling: the unigram's draws follow its probabilities (c + 1) / (8 + 3) = 3/11, 5/11, 3/11
    gen = torch.Generator().manual_seed(0)
    drawn = generate(uni, torch.zeros(1000, 1, dtype=torch.long), 1, generator=gen)[:, 1]
    freq = torch.bincount(drawn, minlength=3) / 1000
    torch.testing.assert_close(freq, torch.tensor([3, 5, 3]) / 11, rtol=0, atol=0.05)
    with pytest.raises(ValueError, match=r"ids must lie in \[0, vocab_size=3\)"):
        big(torch.tensor([[3]]))
    with pytest.raises(ValueError, match=r"eos_id must be in \[0, vocab_size=3\), got 3"):
        generate(big, torch.tensor([[0]]), 2, eos_id=3)
