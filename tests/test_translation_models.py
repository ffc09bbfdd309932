"""Translation models: additive attention, shapes, masks (causal and padding), greedy decoding,
and the training loop."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import additive_attention, additive_attention_scores
from course_lib.models import (
    AdditiveAttention,
    AttentionSeq2SeqGRU,
    Seq2SeqGRU,
    TransformerTranslator,
    beam_search,
    greedy_decode,
    translate,
    translation_loss,
)
from course_lib.training import learning_rate_at, train

SRC_V, TGT_V = 13, 11


def make_models():
    torch.manual_seed(0)
    return {
        "rnn": Seq2SeqGRU(SRC_V, TGT_V, emb=8, hidden=12),
        "attention": AttentionSeq2SeqGRU(SRC_V, TGT_V, emb=8, hidden=12, att=10),
        "transformer": TransformerTranslator(SRC_V, TGT_V, d_model=16, num_heads=2, num_layers=2, d_ff=24),
    }  # fmt: skip


def toy_batch():
    # two source sentences of lengths 5 and 3 (padded with id 0 on the right)
    src = torch.tensor([[4, 5, 6, 7, 8], [9, 10, 11, 0, 0]])
    src_mask = src != 0
    tgt_in = torch.tensor([[1, 4, 5, 6], [1, 7, 8, 9]])
    return src, src_mask, tgt_in


# ---- additive attention ----


def test_additive_attention_scores_by_hand():
    # d = d_att = 1, W_s = W_h = v = 1, s = 0: scores are tanh(h_j)
    keys = np.array([[0.0], [1.0], [-2.0]])
    scores = additive_attention_scores(np.array([0.0]), keys, [[1.0]], [[1.0]], [1.0])
    np.testing.assert_allclose(scores, [0.0, math.tanh(1.0), math.tanh(-2.0)])
    context, weights = additive_attention(np.array([0.0]), keys, [[1.0]], [[1.0]], [1.0])
    e = [math.exp(0.0), math.exp(math.tanh(1.0)), math.exp(math.tanh(-2.0))]
    np.testing.assert_allclose(weights, [x / sum(e) for x in e])
    np.testing.assert_allclose(context, [(e[1] * 1.0 - 2.0 * e[2]) / sum(e)])
    # masking the last key renormalises over the first two
    _, w = additive_attention(
        np.array([0.0]), keys, [[1.0]], [[1.0]], [1.0], mask=[True, True, False]
    )
    np.testing.assert_allclose(w, [e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1]), 0.0])


def test_additive_attention_module_matches_numpy():
    torch.manual_seed(1)
    att = AdditiveAttention(5, 6, 4).double()
    s, h = torch.randn(3, 5, dtype=torch.float64), torch.randn(3, 7, 6, dtype=torch.float64)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 4:] = False
    ctx, w = att(s, h, mask)
    ref_ctx, ref_w = additive_attention(
        s.numpy(), h.numpy(), att.w_query.weight.detach().numpy().T,
        att.w_key.weight.detach().numpy().T, att.v.weight.detach().numpy()[0], mask=mask.numpy(),
    )  # fmt: skip
    np.testing.assert_allclose(w.detach().numpy(), ref_w, atol=1e-12)
    np.testing.assert_allclose(ctx.detach().numpy(), ref_ctx, atol=1e-12)


def test_additive_attention_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"w_query must be \(d_q=2, d_att\)"):
        additive_attention_scores(
            np.zeros(2), np.zeros((3, 4)), np.zeros((3, 5)), np.zeros((4, 5)), np.zeros(5)
        )
    with pytest.raises(ValueError, match="must share d_att"):
        additive_attention_scores(
            np.zeros(2), np.zeros((3, 4)), np.zeros((2, 5)), np.zeros((4, 5)), np.zeros(6)
        )
    with pytest.raises(TypeError, match="mask must be boolean"):
        additive_attention(
            np.zeros(2),
            np.zeros((3, 4)),
            np.zeros((2, 5)),
            np.zeros((4, 5)),
            np.zeros(5),
            mask=[1, 1, 0],
        )
    # fmt: skip


# ---- shapes and masks of the three models ----


@pytest.mark.parametrize("name", ["rnn", "attention", "transformer"])
def test_logits_shape(name):
    model = make_models()[name]
    src, src_mask, tgt_in = toy_batch()
    assert model(src, src_mask, tgt_in).shape == (2, 4, TGT_V)


@pytest.mark.parametrize("name", ["rnn", "attention", "transformer"])
def test_future_target_words_do_not_change_earlier_outputs(name):
    # the causal property greedy decoding relies on: position t sees only tgt_in[:, :t + 1]
    model = make_models()[name].eval()
    src, src_mask, tgt_in = toy_batch()
    full = model(src, src_mask, tgt_in)
    changed = tgt_in.clone()
    changed[:, 2:] = torch.tensor([[9, 10], [3, 2]])
    other = model(src, src_mask, changed)
    torch.testing.assert_close(other[:, :2], full[:, :2])
    assert not torch.allclose(other[:, 2:], full[:, 2:])
    prefix = model(src, src_mask, tgt_in[:, :2])
    torch.testing.assert_close(prefix, full[:, :2], rtol=1e-5, atol=1e-6)


def test_transformer_decoder_without_causal_mask_would_see_the_future():
    # the same check fails once the decoder may attend to later positions: the mask matters
    model = make_models()["transformer"].eval()
    src, src_mask, tgt_in = toy_batch()
    memory = model.encode(src, src_mask)

    def logits(t):
        x = model._embed(model.tgt_embed, t)
        return model.out(model.decoder(x, memory, None, src_mask[:, None, :], causal=False))

    changed = tgt_in.clone()
    changed[:, 3] = 2
    assert not torch.allclose(logits(changed)[:, :3], logits(tgt_in)[:, :3])


@pytest.mark.parametrize("name", ["rnn", "attention", "transformer"])
def test_source_padding_is_ignored(name):
    model = make_models()[name].eval()
    src, src_mask, tgt_in = toy_batch()
    wider = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    out = model(src, src_mask, tgt_in)
    torch.testing.assert_close(model(wider, wider != 0, tgt_in), out, rtol=1e-5, atol=1e-6)
    # the short sentence alone gives the same result as inside the padded batch
    alone = model(src[1:, :3], src_mask[1:, :3], tgt_in[1:])
    torch.testing.assert_close(alone, out[1:], rtol=1e-5, atol=1e-6)


def test_attention_weights_are_distributions_over_real_source_words():
    models = make_models()
    src, src_mask, tgt_in = toy_batch()
    models["attention"](src, src_mask, tgt_in)
    alignment = models["attention"].attention_weights
    assert alignment.shape == (2, 4, 5)
    torch.testing.assert_close(alignment.sum(-1), torch.ones(2, 4))
    assert (alignment[1, :, 3:] == 0).all()
    models["transformer"](src, src_mask, tgt_in)
    for w in models["transformer"].decoder.cross_attention_weights:
        assert w.shape == (2, 2, 4, 5)
        assert (w[1, :, :, 3:] == 0).all()


def test_models_reject_bad_inputs():
    model = make_models()["transformer"]
    src, src_mask, tgt_in = toy_batch()
    with pytest.raises(
        TypeError, match=r"src must be a torch.long tensor of token ids \(batch, length\)"
    ):
        model(src.float(), src_mask, tgt_in)
    with pytest.raises(TypeError, match="src_mask must be a boolean"):
        model(src, src_mask.long(), tgt_in)
    with pytest.raises(ValueError, match=r"src_mask must have the shape of src \(2, 5\)"):
        model(src, src_mask[:, :3], tgt_in)
    with pytest.raises(ValueError, match="longer than context_length=128"):
        model(src, src_mask, torch.ones(2, 130, dtype=torch.long))


# ---- greedy decoding ----


class Scripted(nn.Module):
    """A fake model that 'translates' row b into script[b] (then keeps saying <eos>=2)."""

    def __init__(self, script):
        super().__init__()
        self.script = script

    def encode(self, src, src_mask):
        return None

    def decode(self, memory, src_mask, tgt_in):
        b, t = tgt_in.shape
        logits = torch.zeros(b, t, 6)
        for i in range(b):
            for j in range(t):
                word = self.script[i][j] if j < len(self.script[i]) else 2
                logits[i, j, word] = 1.0
        return logits


def test_greedy_decode_stops_at_eos_and_pads_after_it():
    model = Scripted([[4, 5, 2], [3, 2], [4, 4, 4, 4, 4, 4]])
    src = torch.ones(3, 2, dtype=torch.long)
    out = greedy_decode(model, src, src == 1, max_new_tokens=10)
    assert out.tolist() == [[4, 5, 2, 0, 0, 0, 0], [3, 2, 0, 0, 0, 0, 0], [4, 4, 4, 4, 4, 4, 2]]
    short = greedy_decode(model, src, src == 1, max_new_tokens=3)
    assert short.tolist() == [[4, 5, 2], [3, 2, 0], [4, 4, 4]]  # row 3 hit max_new_tokens
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1"):
        greedy_decode(model, src, src == 1, max_new_tokens=0)


@pytest.mark.parametrize("name", ["rnn", "attention", "transformer"])
def test_greedy_output_is_the_argmax_given_its_own_prefix(name):
    # teacher-force the model on its own greedy output: every word must be the argmax there
    model = make_models()[name]
    src, src_mask, _ = toy_batch()
    out = greedy_decode(model, src, src_mask, max_new_tokens=6)
    assert model.training  # the mode is restored
    model.eval()
    tgt_in = torch.cat([torch.ones(2, 1, dtype=torch.long), out[:, :-1]], dim=1)
    with torch.no_grad():
        best = model(src, src_mask, tgt_in).argmax(-1)
    for b in range(2):
        n = out.shape[1] if 2 not in out[b] else out[b].tolist().index(2) + 1
        assert torch.equal(best[b, :n], out[b, :n])


def test_translate_keeps_the_input_order():
    from course_lib.data import Vocab

    src_vocab = Vocab("the cat dog sat".split())
    tgt_vocab = Vocab("кот собака".split())
    model = Scripted([[4, 2]] * 3)
    out = translate(model, ["the cat sat", "the dog", "a cat"], src_vocab, tgt_vocab, batch_size=2)
    assert out == ["кот", "кот", "кот"]
    with pytest.raises(TypeError, match="list of strings"):
        translate(model, "the cat", src_vocab, tgt_vocab)


# ---- training loop ----


def copy_task(step):
    g = torch.Generator().manual_seed(step)
    src = torch.randint(4, SRC_V, (16, 5), generator=g)
    tgt = src.clamp(max=TGT_V - 1)

    class B:
        pass

    b = B()
    b.src, b.src_mask = src, torch.ones_like(src, dtype=torch.bool)
    b.tgt_in = torch.cat([torch.ones(16, 1, dtype=torch.long), tgt], dim=1)
    b.tgt_out = torch.cat([tgt, torch.full((16, 1), 2)], dim=1)
    b.tgt_mask = torch.ones_like(b.tgt_out, dtype=torch.bool)
    return b


def test_train_learns_and_is_reproducible():
    runs = []
    for steps in (15, 15, 80):
        torch.manual_seed(0)
        model = TransformerTranslator(SRC_V, TGT_V, d_model=16, num_heads=2, num_layers=1, d_ff=32)
        log = train(
            model, copy_task, translation_loss, steps=steps, lr=1e-2, warmup=5, progress=False
        )
        runs.append((log.losses, model.out.weight.detach().clone()))
        assert not model.training
    assert runs[0][0] == runs[1][0] and torch.equal(runs[0][1], runs[1][1])
    losses = runs[2][0]
    assert len(losses) == 80 and np.mean(losses[-10:]) < 0.65 * np.mean(losses[:10])


def test_train_accepts_an_iterator_and_checks_arguments():
    model = Seq2SeqGRU(SRC_V, TGT_V, emb=4, hidden=4)
    log = train(model, (copy_task(i) for i in range(3)), translation_loss, steps=3, progress=False)
    assert len(log.losses) == 3 and log.seconds > 0 and len(log.smoothed(2)) == 3
    with pytest.raises(ValueError, match="steps must be >= 1"):
        train(model, copy_task, translation_loss, steps=0)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        train("model", copy_task, translation_loss, steps=1)
    with pytest.raises(ValueError, match="schedule must be"):
        train(model, copy_task, translation_loss, steps=1, schedule="exp")


def test_learning_rate_schedule():
    assert learning_rate_at(0, 100, 1.0, warmup=10) == pytest.approx(0.1)
    assert learning_rate_at(9, 100, 1.0, warmup=10) == pytest.approx(1.0)
    assert learning_rate_at(55, 100, 1.0, warmup=10) == pytest.approx(0.5)
    assert learning_rate_at(55, 100, 1.0, warmup=10, schedule="cosine") == pytest.approx(0.5)
    assert learning_rate_at(70, 100, 1.0, schedule="constant") == 1.0


# ---- beam search ----


class Table(nn.Module):
    """A fake model with next-word probabilities given by a table of prefixes (ids 3 = a, 4 = b)."""

    P = {
        (): {3: 0.6, 4: 0.4},
        (3,): {2: 0.3, 3: 0.4, 4: 0.3},
        (4,): {2: 0.9, 3: 0.05, 4: 0.05},
    }

    def encode(self, src, src_mask):
        return src

    def decode(self, memory, src_mask, tgt_in):
        out = torch.full((tgt_in.shape[0], tgt_in.shape[1], 5), -1e9)
        for b, row in enumerate(tgt_in.tolist()):
            for t in range(len(row)):
                probs = self.P.get(tuple(row[1 : t + 1]), {2: 1.0})
                for word, p in probs.items():
                    out[b, t, word] = math.log(p)
        return out


def test_beam_search_finds_a_more_probable_sentence_than_greedy():
    model = Table()
    src = torch.ones(1, 3, dtype=torch.long)
    # greedy: a (0.6), then a (0.4), then <eos>: probability 0.24
    assert greedy_decode(model, src, src == 1, max_new_tokens=5).tolist() == [[3, 3, 2]]
    # beam search keeps "b" (0.4) alive and finds "b <eos>": probability 0.36
    assert beam_search(model, src, src == 1, beam_size=2, max_new_tokens=5) == [4, 2]
    assert beam_search(model, src, src == 1, beam_size=1, max_new_tokens=5) == [3, 3, 2]
    with pytest.raises(ValueError, match=r"src must be \(1, S\)"):
        beam_search(model, torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool))


@pytest.mark.parametrize("name", ["rnn", "attention", "transformer"])
def test_beam_of_one_is_greedy(name):
    model = make_models()[name]
    src, src_mask, _ = toy_batch()
    for b in range(2):
        n = int(src_mask[b].sum())
        greedy = greedy_decode(model, src[b : b + 1, :n], src_mask[b : b + 1, :n], max_new_tokens=6)
        assert (
            beam_search(
                model, src[b : b + 1, :n], src_mask[b : b + 1, :n], beam_size=1, max_new_tokens=6
            )
            == greedy[0].tolist()
        )
        assert (
            len(
                beam_search(
                    model,
                    src[b : b + 1, :n],
                    src_mask[b : b + 1, :n],
                    beam_size=3,
                    max_new_tokens=6,
                )
            )
            <= 6
        )


class ShortOrLong(Table):
    # "<eos>" at once: probability 0.5 (log 0.5 per word);
    # "a a a <eos>": 0.5 * 0.8 * 0.8 * 1 = 0.32, but log(0.32) / 4 words = -0.28 per word
    P = {(): {2: 0.5, 3: 0.5}, (3,): {3: 0.8, 2: 0.2}, (3, 3): {3: 0.8, 2: 0.2}}


def test_length_penalty_prefers_the_longer_sentence():
    model = ShortOrLong()
    src = torch.ones(1, 3, dtype=torch.long)
    assert beam_search(model, src, src == 1, beam_size=2, max_new_tokens=6) == [2]
    assert beam_search(model, src, src == 1, beam_size=2, max_new_tokens=6, length_penalty=1.0) == [
        3,
        3,
        3,
        2,
    ]
