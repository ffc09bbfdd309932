"""Lecture 12's data and fine-tuning helpers, against independent references."""

import copy

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
    segment_mean_pool,
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
    assert sizes == {"train": 3322, "validation": 720, "test": 2550}


def test_labelled_samples_are_balanced_nested_and_inside_their_split():
    whole = set(load_topic_sentences("train")[0])
    small, y_small = load_topic_sentences("train", per_topic=16)
    big, y_big = load_topic_sentences("train", per_topic=64)
    assert np.bincount(y_small).tolist() == [16] * len(TOPICS)
    assert np.bincount(y_big).tolist() == [64] * len(TOPICS)
    assert set(small) <= set(big) <= whole
    assert load_topic_sentences("train", per_topic=64)[0] == big  # the same sample every time
    label_of = dict(zip(*load_topic_sentences("train"), strict=True))
    assert all(label_of[t] == y for t, y in zip(big, y_big, strict=True))
    with pytest.raises(ValueError, match="per_topic must be at most 47"):
        load_topic_sentences("validation", per_topic=48)


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


def test_segment_mean_pool_averages_each_segment_without_cls_or_padding():
    hidden = torch.arange(2 * 7 * 2, dtype=torch.float32).reshape(2, 7, 2)
    # [CLS] a a [SEP] b b [SEP] / [CLS] a [SEP] b [SEP] pad pad
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0]])
    a, b = segment_mean_pool(hidden, mask, types)
    assert torch.equal(a[0], hidden[0, 1:4].mean(0)) and torch.equal(b[0], hidden[0, 4:7].mean(0))
    assert torch.equal(a[1], hidden[1, 1:3].mean(0)) and torch.equal(b[1], hidden[1, 3:5].mean(0))


def test_segment_mean_pool_on_a_real_tokenizer_pair():
    from course_lib.pretrained import load_minilm

    tokenizer, _ = load_minilm()
    enc = tokenizer(["Return a list.", "Open it."], ["It is new.", "Then close the file."],
                    padding=True, return_tensors="pt")  # fmt: skip
    hidden = torch.randn(*enc["input_ids"].shape, 3)
    a, b = segment_mean_pool(hidden, enc["attention_mask"], enc["token_type_ids"])
    for i in range(2):
        tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][i])
        first_sep = tokens.index("[SEP]")
        last = int(enc["attention_mask"][i].sum())  # one past the final [SEP]
        assert torch.allclose(a[i], hidden[i, 1 : first_sep + 1].mean(0))
        assert torch.allclose(b[i], hidden[i, first_sep + 1 : last].mean(0))


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


