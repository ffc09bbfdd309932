"""Lecture 12's data and fine-tuning helpers, against independent references."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib.data.docstrings import (
    SPLITS,
    TOPICS,
    load_topic_sentences,
    sentence_pairs,
    topic_documents,
)
from course_lib.models.classifier import (
    BertClassifier,
    SpanHead,
    accuracy_ci,
    confusion_matrix,
    mean_pool,
)


def test_splits_are_disjoint_by_docstring_and_sentence():
    docs = {s: set(topic_documents(s)) for s in SPLITS}
    sents = {s: set(load_topic_sentences(s)[0]) for s in SPLITS}
    for a in SPLITS:
        for b in SPLITS:
            if a < b:
                assert not docs[a] & docs[b], (a, b)
                assert not sents[a] & sents[b], (a, b)
    sizes = {s: len(load_topic_sentences(s)[0]) for s in SPLITS}
    assert sizes == {"train": 2392, "validation": 353, "test": 872}


def test_every_topic_in_every_split_and_labels_index_topics():
    for s in SPLITS:
        texts, labels = load_topic_sentences(s)
        assert len(texts) == len(labels)
        assert set(labels.tolist()) == set(range(len(TOPICS)))
    with pytest.raises(ValueError, match="split"):
        load_topic_sentences("dev")


def test_sentence_pairs_positive_follows_negative_from_another_docstring():
    docs = topic_documents("validation")
    where = {s: (d, i) for d, ss in docs.items() for i, s in enumerate(ss)}
    pairs, labels = sentence_pairs("validation", seed=0)
    assert 0.3 < labels.mean() < 0.7
    for (a, b), y in zip(pairs, labels, strict=True):
        (da, ia), (db, ib) = where[a], where[b]
        if y == 1:
            assert da == db and ib == ia + 1
        else:
            assert da != db


def test_mean_pool_leaves_padding_out():
    hidden = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
    got = mean_pool(hidden, mask)
    for i, n in enumerate([5, 2, 1]):
        assert torch.allclose(got[i], hidden[i, :n].mean(0))
    with pytest.raises(ValueError, match="attention_mask"):
        mean_pool(hidden, mask[:, :3])


def test_accuracy_ci_is_the_wilson_interval():
    # Worked by hand: 80 right of 100 -> Wilson 95 % interval (0.7112, 0.8666).
    acc, low, high = accuracy_ci([1] * 80 + [0] * 20)
    assert acc == 0.8 and abs(low - 0.71122) < 1e-4 and abs(high - 0.86661) < 1e-4
    assert accuracy_ci([1, 1, 1])[2] <= 1.0 and accuracy_ci([0, 0])[1] >= 0.0
    with pytest.raises(ValueError):
        accuracy_ci([])


def test_confusion_matrix_matches_sklearn():
    from sklearn.metrics import confusion_matrix as sk

    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 4, 50), rng.integers(0, 4, 50)
    assert (confusion_matrix(y, p, 4) == sk(y, p, labels=range(4))).all()


def test_classifier_head_is_pooler_then_linear_and_its_loss():
    torch.manual_seed(0)
    head = BertClassifier([], 8, 3).eval()
    hidden = torch.randn(2, 4, 8)
    mask = torch.ones(2, 4, dtype=torch.long)
    scores = head(hidden, mask)
    ref = torch.tanh(hidden[:, 0] @ head.pooler.weight.T + head.pooler.bias)
    ref = ref @ head.classifier.weight.T + head.classifier.bias
    assert scores.shape == (2, 3) and torch.allclose(scores, ref, atol=1e-6)
    labels = torch.tensor([0, 2])
    loss = F.cross_entropy(scores, labels)
    by_hand = -(scores.log_softmax(-1)[torch.arange(2), labels]).mean()
    assert torch.allclose(loss, by_hand)


def test_span_head_gives_a_start_and_an_end_score_per_token():
    head = SpanHead(8)
    start, end = head(torch.randn(2, 6, 8))
    assert start.shape == end.shape == (2, 6)
    w, b = head.qa_outputs.weight, head.qa_outputs.bias
    h = torch.randn(1, 3, 8)
    s, e = head(h)
    assert torch.allclose(s, h @ w[0] + b[0]) and torch.allclose(e, h @ w[1] + b[1])
