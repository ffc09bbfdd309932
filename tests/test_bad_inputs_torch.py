"""Bad inputs for the torch side of course_lib (causal attention, layers, models, the data the
models train on, the pretrained MiniLM, training), in one table like tests/test_bad_inputs.py:
every row calls a public callable with something wrong and names the error type and a fragment
of the message it must give (the argument, what it got, what it needs). A row that returned a
result instead would be a silent wrong answer (issue 18)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

from course_lib.causal_attention import (
    CausalSelfAttention,
    KVCache,
    LayerKVCache,
    causal_mask_from,
)
from course_lib.data import docstrings as ds
from course_lib.data import language_modeling as lm
from course_lib.data import pretraining as pt
from course_lib.data.translation import batches as tb
from course_lib.data.translation import grammar as tg
from course_lib.data.translation import sampling as ts
from course_lib.layers import attention as la
from course_lib.layers import counting, from_torch, stacks
from course_lib.layers.residual import residual
from course_lib.models import bert, bert_encoder, classifier, configs, decoding, generation
from course_lib.models import gpt, mlm_head, modern, ngram, seq2seq, transformer
from course_lib import pretrained, training

# ---------------------------------------------------------------------------------------------
# Small objects the rows need (built once; every one is tiny and seeded).
# ---------------------------------------------------------------------------------------------
torch.manual_seed(0)
T3 = torch.ones(1, 3, 8)
IDS = torch.tensor([[1, 2, 3]])
NAN_IDS_F = torch.full((1, 3), float("nan"))
LOGITS = torch.tensor([[0.0, 1.0, 2.0]])
GPT_S = gpt.GPT(11, 8, d_model=8, num_heads=2, num_layers=1)
MODERN_S = modern.ModernLM(11, 8, 2, 1, 1, 16, max_len=8)
BERT_S = bert.TinyBert(20, d_model=8, num_layers=1, num_heads=2, max_len=8, dropout=0.0)
ENC_CFG = bert_encoder.BertEncoderConfig(
    vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=16, max_position_embeddings=8,
)  # fmt: skip
BERT_ENC = bert_encoder.BertEncoder(ENC_CFG)
TRANSLATOR = transformer.TransformerTranslator(10, 10, 8, 2, 1, 16, max_len=16)
GRU = seq2seq.Seq2SeqGRU(10, 10, emb=4, hidden=8)
ATT_GRU = seq2seq.AttentionSeq2SeqGRU(10, 10, emb=4, hidden=8, att=8)
SRC = torch.tensor([[4, 5, 2]])
SRC_MASK = torch.ones(1, 3, dtype=torch.bool)
VOCAB = tb.Vocab(["a", "b", "c"])
COUNT_LM = ngram.unigram_lm(torch.tensor([0, 1, 2, 1]), 3)
BIGRAM_LM = ngram.bigram_lm(torch.tensor([0, 1, 2, 1]), 3)
RNG = np.random.default_rng(0)
DOCS = [["a b .", "c d ."], ["e f .", "g h ."]]
NP_ = tg.NP("cat")
VP_ = tg.VP("sees", tg.NP("dog"))
CLAUSE = tg.Clause(NP_, VP_)


def _batch(labels: torch.Tensor) -> dict:
    n = labels.shape[1]
    return {
        "input_ids": torch.ones(1, n, dtype=torch.long),
        "segment_ids": torch.zeros(1, n, dtype=torch.long),
        "attention_mask": torch.ones(1, n, dtype=torch.bool),
        "mlm_labels": labels,
        "nsp_labels": torch.tensor([1]),
    }


NO_MASKED = _batch(torch.full((1, 4), pt.IGNORE_INDEX))
ONE_MASKED = _batch(torch.tensor([[pt.IGNORE_INDEX, 5, pt.IGNORE_INDEX, pt.IGNORE_INDEX]]))


def _nan_loss(model, batch):
    return model(batch).sum() * float("nan")


def _inf_loss(model, batch):
    return model(batch).sum() * float("inf")


def _loss(model, batch):
    return model(batch).sum()


def _opt(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1)


LIN = nn.Linear(2, 1)
X2 = torch.ones(3, 2)

# (callable, args, kwargs, error type, message fragment)
CASES = [
    # causal_attention
    (causal_mask_from, (-1, 3), {}, ValueError, "start must be >= 0, got -1"),
    (causal_mask_from, (0, 0), {}, ValueError, "n_new must be >= 1, got 0"),
    (causal_mask_from, (1.5, 2), {}, TypeError, "start must be an integer, got float"),
    (CausalSelfAttention, (6, 4), {}, ValueError, "d_model=6 is not divisible by num_heads=4"),
    (CausalSelfAttention, (8, 4, 3), {}, ValueError, "num_kv_heads=3 must divide num_heads=4"),
    (CausalSelfAttention, (8, 2), {"dropout": 1.0}, ValueError, "dropout must be a probability"),
    (CausalSelfAttention, (8, 2), {"qk_transform": 3}, TypeError, "qk_transform must be callable"),
    (KVCache().layer, (1,), {}, IndexError, "layer 1: the cache has 0 layers"),
    (KVCache().layer, (-1,), {}, ValueError, "index must be >= 0, got -1"),
    (KVCache().layer, (0.0,), {}, TypeError, "index must be an integer, got float"),
    (LayerKVCache().append, (np.ones((1, 1, 2, 4)), torch.ones(1, 1, 2, 4)), {}, TypeError,
     "k must be a torch.Tensor (batch, kv_heads, n_new, d_head), got ndarray"),
    (LayerKVCache().append, (torch.ones(1, 2, 4), torch.ones(1, 2, 4)), {}, ValueError,
     "k must have shape (batch, kv_heads, n_new, d_head), got (1, 2, 4)"),
    (LayerKVCache().append, (torch.ones(1, 1, 2, 4), torch.ones(1, 1, 3, 4)), {}, ValueError,
     "v must have the shape of k (1, 1, 2, 4), got (1, 1, 3, 4)"),
    # training
    (training.TrainingLog([1.0, 2.0]).smoothed, (0,), {}, ValueError, "window must be >= 1, got 0"),
    (training.TrainingLog([1.0]).smoothed, (2.5,), {}, TypeError, "window must be an integer"),
    (training.TrainingLog([1.0]).smoothed, (-3,), {}, ValueError, "window must be >= 1, got -3"),
    (training.train, (LIN, lambda step: X2, _inf_loss), {"steps": 2, "progress": False},
     ValueError, "inf at step 0: training stopped"),
    (training.train, (LIN, iter([X2]), _loss), {"steps": 3, "progress": False}, ValueError,
     "batches ran out after 1 batch(es); train needs steps=3"),
    (training.train, (LIN, [X2], "loss"), {"steps": 1}, TypeError, "loss_fn must be a function"),
    (training.train, (LIN, [X2], _loss), {"steps": 0}, ValueError, "steps must be >= 1, got 0"),
    (training.train, (LIN, [X2], _loss), {"steps": 1, "clip_grad": -1.0}, ValueError,
     "clip_grad must be a finite number > 0, got -1.0"),
    (training.train_step, (LIN, _opt(LIN), _nan_loss, X2), {"step": 7}, ValueError,
     "the loss is nan at step 7"),
    (training.train_step, (LIN, "adam", _loss, X2), {}, TypeError,
     "optimizer must be a torch.optim.Optimizer, got str"),
    (training.train_step, (LIN, _opt(LIN), _loss, X2, 0.0), {}, ValueError,
     "clip_grad must be a finite number > 0, got 0.0"),
    (training.train_step, (None, _opt(LIN), _loss, X2), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (training.train_step, (LIN, _opt(LIN), _loss, X2), {"step": -1}, ValueError,
     "step must be >= 0, got -1"),
    # layers
    (la.attention_mask, (np.ones((3, 3), bool), 1, 2, 3, 3), {}, TypeError,
     "mask must be a boolean torch.Tensor (True = may attend), got ndarray"),
    (la.attention_mask, (torch.ones(3, 3), 1, 2, 3, 3), {}, TypeError,
     "mask must be boolean (True = may attend), got dtype torch.float32"),
    (la.attention_mask, (torch.ones(1, 1, 1, 1, 3, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "mask must be 2-D (n_q, n_k), 3-D (batch, n_q or 1, n_k) or 4-D"),
    (la.attention_mask, (torch.zeros(3, 3, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "mask hides every key from some query"),
    (la.attention_mask, (torch.ones(3, 4, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "does not fit"),
    (la.causal_mask_torch, (0,), {}, ValueError, "n must be >= 1, got 0"),
    (la.causal_mask_torch, (-2,), {}, ValueError, "n must be >= 1, got -2"),
    (la.causal_mask_torch, (2.0,), {}, TypeError, "n must be an integer, got float"),
    (counting.multi_head_attention_flops, (0, 8), {}, ValueError, "n must be >= 1, got 0"),
    (counting.multi_head_attention_flops, (4, -8), {}, ValueError, "d_model must be >= 1, got -8"),
    (counting.multi_head_attention_flops, ("4", 8), {}, TypeError, "n must be an integer, got str"),
    (from_torch.mha_from_torch, (nn.Linear(4, 4),), {}, TypeError,
     "module must be a torch.nn.MultiheadAttention, got Linear"),
    (from_torch.mha_from_torch, (None,), {}, TypeError,
     "module must be a torch.nn.MultiheadAttention, got NoneType"),
    (from_torch.mha_from_torch, (nn.MultiheadAttention(4, 2, add_bias_kv=True),), {}, ValueError,
     "module:"),
    (from_torch.encoder_layer_from_torch, (nn.Linear(4, 4),), {}, TypeError,
     "module must be a torch.nn.TransformerEncoderLayer, got Linear"),
    (from_torch.encoder_layer_from_torch, (nn.TransformerDecoderLayer(4, 2),), {}, TypeError,
     "module must be a torch.nn.TransformerEncoderLayer, got TransformerDecoderLayer"),
    (from_torch.encoder_layer_from_torch,
     (nn.TransformerEncoderLayer(4, 2, activation=nn.functional.silu),), {}, ValueError,
     "module.activation: only relu, gelu and tanh-approximated gelu can be copied"),
    (from_torch.decoder_layer_from_torch, (nn.TransformerEncoderLayer(4, 2),), {}, TypeError,
     "module must be a torch.nn.TransformerDecoderLayer, got TransformerEncoderLayer"),
    (from_torch.decoder_layer_from_torch, ("layer",), {}, TypeError,
     "module must be a torch.nn.TransformerDecoderLayer, got str"),
    (from_torch.decoder_layer_from_torch,
     (nn.TransformerDecoderLayer(4, 2, activation=nn.Tanh()),), {}, ValueError,
     "module.activation: only relu, gelu and tanh-approximated gelu can be copied"),
    (from_torch.stack_from_torch, (stacks.Encoder, nn.TransformerDecoderLayer(4, 2)), {}, TypeError,
     "module must be a torch.nn.TransformerEncoder, got TransformerDecoderLayer"),
    (from_torch.stack_from_torch, (nn.Linear, nn.Linear(2, 2)), {}, TypeError,
     "cls must be course_lib.Encoder or course_lib.Decoder, got Linear"),
    (from_torch.stack_from_torch, ("Encoder", nn.Linear(2, 2)), {}, TypeError,
     "cls must be course_lib.Encoder or course_lib.Decoder, got str"),
    (residual, (np.ones((1, 3, 8)), nn.Identity(), nn.Identity(), nn.Identity()), {},
     TypeError, "x must be a torch.Tensor (batch, n, d_model), got ndarray"),
    (residual, (T3, "attn", nn.Identity(), nn.Identity()), {}, TypeError,
     "sublayer must be callable, got str"),
    (residual, (T3, lambda y: y[..., :1], nn.Identity(), nn.Identity()), {}, ValueError,
     "sublayer must return the shape of x (1, 3, 8), got (1, 3, 1)"),
    (residual, (T3, nn.Identity(), None, nn.Identity()), {}, TypeError,
     "norm must be callable, got NoneType"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "error", "fragment"),
    CASES,
    ids=[
        f"{getattr(c[0], '__qualname__', c[0].__class__.__name__)}-{i}" for i, c in enumerate(CASES)
    ],
)
def test_bad_input_is_refused_with_a_message(fn, args, kwargs, error, fragment):
    with pytest.raises(error) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value)