def _minilm_outputs(texts):
    """The course encoder with MiniLM's weights on ``texts`` (padded): (outputs, attention_mask)."""
    from course_lib.pretrained import load_minilm_encoder

    tokenizer, encoder = load_minilm_encoder()
    enc = tokenizer(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        out = encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    return out, enc["attention_mask"]


@pytest.fixture(scope="module")
def minilm_test_pass():
    """MiniLM (course encoder) on every 17th test sentence: (indices, layer-5 states, mask)."""
    texts, _ = load_topic_sentences("test")
    idx = np.arange(0, len(texts), 17)
    out, mask = _minilm_outputs([texts[i] for i in idx])
    return idx, out.hidden_states[-2], mask


@pytest.mark.parametrize("labels", ["budget", "all"])
def test_shipped_classifiers_give_the_scripts_test_predictions(labels, minilm_test_pass):
    from course_lib.pretrained import load_topic_classifier

    classifier, meta = load_topic_classifier(labels)
    assert meta["top_layers"] == 1  # so the states below the top layer are hidden_states[-2]
    idx, middle, mask = minilm_test_pass
    with torch.no_grad():
        live = classifier(middle, mask).argmax(-1).numpy()
    stored = meta["test_predictions"][labels].numpy()
    assert (live == stored[idx]).mean() >= 0.98  # float16 weights on disk, float32 in the script
    # the table's accuracy is the stored predictions' accuracy on the whole test split
    _, y = load_topic_sentences("test")
    row = [
        v for k, v in meta["table"].items() if "top 1" in k and ("all" in k) == (labels == "all")
    ]
    assert len(row) == 1 and np.isclose(row[0]["test"][0], (stored == y).mean())


def test_shipped_training_features_are_the_encoders_mean_vectors():
    from course_lib.pretrained import load_topic_classifier

    _, meta = load_topic_classifier()
    texts, _ = load_topic_sentences("train")
    feats = meta["train_mean_features"].float()
    assert feats.shape == (len(texts), 384)
    rows = [0, 1000, 3321]
    out, mask = _minilm_outputs([texts[i] for i in rows])
    live = mean_pool(out.last_hidden_state, mask)
    assert torch.allclose(live, feats[rows], atol=5e-3)


def test_pad_states_pads_with_zeros_and_marks_the_real_tokens():
    from course_lib.models.classifier import pad_states

    a, b = torch.ones(3, 2), 2 * torch.ones(1, 2)
    hidden, mask = pad_states([a, b])
    assert hidden.shape == (2, 3, 2) and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert torch.equal(hidden[0], a) and torch.equal(hidden[1, 0], b[0])
    assert torch.equal(hidden[1, 1:], torch.zeros(2, 2))
    with pytest.raises(ValueError, match="states"):
        pad_states([])


def test_classification_loss_is_the_mean_negative_log_probability_of_the_label():
    from course_lib.models.classifier import classification_loss

    torch.manual_seed(0)
    head = BertClassifier([], 8, 3).eval()
    hidden, mask, labels = (
        torch.randn(4, 5, 8),
        torch.ones(4, 5, dtype=torch.long),
        torch.tensor([0, 2, 1, 2]),
    )
    scores = head(hidden, mask)
    by_hand = -np.mean([np.log(np.exp(s) / np.exp(s).sum())[y] for s, y in
                        zip(scores.detach().numpy().astype(float), labels.tolist(), strict=True)])  # fmt: skip
    got = classification_loss(head, (hidden, mask, labels))
    assert abs(got.item() - by_hand) < 1e-5


def test_frozen_pass_equals_one_sentence_at_a_time_in_the_order_given():
    """frozen_pass batches by length; each result must be the sentence's own, unbatched one."""
    from course_lib.models.classifier import frozen_pass
    from course_lib.pretrained import load_minilm_encoder

    tokenizer, encoder = load_minilm_encoder()
    texts = ["Return the number of items in the queue, which may be long.", "Open it.",
             "Close the socket.", "A much longer sentence about decimal rounding and context."]  # fmt: skip
    got = frozen_pass(tokenizer, encoder, texts, max_length=64, top=1)
    for i, text in enumerate(texts):
        enc = tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
        assert np.allclose(got["cls"][i], out.last_hidden_state[0, 0].numpy(), atol=1e-5)
        assert np.allclose(got["mean"][i], out.last_hidden_state[0].mean(0).numpy(), atol=1e-5)
        assert torch.allclose(got["below_top"][i], out.hidden_states[-2][0], atol=1e-5)
    with pytest.raises(ValueError, match="top"):
        frozen_pass(tokenizer, encoder, texts, top=7)


def test_full_fine_tuning_row_is_its_shipped_test_predictions():
    """Stage 3 (all of MiniLM fine-tuned) ships its test predictions for lecture 12's paired
    test: the table's accuracy and interval are those of the shipped predictions."""
    from course_lib.pretrained import load_topic_classifier
    from tools.training.fine_tune_minilm import FULL

    _, meta = load_topic_classifier()
    _, y = load_topic_sentences("test")
    stored = meta["test_predictions"]["full"].numpy()
    assert stored.shape == y.shape and stored.dtype == np.int8
    assert np.allclose(meta["table"][FULL]["test"], accuracy_ci(stored == y))
    assert not np.array_equal(stored, meta["test_predictions"]["budget"].numpy())


def test_random_init_control_row_is_its_shipped_predictions_and_its_first_steps_rerun():
    """The table's random-init row: its accuracy and interval are those of the shipped test
    predictions, and the script's stage, rerun for its first steps, gives the same losses."""
    from course_lib.pretrained import load_minilm_encoder, load_topic_classifier
    from tools.training.fine_tune_minilm import (
        BUDGET,
        RANDOM_INIT,
        VALIDATION,
        fine_tune_full,
        random_encoder,
    )

    _, meta = load_topic_classifier()
    row = meta["table"][RANDOM_INIT]
    _, y = load_topic_sentences("test")
    stored = meta["test_predictions"]["random_init"].numpy()
    assert stored.shape == y.shape
    assert np.allclose(row["test"], accuracy_ci(stored == y))
    assert row["lr"] in meta["training"]["random_lrs"]
    assert max(r["validation"] for r in row["sweep"]) == row["validation"]  # chosen on validation
    tokenizer, encoder = load_minilm_encoder()
    budget = load_topic_sentences("train", per_topic=BUDGET)
    val = load_topic_sentences("validation", per_topic=VALIDATION)
    n = len(row["first_losses"])
    got = fine_tune_full(tokenizer, lambda: random_encoder(encoder.config), None, budget, val,
                         None, meta["training"]["random_lrs"], None,
                         meta["training"]["random_epochs"], meta["training"]["batch_size"],
                         first_steps=n, stop=True)  # fmt: skip
    assert n == 3 and np.allclose(got["first_losses"], row["first_losses"], rtol=1e-4)


def test_top_layer_classifier_continues_minilm_from_the_layer_below_the_top():
    """Run on layer 5's output, its copied top layer and pooler give MiniLM's own last layer
    and pooled vector; only the last linear map is new."""
    from course_lib.models.classifier import top_layer_classifier
    from course_lib.pretrained import load_minilm_encoder

    _, encoder = load_minilm_encoder()
    out, mask = _minilm_outputs(["Open the file.", "Return a rotated copy of the number."])
    torch.manual_seed(0)
    model = top_layer_classifier(encoder, 1, 6).eval()
    hidden = out.hidden_states[-2]
    keys = mask.bool()[:, None, :]
    with torch.no_grad():
        last = model.layers[0](hidden, keys)
        scores = model(hidden, mask)
    real = mask.bool()
    assert torch.allclose(last[real], out.last_hidden_state[real], atol=1e-5)
    assert torch.allclose(torch.tanh(model.pooler(last[:, 0])), out.pooler_output, atol=1e-5)
    ref = out.pooler_output @ model.classifier.weight.T + model.classifier.bias
    assert torch.allclose(scores, ref, atol=1e-5)
    assert model.layers[0] is not encoder.encoder.layers[-1]  # a copy: training leaves MiniLM be
    with pytest.raises(ValueError, match="top"):
        top_layer_classifier(encoder, 7, 6)


def test_predict_classes_equals_one_sentence_at_a_time():
    from course_lib.models.classifier import predict_classes

    torch.manual_seed(0)
    model = BertClassifier([], 8, 3)
    states = [torch.randn(n, 8) for n in (3, 1, 5, 2, 4)]
    got = predict_classes(model, states, batch_size=2)
    with torch.no_grad():
        one_by_one = [int(model(s[None], torch.ones(1, len(s))).argmax()) for s in states]
    assert got.tolist() == one_by_one and not model.training


def test_fine_tune_one_step_is_adamw_on_the_cross_entropy_with_two_rates():
    """One epoch of one batch (no warm-up, the full rate at step 0) by hand with torch's AdamW."""
    from course_lib.models.classifier import fine_tune

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4)  # stands in for an encoder layer: (hidden, keys) -> hidden

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = layer

        def forward(self, hidden, keys):
            return hidden + self.lin(hidden)

    model = BertClassifier([Layer()], 4, 3, dropout=0.0)
    ref = copy.deepcopy(model)
    states = [torch.randn(n, 4) for n in (2, 3, 1, 2)]
    labels = np.array([0, 2, 1, 2])
    log = fine_tune(model, states, labels, states, labels, lr=0.1, head_lr=0.5, epochs=1,
                    batch_size=4, seed=3)  # fmt: skip
    idx = np.random.default_rng(3).permutation(4)
    n = max(len(states[i]) for i in idx)
    hidden = torch.zeros(4, n, 4)
    mask = torch.zeros(4, n, dtype=torch.long)
    for j, i in enumerate(idx):
        hidden[j, : len(states[i])], mask[j, : len(states[i])] = states[i], 1
    opt = torch.optim.AdamW(
        [{"params": ref.layers.parameters(), "lr": 0.1},
         {"params": [*ref.pooler.parameters(), *ref.classifier.parameters()], "lr": 0.5}],
        weight_decay=0.01,
    )  # fmt: skip
    scores = ref(hidden, mask)
    loss = -scores.log_softmax(-1)[torch.arange(4), torch.from_numpy(labels[idx])].mean()
    loss.backward()
    opt.step()
    assert np.isclose(log["losses"][0], loss.item(), rtol=1e-6)
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6), name
    assert len(log["validation"]) == 1


