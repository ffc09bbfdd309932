"""Pretraining data: corpus, pair format, NSP 50/50, masking rates 15 % and 80/10/10 (statistically)."""

import numpy as np
import pytest

from course_lib.checks import within
from course_lib.data.pretraining import (
    IGNORE_INDEX,
    SPECIAL_TOKENS,
    PretrainingData,
    load_pretraining_corpus,
    make_nsp_pair,
    mask_tokens,
    pair_input,
    pretraining_tokenizer,
    split_documents,
    truncate_pair,
)


@pytest.fixture(scope="module")
def docs():
    return load_pretraining_corpus()


@pytest.fixture(scope="module")
def data(docs):
    return PretrainingData(pretraining_tokenizer(), split_documents(docs)[0], seq_len=64)


def test_corpus_is_real_english_in_documents(docs):
    assert len(docs) == 701
    assert sum(len(d) for d in docs) == 3901
    assert all(len(d) >= 2 for d in docs)
    words = " ".join(s for d in docs for s in d).lower().split()
    assert len(words) > 60000
    # The most common English words are the most common here too.
    top = [w for w, _ in __import__("collections").Counter(words).most_common(5)]
    assert {"the", "a", "of", "is", "to"} & set(top)


def test_split_documents():
    train, held = split_documents(list(range(25)), every=10)
    assert held == [9, 19] and len(train) == 23
    with pytest.raises(ValueError, match="every must be >= 1"):
        split_documents([1], every=0)


def test_pair_input_by_hand():
    tokens, segments = pair_input(["my", "dog"], ["is", "cute"])
    assert tokens == ["[CLS]", "my", "dog", "[SEP]", "is", "cute", "[SEP]"]
    assert segments == [0, 0, 0, 0, 1, 1, 1]
    ids, seg = pair_input([7], [], cls=2, sep=3)
    assert ids == [2, 7, 3, 3] and seg == [0, 0, 0, 1]


def test_truncate_pair_drops_from_the_longer():
    a, b = truncate_pair([1, 2, 3, 4, 5], [6, 7], 5)
    assert a == [1, 2, 3] and b == [6, 7]
    a, b = truncate_pair([1, 2], [3, 4, 5], 2)
    assert a == [1] and b == [3]
    with pytest.raises(TypeError, match="max_tokens must be an integer"):
        truncate_pair([1], [2], 1.5)


def test_nsp_pairs_half_true_and_correct(docs):
    rng = np.random.default_rng(1)
    positions = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
    n, n_true = 4000, 0
    for _ in range(n):
        d, i = positions[int(rng.integers(len(positions)))]
        a, b, is_next = make_nsp_pair(docs, d, i, rng)
        assert a == docs[d][i]
        if is_next:
            n_true += 1
            assert b == docs[d][i + 1]
        else:
            assert b not in docs[d]  # sentences are unique in the corpus
    assert within(n_true, n, 0.5)
    with pytest.raises(ValueError, match="so that a next sentence exists"):
        make_nsp_pair(docs, 0, len(docs[0]) - 1, rng)
    with pytest.raises(ValueError, match="doc must be in"):
        make_nsp_pair(docs, len(docs), 0, rng)


def test_masking_rates_statistically():
    rng = np.random.default_rng(0)
    vocab_size, specials = 1000, [0, 1, 2, 3, 4]
    ids = rng.integers(5, vocab_size, size=(400, 64))
    ids[:, 0], ids[:, 30], ids[:, 50:] = 2, 3, 0  # [CLS], [SEP], padding
    masked, labels = mask_tokens(ids, rng, mask_id=4, vocab_size=vocab_size, special_ids=specials)
    special = np.isin(ids, specials)
    picked = labels != IGNORE_INDEX
    assert not picked[special].any() and (masked[special] == ids[special]).all()
    assert (labels[picked] == ids[picked]).all()
    assert (masked[~picked] == ids[~picked]).all()
    n_normal, n_picked = int((~special).sum()), int(picked.sum())
    assert within(n_picked, n_normal, 0.15)
    to_mask = int((masked[picked] == 4).sum())
    unchanged = int((masked[picked] == ids[picked]).sum())
    to_random = n_picked - to_mask - unchanged
    assert within(to_mask, n_picked, 0.8)
    # A random replacement can draw the original token (1 in 995): counted as unchanged.
    assert within(to_random, n_picked, 0.1 * (1 - 1 / 995))
    assert within(unchanged, n_picked, 0.1 + 0.1 / 995)
    assert not np.isin(masked[picked & (masked != 4)], specials).any()  # random ids are normal


def test_masking_errors_and_edge_cases():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="input_ids must be integer token ids"):
        mask_tokens(np.zeros(3), rng, mask_id=4, vocab_size=10)
    with pytest.raises(ValueError, match="mask_prob must be a probability"):
        mask_tokens(np.arange(5, 9), rng, mask_id=4, vocab_size=10, mask_prob=1.5)
    masked, labels = mask_tokens(np.array([2, 3, 0]), rng, mask_id=4, vocab_size=10)
    assert (labels == IGNORE_INDEX).all() and masked.tolist() == [2, 3, 0]
    masked, labels = mask_tokens(np.arange(5, 10), rng, mask_id=4, vocab_size=10, mask_prob=1.0)
    assert labels.tolist() == [5, 6, 7, 8, 9]


def test_batches(data):
    rng = np.random.default_rng(0)
    tok = data.tokenizer
    assert [tok.vocab[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    b = data.batch(256, rng)
    assert b["input_ids"].shape == (256, 64) and b["nsp_labels"].shape == (256,)
    ids, segs, att = b["input_ids"].numpy(), b["segment_ids"].numpy(), b["attention_mask"].numpy()
    assert (ids[:, 0] == data.cls_id).all()
    assert ((ids == data.sep_id).sum(axis=1) == 2).all()  # [SEP] is never masked
    assert (att == (ids != data.pad_id)).all()
    assert (segs[~att] == 0).all()
    n_real = att.sum(axis=1)
    assert (ids[np.arange(256), n_real - 1] == data.sep_id).all()
    assert within(int(b["nsp_labels"].sum()), 256, 0.5)
    picked = b["mlm_labels"].numpy() != IGNORE_INDEX
    assert within(int(picked.sum()), int(att.sum() - 3 * 256), 0.15)
    clean = data.batch(8, rng, mask=False)
    assert (clean["mlm_labels"] == IGNORE_INDEX).all()
    first = data.example(rng, position=0)
    assert tok.decode(first["input_ids"]).startswith(
        " ".join(data.tokenizer.decode(data.documents[0][0]).split())
    )


def test_pretraining_data_errors():
    with pytest.raises(ValueError, match="seq_len must be >= 5"):
        PretrainingData(pretraining_tokenizer(), [["a b."], ["c d."]], seq_len=4)
    with pytest.raises(ValueError, match="documents must hold >= 2 documents"):
        PretrainingData(pretraining_tokenizer(), [["a b.", "c d."]])
