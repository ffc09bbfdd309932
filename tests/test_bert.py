"""Tiny BERT (shapes, tied MLM head, masking of padding, loss), and BERT's parameter count
against transformers' BertModel."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import course_lib
from course_lib.configs import TinyBertConfig
from course_lib.data.pretraining import IGNORE_INDEX
from course_lib.models.bert import (
    TinyBert,
    bert_parameter_count,
    pretraining_accuracy,
    pretraining_loss,
    pretraining_losses,
)


def hf_count(**config) -> int:
    from transformers import BertConfig, BertModel

    with torch.device("meta"):  # no memory, no random initialisation: only the shapes
        model = BertModel(BertConfig(**config))
    return model.num_parameters()


@pytest.mark.parametrize(
    "config",
    [
        {},  # BERT-base
        {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
         "intermediate_size": 4096},  # BERT-large
        {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
         "num_attention_heads": 12, "intermediate_size": 1536},  # all-MiniLM-L6-v2
        {"vocab_size": 2000, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 256, "max_position_embeddings": 64, "type_vocab_size": 3},
        {"vocab_size": 7, "hidden_size": 6, "num_hidden_layers": 1, "num_attention_heads": 2,
         "intermediate_size": 5, "max_position_embeddings": 3, "type_vocab_size": 1},
    ],
)  # fmt: skip
def test_parameter_count_equals_transformers(config):
    assert bert_parameter_count(**config) == hf_count(**config)


def test_parameter_count_of_the_notes():
    base = bert_parameter_count()
    large = bert_parameter_count(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
    )
    assert base == 109_482_240  # the notes: "110 million" (within 0.5 %)
    assert large == 335_141_888  # the notes (and the paper) round this to "340 million"
    assert course_lib.bert_parameter_count is bert_parameter_count


def test_parameter_count_errors():
    with pytest.raises(ValueError, match="not divisible by num_attention_heads"):
        bert_parameter_count(hidden_size=100, num_attention_heads=12)
    with pytest.raises(TypeError, match="vocab_size must be an integer"):
        bert_parameter_count(vocab_size=3.5)


def small_batch(vocab=50, batch=3, n=10):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (batch, n), generator=g)
    ids[:, 0], ids[:, 4], ids[:, -1] = 2, 3, 3
    ids[0, 7:] = 0  # padding in the first sequence
    ids[0, 6] = 3
    segs = torch.zeros_like(ids)
    segs[:, 5:] = 1
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, 2] = ids[:, 2]
    labels[1, 6] = ids[1, 6]
    return {
        "input_ids": ids,
        "segment_ids": segs,
        "attention_mask": ids != 0,
        "mlm_labels": labels,
        "nsp_labels": torch.tensor([1, 0, 1]),
    }


def test_shapes_and_tied_head():
    model = TinyBert(
        TinyBertConfig(
            50, d_model=16, num_layers=2, num_heads=4, d_ff=32, context_length=12, dropout=0.0
        )
    )
    b = small_batch()
    hidden = model(b["input_ids"], b["segment_ids"], b["attention_mask"])
    assert hidden.shape == (3, 10, 16)
    assert model.mlm_logits(hidden).shape == (3, 10, 50)
    assert model.nsp_logits(hidden).shape == (3, 2)
    assert len(model.attention_weights) == 2 and model.attention_weights[0].shape == (3, 4, 10, 10)
    # Tied: the MLM output matrix *is* the token embedding (no separate (vocab, d) weight).
    names = [n for n, p in model.named_parameters() if p.shape == (50, 16)]
    assert names == ["token_embedding.weight"]
    h = torch.randn(5, 16)
    by_hand = model.mlm_norm(F.gelu(model.mlm_dense(h))) @ model.token_embedding.weight.T
    torch.testing.assert_close(model.mlm_logits(h), by_hand + model.mlm_bias)


def test_padding_is_not_attended_and_does_not_change_real_positions():
    model = TinyBert(
        TinyBertConfig(50, d_model=16, num_layers=2, num_heads=4, context_length=12, dropout=0.0)
    ).eval()
    b = small_batch()
    hidden = model(b["input_ids"], b["segment_ids"], b["attention_mask"])
    assert (model.attention_weights[0][0, :, :, 7:] == 0).all()
    # The first sequence alone, without its padding, gives the same vectors.
    alone = model(b["input_ids"][:1, :7], b["segment_ids"][:1, :7])
    torch.testing.assert_close(alone[0], hidden[0, :7], atol=1e-5, rtol=1e-5)


def test_segments_and_positions_matter():
    model = TinyBert(
        TinyBertConfig(50, d_model=16, num_layers=1, num_heads=2, context_length=12, dropout=0.0)
    ).eval()
    b = small_batch()
    ids, segs = b["input_ids"][1:], b["segment_ids"][1:]
    h = model(ids, segs)
    assert not torch.allclose(h, model(ids, torch.zeros_like(segs)), atol=1e-4)
    # Without position embeddings self-attention is permutation-equivariant; with them,
    # swapping two tokens changes more than the order of the outputs.
    perm = torch.tensor([0, 2, 1, 3, 4, 5, 6, 7, 8, 9])
    swapped = model(ids[:, perm], segs)
    assert not torch.allclose(swapped[:, perm], h, atol=1e-4)


def test_loss_is_mlm_plus_nsp_by_hand():
    model = TinyBert(
        TinyBertConfig(50, d_model=16, num_layers=1, num_heads=2, context_length=12, dropout=0.0)
    ).eval()
    b = small_batch()
    loss = pretraining_loss(model, b)
    mlm, nsp = (part.item() for part in pretraining_losses(model, b))
    hidden = model(b["input_ids"], b["segment_ids"], b["attention_mask"])
    logits = model.mlm_logits(hidden)
    picked = b["mlm_labels"] != IGNORE_INDEX
    mlm_ref = F.cross_entropy(logits.reshape(-1, 50), b["mlm_labels"].reshape(-1))  # -100 ignored
    nsp_ref = F.cross_entropy(model.nsp_logits(hidden), b["nsp_labels"])
    assert picked.sum() == 4
    assert mlm == pytest.approx(mlm_ref.item(), rel=1e-5)
    assert nsp == pytest.approx(nsp_ref.item(), rel=1e-5)
    assert loss.item() == pytest.approx(mlm + nsp, rel=1e-5)
    acc = pretraining_accuracy(model, [b])
    assert set(acc) == {"mlm_accuracy", "nsp_accuracy"} and 0 <= acc["mlm_accuracy"] <= 1


def test_a_few_steps_learn_a_batch():
    model = TinyBert(
        TinyBertConfig(50, d_model=32, num_layers=1, num_heads=4, context_length=12, dropout=0.0)
    )
    b = small_batch()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = pretraining_loss(model, b).item()
    for _ in range(60):
        opt.zero_grad()
        pretraining_loss(model, b).backward()
        opt.step()
    assert pretraining_loss(model, b).item() < 0.2 * first
    assert pretraining_accuracy(model, [b]) == {"mlm_accuracy": 1.0, "nsp_accuracy": 1.0}


def test_errors():
    model = TinyBert(TinyBertConfig(50, d_model=16, num_layers=1, num_heads=2, context_length=8))
    with pytest.raises(ValueError, match="context_length=8 position embeddings"):
        model(torch.ones(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input_ids must have shape \(batch, n\)"):
        model(torch.ones(9, dtype=torch.long))
    with pytest.raises(ValueError, match="segment_ids must have the shape of input_ids"):
        model(torch.ones(1, 5, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="vocab_size must be an integer"):
        TinyBertConfig(np.float64(3.0))
    with pytest.raises(TypeError, match="config must be a TinyBertConfig"):
        TinyBert(50)


def test_fill_mask_reads_the_mlm_head_at_the_mask():
    from course_lib.data.pretraining import SPECIAL_TOKENS, pair_input
    from course_lib.models.bert import fill_mask
    from course_lib.tokenization import train_bpe

    texts = ["The return value is a new list.", "Raise an error if the file is missing."] * 3
    tok = train_bpe(texts, 80, special_tokens=SPECIAL_TOKENS, unk_token="[UNK]", lowercase=True)
    torch.manual_seed(0)
    model = TinyBert(
        TinyBertConfig(len(tok), d_model=16, num_layers=1, num_heads=2, d_ff=32, context_length=20)
    )
    model.eval()

    def by_hand(text, word, k):  # pair_input with an empty B, the MLM head at the mask
        pieces = tok.tokenize(text)
        ids = [tok.vocab[p] for p in pieces]
        ids[pieces.index(word)] = tok.vocab["[MASK]"]
        input_ids, segments = pair_input(ids, [], tok.vocab["[CLS]"], tok.vocab["[SEP]"])
        with torch.no_grad():
            hidden = model(torch.tensor([input_ids]), torch.tensor([segments]))
            where = input_ids.index(tok.vocab["[MASK]"])
            return torch.softmax(model.mlm_logits(hidden[0, where]), -1).topk(k)

    guesses = fill_mask(model, tok, "The return value is a new [MASK].", top_k=4)
    assert len(guesses) == 4 and [p for _, p in guesses] == sorted(p for _, p in guesses)[::-1]
    top = by_hand("The return value is a new list.", "▁list", 4)
    assert [w for w, _ in guesses] == [tok.id_to_token[int(j)] for j in top.indices]
    np.testing.assert_allclose([p for _, p in guesses], top.values.numpy(), rtol=1e-6)
    # a word after the mask keeps its space ("▁is", not "is"); the first word has none
    top = by_hand("Raise an error if the file is missing.", "▁file", 3)
    got = fill_mask(model, tok, "Raise an error if the [MASK] is missing.", top_k=3)
    assert [w for w, _ in got] == [tok.id_to_token[int(j)] for j in top.indices]
    first, second = tok.tokenize("Raise an error if the file is missing.")[:2]
    assert second == "▁an"  # so the mask takes the place of the whole first word
    top = by_hand("Raise an error if the file is missing.", first, 3)
    got = fill_mask(model, tok, "[MASK] an error if the file is missing.", top_k=3)
    assert [w for w, _ in got] == [tok.id_to_token[int(j)] for j in top.indices]
    with pytest.raises(ValueError, match=r"exactly one \[MASK\], got 0"):
        fill_mask(model, tok, "The return value is a new list.")
    with pytest.raises(ValueError, match=r"exactly one \[MASK\], got 2"):
        fill_mask(model, tok, "The [MASK] value is a new [MASK].")
    with pytest.raises(TypeError, match="text must be a str"):
        fill_mask(model, tok, 3)
    with pytest.raises(ValueError, match="must fit the model's context_length=20"):
        fill_mask(model, tok, "a new [MASK]" + " list" * 20)
    # and the model is given back in the mode it had
    model.train()
    fill_mask(model, tok, "The return value is a new [MASK].")
    assert model.training