def test_fine_tune_keep_best_ends_with_the_best_validation_epoch():
    from course_lib.models.classifier import fine_tune, predict_classes

    torch.manual_seed(0)
    model = BertClassifier([], 4, 2, dropout=0.0)
    states = [torch.randn(2, 4) for _ in range(32)]
    labels = np.array([int(s[0, 0] > 0) for s in states])
    log = fine_tune(model, states, labels, states[:8], labels[:8], lr=1e-2, head_lr=1e-2,
                    epochs=5, batch_size=8, keep_best=True)  # fmt: skip
    best = max(log["validation"])
    assert (predict_classes(model, states[:8]) == labels[:8]).mean() == best
    with pytest.raises(ValueError, match="batch_size"):
        fine_tune(model, states, labels, states, labels, lr=1e-2, head_lr=1e-2, epochs=1,
                  batch_size=64)  # fmt: skip


def _scratch_by_hand(tokenizer, train_x, train_y, val_x, val_y, test_x, rng, epochs):
    """The loop lecture 12 wrote out in its cell before it moved into
    ``train_scratch_classifier`` (the independent reference): test predictions, best epoch."""
    from course_lib.configs import BertEncoderConfig
    from course_lib.models.bert_encoder import BertEncoder

    wordpieces = {name: [tokenizer(t, truncation=True, max_length=64) for t in texts]
                  for name, texts in [("train", train_x), ("validation", val_x), ("test", test_x)]}  # fmt: skip
    seen = sorted(
        {i for row in wordpieces["train"] for i in row["input_ids"]} | {0, tokenizer.unk_token_id}
    )
    small_id = torch.full((tokenizer.vocab_size,), seen.index(tokenizer.unk_token_id))
    small_id[seen] = torch.arange(len(seen))
    torch.manual_seed(0)
    cfg = BertEncoderConfig(vocab_size=len(seen), hidden_size=16, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=64, hidden_dropout_prob=0.1)  # fmt: skip
    scratch = torch.nn.ModuleDict({"encoder": BertEncoder(cfg, add_pooler=False),
                                   "head": torch.nn.Linear(16, 3)})  # fmt: skip
    opt = torch.optim.AdamW(scratch.parameters(), lr=2e-3, weight_decay=0.01)

    def scores(rows):
        b = tokenizer.pad(rows, return_tensors="pt")
        out = scratch["encoder"](small_id[b["input_ids"]], attention_mask=b["attention_mask"])
        return scratch["head"](mean_pool(out.last_hidden_state, b["attention_mask"]))

    @torch.no_grad()
    def predict(rows):
        scratch.eval()
        return np.array([scores([r]).argmax(-1).item() for r in rows])  # one at a time

    by_length = np.argsort([len(r["input_ids"]) for r in wordpieces["train"]], kind="stable")
    batches = [by_length[k : k + 4] for k in range(0, len(by_length), 4)]
    best_val, best_epoch = -1.0, None
    for epoch in range(epochs):
        scratch.train()
        for k in rng.permutation(len(batches)):
            idx = batches[k]
            loss = F.cross_entropy(scores([wordpieces["train"][i] for i in idx]),
                                   torch.from_numpy(train_y[idx]))  # fmt: skip
            opt.zero_grad()
            loss.backward()
            opt.step()
        val_acc = (predict(wordpieces["validation"]) == val_y).mean()
        if val_acc > best_val:
            best_val, best_epoch, best_state = (
                val_acc,
                epoch + 1,
                copy.deepcopy(scratch.state_dict()),
            )
    scratch.load_state_dict(best_state)
    return predict(wordpieces["test"]), best_epoch, best_val, len(seen)


def test_train_scratch_classifier_is_the_lectures_former_loop():
    from course_lib.models.classifier import train_scratch_classifier
    from course_lib.pretrained import load_minilm

    tokenizer, _ = load_minilm()
    x, y = load_topic_sentences("train", per_topic=8)
    keep = y < 3  # three topics, 24 sentences
    train_x, train_y = [t for t, k in zip(x, keep, strict=True) if k], y[keep]
    vx, vy = load_topic_sentences("validation", per_topic=4)
    val_x, val_y = [t for t, k in zip(vx, vy < 3, strict=True) if k], vy[vy < 3]
    test_x = val_x[::-1]
    want = _scratch_by_hand(tokenizer, train_x, train_y, val_x, val_y, test_x,
                            np.random.default_rng(0), epochs=3)  # fmt: skip
    torch.manual_seed(0)
    model = train_scratch_classifier(tokenizer, train_x, train_y, val_x, val_y,
                                     rng=np.random.default_rng(0), num_classes=3, epochs=3,
                                     batch_size=4, hidden_size=16, layers=1, heads=2)  # fmt: skip
    got = (model.predict(test_x, batch_size=5), model.best_epoch, model.best_validation,
           len(model.vocabulary))  # fmt: skip
    assert np.array_equal(got[0], want[0]) and got[1:] == (want[1], pytest.approx(want[2]), want[3])
    assert model.best_epoch in (1, 2, 3) and not model.training
