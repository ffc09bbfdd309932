"""Bad inputs for the torch side of course_lib (causal attention, layers, models, the data the
models train on, the pretrained MiniLM, training), in one table like tests/test_bad_inputs.py:
every row calls a public callable with something wrong and names the error type and a fragment
of the message it must give (the argument, what it got, what it needs). A row that returned a
result instead would be a silent wrong answer (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import configs, evaluation, interop, pretrained, training
from course_lib import data_parallel as dp
from course_lib.data import chat
from course_lib.data import docstrings as ds
from course_lib.data import instructions as ins
from course_lib.data import language_modeling as lm
from course_lib.data import pretraining as pt
from course_lib.data.translation import batches as tb
from course_lib.data.translation import grammar as tg
from course_lib.data.translation import sampling as ts
from course_lib.models import (
    assistant,
    bert,
    bert_encoder,
    classifier,
    decoding,
    dpo,
    generation,
    gpt,
    lora,
    mlm_head,
    modern,
    ngram,
    rl,
    seq2seq,
    transformer,
)
from course_lib.nn import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    FeedForward,
    KVCache,
    LayerKVCache,
    MixtureOfExperts,
    MultiHeadAttention,
    MultiHeadLatentAttention,
    RMSNorm,
    Router,
    SlidingWindowKVCache,
    SwiGLUFeedForward,
    counting,
    eval_mode,
    load_balancing_loss,
    sigmoid_top_k,
    sliding_window_mask,
    softmax_top_k,
)
from course_lib.nn import attention as la
from course_lib.nn import latent_attention as mla
from course_lib.nn import moe as nn_moe
from course_lib.nn.rope import rope_qk

# ---------------------------------------------------------------------------------------------
# Small objects the rows need (built once; every one is tiny and seeded).
# ---------------------------------------------------------------------------------------------
torch.manual_seed(0)
T3 = torch.ones(1, 3, 8)
IDS = torch.tensor([[1, 2, 3]])
NAN_IDS_F = torch.full((1, 3), float("nan"))
LOGITS = torch.tensor([[0.0, 1.0, 2.0]])
GPT_S = gpt.GPT(configs.GPTConfig(11, 8, d_model=8, num_heads=2, num_layers=1))
MODERN_S = modern.ModernLM(configs.ModernConfig(11, 8, 2, 1, 1, 16, context_length=8))
MODERN_2 = modern.ModernLM(configs.ModernConfig(11, 8, 2, 1, 2, 16, context_length=8))  # 2 layers
BERT_CFG = configs.TinyBertConfig(
    20, d_model=8, num_layers=1, num_heads=2, d_ff=32, context_length=8
)
BERT_S = bert.TinyBert(BERT_CFG)
ENC_CFG = configs.BertEncoderConfig(
    vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
    intermediate_size=16, max_position_embeddings=8,
)  # fmt: skip
BERT_ENC = bert_encoder.BertEncoder(ENC_CFG)
TRANSLATOR = transformer.TransformerTranslator(10, 10, 8, 2, 1, 16, context_length=16)
GRU = seq2seq.Seq2SeqGRU(10, 10, emb=4, hidden=8)
ATT_GRU = seq2seq.AttentionSeq2SeqGRU(10, 10, emb=4, hidden=8, att=8)
SRC = torch.tensor([[4, 5, 2]])
SRC_MASK = torch.ones(1, 3, dtype=torch.bool)
VOCAB = tb.Vocab(["a", "b", "c"])
COUNT_LM = ngram.unigram_lm(torch.tensor([0, 1, 2, 1]), 3)
BIGRAM_LM = ngram.bigram_lm(torch.tensor([0, 1, 2, 1]), 3)
RNG = np.random.default_rng(0)
DOCS = [["a b .", "c d ."], ["e f .", "g h ."]]
CHAT_TOK = chat.load_chat_tokenizer()
USER_MSG = [{"role": "user", "content": "hi"}]
CHAT_IDS, CHAT_MASK = assistant.chat_batch(
    [chat.render_chat(USER_MSG + [{"role": "assistant", "content": "yo"}], CHAT_TOK)]
)
GPT_CHAT = gpt.GPT(configs.GPTConfig(515, 32, d_model=8, num_heads=2, num_layers=1))
LP = torch.zeros(3)
TLP, TMASK, ADV = torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool), torch.zeros(2)
LORA_L = lora.LoRALinear(nn.Linear(4, 3), 2, 4.0)
NP_ = tg.NP("cat")
VP_ = tg.VP("saw", tg.NP("dog"))
CLAUSE = tg.Clause(NP_, VP_)
LONG_TEXT = " ".join(["word"] * 2000)  # 2,000 WordPiece tokens


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


PT_TOK = pt.pretraining_tokenizer(300)
LM_TOK = lm.lm_tokenizer(260)
PT_DATA = pt.PretrainingData(PT_TOK, DOCS, seq_len=16)
PAIRS = [("a b", "c"), ("b a", "c c")]
MHA = MultiHeadAttention(8, 2)
CSA = gpt.CausalSelfAttention(8, 2)
GQA = MultiHeadAttention(8, 4, 2)


def _filled_cache(model, n: int = 3, batch: int = 1) -> KVCache:
    """A KVCache that ``model`` filled with ``n`` positions of ``batch`` sequences."""
    cache = KVCache()
    with torch.no_grad():
        model(torch.ones(batch, n, dtype=torch.long), cache)
    return cache


def _ascii_bytes_tokenizer():
    """A byte-level BPE whose vocabulary lacks the bytes 128-255 (no merges, no unk)."""
    from course_lib.tokenization.bpe import BPETokenizer
    from course_lib.tokenization.byte_level import bytes_to_unicode

    chars = [c for b, c in bytes_to_unicode().items() if b < 128]
    return BPETokenizer({c: i for i, c in enumerate(chars)}, [], byte_level=True)


def _layer_cache(batch: int, kv_heads: int, d_head: int) -> LayerKVCache:
    cache = LayerKVCache()
    cache.append(torch.ones(batch, kv_heads, 2, d_head), torch.ones(batch, kv_heads, 2, d_head))
    return cache


def _transformers_models():
    """Small random transformers models the course does not copy (other architectures)."""
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    small = dict(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=16, max_position_embeddings=16)  # fmt: skip
    return {
        "roberta": RobertaModel(RobertaConfig(**small)),
        "decoder": BertModel(BertConfig(**small, is_decoder=True)),
        "relative": BertModel(BertConfig(**small, position_embedding_type="relative_key")),
    }


HF = _transformers_models()
ENC_LAYER = EncoderLayer(8, 2, 16)
DEC_LAYER = DecoderLayer(8, 2, 16)
ENC = Encoder(1, 8, 2, 16)
DEC = Decoder(1, 8, 2, 16)
FFN = FeedForward(8, 16)
FFN_SWIGLU = SwiGLUFeedForward(8, 16)
MOE_S = MixtureOfExperts(8, 16, 4, 2)
MLA_S = MultiHeadLatentAttention(16, 2, 4, 8, 4, 8)


def _latent_cache(batch: int, heads: int, width: int) -> LayerKVCache:
    cache = LayerKVCache()
    cache.append(torch.zeros(batch, heads, 2, width), torch.zeros(batch, heads, 2, width))
    return cache


class _FakeTokenizer:  # what ScratchClassifier reads of a Hugging Face tokenizer
    vocab_size, unk_token_id = 10, 1

    def __call__(self, text, **kwargs):
        return {"input_ids": [0, 1], "attention_mask": [1, 1]}


SCRATCH = classifier.ScratchClassifier(_FakeTokenizer(), [0, 1], ENC_CFG, 2, 8)
NORM = RMSNorm(8)
MLM_HEAD = mlm_head.MlmHead(8, 20)
CLASSIFIER = classifier.BertClassifier([], 8, 3)
SPAN = classifier.SpanHead(8)
STATES = [torch.ones(2, 8), torch.ones(3, 8)]  # two sentences' vectors (n_i, H)
FINE_TUNE = {"lr": 1e-3, "head_lr": 1e-3, "epochs": 1, "batch_size": 2}
ADD_ATT = seq2seq.AdditiveAttention(8, 6, 4)
M3 = torch.ones(1, 3, dtype=torch.bool)
LIN = nn.Linear(2, 1)
X2 = torch.ones(3, 2)

# (callable, args, kwargs, error type, message fragment)
SMOLLM2_FILE = interop.read_gguf(pretrained.smollm2_path())  # the header only: 0.1 s
ev = evaluation
EV_TOK = lm.lm_tokenizer(300)
EV_GPT = gpt.GPT(configs.GPTConfig(vocab_size=300, context_length=16, d_model=16, num_heads=2,
                                   num_layers=1))  # fmt: skip
EV_TASK = {"items": [{"query": "q", "choices": ["a", "b"], "gold": 0}], "shots": None}

CASES = [
    # nn.attention, nn.cache: the attention's door (the models check once for all layers)
    (MultiHeadAttention, (6, 4), {}, ValueError, "d_model=6 is not divisible by num_heads=4"),
    (gpt.CausalSelfAttention, (6, 4), {}, ValueError, "d_model=6 is not divisible by num_heads=4"),
    (gpt.CausalSelfAttention, (8, 0), {}, ValueError, "num_heads must be >= 1, got 0"),
    (gpt.CausalSelfAttention, (8, 2), {"dropout": 1.0}, ValueError, "dropout must be a probability in [0, 1), got 1.0"),
    (CSA.forward, (torch.ones(1, 3, 6),), {}, ValueError, "x must have shape (batch, n, d_model=8), got (1, 3, 6)"),
    (CSA.forward, (torch.ones(1, 0, 8),), {}, ValueError, "x needs at least one position, got shape (1, 0, 8)"),
    (CSA.forward, (T3,), {"cache": KVCache()}, TypeError, "cache must be a LayerKVCache or None, got KVCache"),
    (CSA.forward, (T3,), {"cache": _layer_cache(2, 2, 4)}, ValueError, "this call needs batch=1, kv_heads=2, d_head=4"),
    (COUNT_LM.forward, (torch.tensor([[3]]),), {}, ValueError, "ids must lie in [0, vocab_size=3), got ids from 3 to 3"),
    (COUNT_LM.forward, (torch.tensor([0, 1]),), {}, ValueError, "ids must have shape (batch, n) with no empty axis, got (2,)"),
    (COUNT_LM.forward, ([[0]],), {}, TypeError, "ids must be a torch.long tensor of token ids (batch, n), got list"),
    (MultiHeadAttention, (8, 4, 3), {}, ValueError, "num_kv_heads=3 must divide num_heads=4"),
    (MultiHeadAttention, (8, 2), {"qk_transform": 3}, TypeError, "qk_transform must be callable"),
    (_filled_cache(MODERN_2).check_fits, (1, 1, 1, 4), {}, ValueError,
     "cache holds 2 layers but the model has 1"),
    (_filled_cache(MODERN_S).check_fits, (2, 1, 1, 4), {}, ValueError,
     "cache holds 1 layers but the model has 2"),
    (_filled_cache(MODERN_S).check_fits, (1, 2, 1, 4), {}, ValueError,
     "this call needs batch=2, kv_heads=1, d_head=4: start a new KVCache"),
    (_filled_cache(MODERN_S).check_fits, (1, 1, 2, 4), {}, ValueError, "kv_heads=2"),
    (_layer_cache(1, 2, 4).check_fits, (2, 2, 4), {}, ValueError, "this call needs batch=2"),
    (_layer_cache(1, 2, 4).check_fits, (1, 1, 4), {}, ValueError, "kv_heads=1"),
    (_layer_cache(1, 2, 4).check_fits, (1, 2, 8), {}, ValueError, "d_head=8"),
    (eval_mode, (None,), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (eval_mode, ("model",), {}, TypeError, "model must be a torch.nn.Module, got str"),
    (eval_mode, (3,), {}, TypeError, "model must be a torch.nn.Module, got int"),
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
    (training.train_step, (LIN, None, _loss, X2), {}, TypeError,
     "optimizer must be a torch.optim.Optimizer, got NoneType"),
    (training.train_step, (LIN, _opt(LIN), _loss, X2, 0.0), {}, ValueError,
     "clip_grad must be a finite number > 0, got 0.0"),
    (training.train_step, (None, _opt(LIN), _loss, X2), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (training.train_step, (LIN, _opt(LIN), _loss, X2), {"step": -1}, ValueError,
     "step must be >= 0, got -1"),
    # layers
    (la.check_mask, (np.ones((3, 3), bool), 1, 2, 3, 3), {}, TypeError,
     "mask must be a boolean torch.Tensor (True = may attend), got ndarray"),
    (la.check_mask, (torch.ones(3, 3), 1, 2, 3, 3), {}, TypeError,
     "mask must be boolean (True = may attend), got dtype torch.float32"),
    (la.check_mask, (torch.ones(1, 1, 1, 1, 3, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "mask must be 2-D (n_q, n_k), 3-D (batch, n_q or 1, n_k) or 4-D"),
    (la.check_mask, (torch.zeros(3, 3, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "mask hides every key from some query"),
    (la.check_mask, (torch.ones(3, 4, dtype=torch.bool), 1, 2, 3, 3), {}, ValueError,
     "does not fit"),
    (counting.multi_head_attention_flops, (0, 8), {}, ValueError, "n must be >= 1, got 0"),
    (counting.multi_head_attention_flops, (4, -8), {}, ValueError, "d_model must be >= 1, got -8"),
    (counting.multi_head_attention_flops, ("4", 8), {}, TypeError, "n must be an integer, got str"),
    # models.bert
    (bert.TinyBert, ({"vocab_size": 20},), {}, TypeError, "config must be a TinyBertConfig, got dict"),
    (bert.TinyBert, (None,), {}, TypeError, "config must be a TinyBertConfig, got NoneType"),
    (bert.TinyBert, (ENC_CFG,), {}, TypeError, "config must be a TinyBertConfig, got BertEncoderConfig"),
    (bert.pretraining_losses, (BERT_S, NO_MASKED), {}, ValueError, "has no position to predict"),
    (bert.pretraining_losses, (None, ONE_MASKED), {}, TypeError, "model must be a TinyBert, got NoneType"),
    (bert.pretraining_losses, (BERT_S, {"input_ids": IDS}), {}, ValueError, "batch is missing"),
    (bert.fill_mask, (BERT_S, PT_TOK, "the [MASK] is set"), {"top_k": True}, TypeError,
     "top_k must be an integer, got bool"),
    (bert.pretraining_loss, (BERT_S, NO_MASKED), {}, ValueError,
     "batch['mlm_labels'] has no position to predict"),
    (bert.pretraining_loss, (BERT_S, {"input_ids": IDS}), {}, ValueError,
     "batch is missing 'segment_ids', 'attention_mask', 'mlm_labels', 'nsp_labels'"),
    (bert.pretraining_loss, (None, ONE_MASKED), {}, TypeError, "model must be a TinyBert, got NoneType"),
    (bert.pretraining_loss, (BERT_S, [ONE_MASKED]), {}, TypeError,
     "batch must be a dict from PretrainingData.batch, got list"),
    (bert.pretraining_accuracy, (BERT_S, []), {}, ValueError, "batches is empty"),
    (bert.pretraining_accuracy, (BERT_S, ONE_MASKED), {}, TypeError,
     "batches must be an iterable of batch dicts, got one dict; wrap it in [batch]"),
    (bert.pretraining_accuracy, (BERT_S, [NO_MASKED]), {}, ValueError,
     "batch['mlm_labels'] has no position to predict"),
    (bert.fill_mask, (None, PT_TOK, "the [MASK] is set"), {}, TypeError,
     "model must be a TinyBert, got NoneType"),
    (bert.fill_mask, (BERT_S, {"a": 1}, "the [MASK] is set"), {}, TypeError,
     "tokenizer must be a BPETokenizer, got dict"),
    (bert.fill_mask, (BERT_S, PT_TOK, ["the", "[MASK]"]), {}, TypeError,
     "text must be a str, got list"),
    (bert.fill_mask, (BERT_S, PT_TOK, "the value is set"), {}, ValueError,
     "text must contain exactly one [MASK], got 0"),
    (bert.fill_mask, (BERT_S, PT_TOK, "the [MASK] is set"), {"top_k": 0}, ValueError,
     "top_k must be >= 1, got 0"),
    (bert.bert_parameter_count, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (bert.bert_parameter_count, (), {"hidden_size": 10}, ValueError, "hidden_size=10"),
    (bert.bert_parameter_count, (), {"intermediate_size": 1.5}, TypeError,
     "intermediate_size must be an integer, got float"),
    (bert.load_tiny_bert, ("no/such/file.pt",), {}, FileNotFoundError,
     "path 'no/such/file.pt': no such checkpoint file"),
    (bert.load_tiny_bert, (3,), {}, TypeError, "path must be a str or pathlib.Path, got int"),
    (bert.load_tiny_bert, (gpt.GPT_CHECKPOINT,), {}, ValueError, "is not a TinyBert checkpoint"),
    # models.bert_encoder
    (configs.BertEncoderConfig, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (configs.BertEncoderConfig, (), {"hidden_size": 10, "num_attention_heads": 4}, ValueError,
     "hidden_size=10 is not divisible by num_attention_heads=4"),
    (configs.BertEncoderConfig, (), {"hidden_act": "swish"}, ValueError,
     "hidden_act must be one of"),
    (configs.BertEncoderConfig, (), {"hidden_dropout_prob": 1.5}, ValueError,
     "hidden_dropout_prob must be a probability in [0, 1), got 1.5"),
    (configs.BertEncoderConfig, (), {"layer_norm_eps": -1.0}, ValueError,
     "layer_norm_eps must be a finite number > 0, got -1.0"),
    (bert_encoder.BertEncoder, ({"vocab_size": 20},), {}, TypeError,
     "config must be a BertEncoderConfig, got dict"),
    (bert_encoder.BertEncoder, (None,), {}, TypeError, "config must be a BertEncoderConfig, got NoneType"),
    (bert_encoder.BertEncoder, (configs.TINY_GPT_CONFIG,), {}, TypeError,
     "config must be a BertEncoderConfig, got GPTConfig"),
    (bert_encoder.without_heads, (BERT_ENC, [(5, 0)]), {}, ValueError,
     "(layer, head) must be within (1, 2) counted from 0, got (5, 0)"),
    (bert_encoder.without_heads, (BERT_ENC, (0, 1)), {}, TypeError,
     "heads must be a list of (layer, head) pairs, got (0, 1)"),
    (bert_encoder.without_heads, (None, [(0, 0)]), {}, TypeError,
     "encoder must be a BertEncoder, got NoneType"),
    # models.classifier
    (classifier.mean_pool, (torch.ones(1, 3, 8), torch.ones(1, 4)), {}, ValueError,
     "hidden must be (batch, n, H) and attention_mask (batch, n), got (1, 3, 8) and (1, 4)"),
    (classifier.mean_pool, (np.ones((1, 3, 8)), torch.ones(1, 3)), {}, TypeError,
     "hidden must be a torch.Tensor (batch, n, H), got ndarray"),
    (classifier.mean_pool, (torch.ones(2, 3, 8), torch.tensor([[1, 1, 0], [0, 0, 0]])), {},
     ValueError, "attention_mask: row 1 has no real token (all 0); its mean is undefined"),
    (classifier.segment_mean_pool, (torch.ones(1, 4, 8), [[1, 1, 1, 1]], torch.zeros(1, 4)), {},
     TypeError, "attention_mask must be a torch.Tensor (batch, n), got list"),
    (classifier.segment_mean_pool, (torch.ones(1, 4, 8), torch.ones(1, 4), torch.zeros(1, 3)),
     {}, ValueError, "token_type_ids must have the shape of attention_mask (1, 4), got (1, 3)"),
    (classifier.segment_mean_pool,
     (torch.ones(1, 4, 8), torch.ones(1, 4), torch.zeros(1, 4, dtype=torch.long)), {},
     ValueError, "token_type_ids: row 0 has no real token in segment B (segment ids [0, 0, 0, 0])"),
    (classifier.BertClassifier, ([], 0, 2), {}, ValueError, "hidden_size must be >= 1, got 0"),
    (classifier.BertClassifier, ([], 8, 0), {}, ValueError, "num_classes must be >= 1, got 0"),
    (classifier.BertClassifier, ([], 8, 2), {"dropout": 1.5}, ValueError,
     "dropout must be a probability in [0, 1), got 1.5"),
    (classifier.accuracy_ci, ([],), {}, ValueError, "correct must contain at least one prediction"),
    (classifier.accuracy_ci, ([2, 3],), {}, ValueError,
     "correct must hold 0/1 (or False/True) per prediction, got values [2.0, 3.0]"),
    (classifier.accuracy_ci, ([1, 0],), {"z": -1.0}, ValueError, "z must be a finite number > 0, got -1.0"),
    (classifier.confusion_matrix, ([0, 3], [0, 1], 3), {}, ValueError,
     "labels must lie in [0, num_classes=3), got 3"),
    (classifier.confusion_matrix, ([0, 1], [0], 2), {}, ValueError,
     "labels and predictions must have the same length, got 2 and 1"),
    (classifier.confusion_matrix, ([0], [0], 0), {}, ValueError, "num_classes must be >= 1, got 0"),
    (classifier.confusion_matrix, ([0], [-1], 2), {}, ValueError,
     "predictions must lie in [0, num_classes=2), got -1"),
    (classifier.encode_sentences, (lambda t, **kw: {}, "a sentence"), {}, TypeError,
     "texts must be a list of str, got the str 'a sentence'"),
    (classifier.encode_sentences, (lambda t, **kw: {}, ["a"]), {"batch_size": 0}, ValueError,
     "batch_size must be >= 1, got 0"),
    (classifier.encode_sentences, (None, ["a"]), {}, TypeError,
     "tokenizer must be a Hugging Face tokenizer (callable), got NoneType"),
    (classifier.encode_sentences, (lambda t, **kw: {}, ["a"]), {"max_length": 0}, ValueError,
     "max_length must be >= 1, got 0"),
    (classifier.train_scratch_classifier, (None, ["a"], [0], ["b"], [0]),
     {"rng": np.random.default_rng(0), "num_classes": 2}, TypeError,
     "tokenizer must be a Hugging Face tokenizer (callable), got NoneType"),
    (classifier.train_scratch_classifier, (lambda t, **kw: {}, ["a"], [0], ["b"], [0]),
     {"rng": 0, "num_classes": 2}, TypeError, "rng must be a Generator, got int"),
    (classifier.train_scratch_classifier, (lambda t, **kw: {}, ["a", "b"], [0], ["b"], [0]),
     {"rng": np.random.default_rng(0), "num_classes": 2}, ValueError,
     "train_labels must hold one class id per text (2, at least one), got 1"),
    (classifier.train_scratch_classifier, (lambda t, **kw: {}, "a text", [0], ["b"], [0]),
     {"rng": np.random.default_rng(0), "num_classes": 2}, TypeError,
     "train_texts must be a list of str, got str"),
    (classifier.train_scratch_classifier, (lambda t, **kw: {}, ["a"], [0], ["b"], [0]),
     {"rng": np.random.default_rng(0), "num_classes": 2, "epochs": 0}, ValueError,
     "epochs must be >= 1, got 0"),
    (SCRATCH.predict, ("a sentence",), {}, TypeError, "texts must be a list of str, got str"),
    (SCRATCH.predict, (["a"],), {"batch_size": 0}, ValueError, "batch_size must be >= 1, got 0"),
    (SCRATCH.predict, ([1, 2],), {}, TypeError, "texts must be a list of str, got [1, 2]"),
    (classifier.ScratchClassifier, (None, [0], ENC_CFG, 2, 8), {}, TypeError,
     "tokenizer must be a Hugging Face tokenizer, got NoneType"),
    (classifier.ScratchClassifier, (lambda t, **kw: {}, [0], "config", 2, 8), {}, TypeError,
     "config must be a BertEncoderConfig, got str"),
    (classifier.ScratchClassifier, (lambda t, **kw: {}, [0], ENC_CFG, 2, 0), {}, ValueError,
     "max_length must be >= 1, got 0"),
    (classifier.SpanHead, (0,), {}, ValueError, "hidden_size must be >= 1, got 0"),
    (classifier.SpanHead, ("8",), {}, TypeError, "hidden_size must be an integer, got str"),
    (classifier.SpanHead, (8.0,), {}, TypeError, "hidden_size must be an integer, got float"),
    (classifier.top_layer_classifier, (BERT_ENC, 2, 3), {}, ValueError,
     "top must be at most the encoder's 1 layers, got 2"),
    (classifier.top_layer_classifier, (BERT_ENC, -1, 3), {}, ValueError, "top must be >= 0, got -1"),
    (classifier.top_layer_classifier, (None, 1, 3), {}, TypeError,
     "encoder must be a BertEncoder, got NoneType"),
    (classifier.classification_loss, (CLASSIFIER, (torch.ones(2, 2, 8), torch.ones(2, 2))), {},
     TypeError, "batch must be a tuple (hidden, attention_mask, labels), got tuple of 2"),
    (classifier.classification_loss,
     (CLASSIFIER, (torch.ones(2, 2, 8), torch.ones(2, 2), torch.tensor([0, 3]))), {}, ValueError,
     "labels must hold one class id in [0, 3) per sentence of the batch (2), got [0, 3]"),
    (classifier.classification_loss, (CLASSIFIER, (torch.ones(2, 2, 8), torch.ones(2, 2), [0, 1])),
     {}, TypeError, "labels must be a torch.Tensor (batch,) of class ids, got list"),
    (classifier.fine_tune, (CLASSIFIER, STATES, [0], STATES, [0, 1]), FINE_TUNE, ValueError,
     "labels must hold one class id per sentence (2), got 1"),
    (classifier.fine_tune, (CLASSIFIER, STATES, [0, 1], STATES, [0, 1]), {**FINE_TUNE, "epochs": 0},
     ValueError, "epochs must be >= 1, got 0"),
    (classifier.fine_tune, (CLASSIFIER, STATES, [0, 1], STATES, [0, 1]),
     {**FINE_TUNE, "batch_size": 4}, ValueError, "batch_size must be at most the 2 sentences, got 4"),
    (classifier.predict_classes, (CLASSIFIER, []), {}, ValueError,
     "states must hold at least one sentence's (n_i, H) tensor, got none"),
    (classifier.predict_classes, (CLASSIFIER, STATES), {"batch_size": 0}, ValueError,
     "batch_size must be >= 1, got 0"),
    (classifier.predict_classes, (CLASSIFIER, [torch.ones(8)]), {}, ValueError,
     "states[0] must have shape (n_i, H), got (8,)"),
    (classifier.frozen_pass, (lambda t, **kw: {}, BERT_ENC, ["a"]), {"top": 2}, ValueError,
     "top must be at most the encoder's 1 layers, got 2"),
    (classifier.frozen_pass, (lambda t, **kw: {}, BERT_ENC, "a sentence"), {}, TypeError,
     "texts must be a list of str, got the str"),
    (classifier.frozen_pass, (lambda t, **kw: {}, None, ["a"]), {}, TypeError,
     "encoder must be a BertEncoder, got NoneType"),
    (classifier.pad_states, ([],), {}, ValueError,
     "states must hold at least one sentence's (n_i, H) tensor, got none"),
    (classifier.pad_states, ([torch.ones(2, 8), torch.ones(2, 4)],), {}, ValueError,
     "states must all have the same width H, got 8 (states[0]) and 4 (states[1])"),
    (classifier.pad_states, ([np.ones((2, 8))],), {}, TypeError,
     "states[0] must be a torch.Tensor (n_i, H), got ndarray"),
    # configs
    (configs.TinyBertConfig, (), {"d_model": 0}, ValueError, "d_model must be >= 1, got 0"),
    (configs.TinyBertConfig, (), {"num_heads": 3}, ValueError, "d_model=64 is not divisible by num_heads=3"),
    (configs.TinyBertConfig, (), {"dropout": 1.0}, ValueError, "dropout must be a probability"),
    (configs.TinyBertConfig, (20,), {"pad_id": 20}, ValueError, "pad_id must be in [0, vocab_size=20), got 20"),
    (configs.TinyBertConfig, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (configs.TrainingConfig, (), {"steps": 0}, ValueError, "steps must be >= 1, got 0"),
    (configs.TrainingConfig, (), {"lr": -1.0}, ValueError, "lr must be a finite number > 0"),
    (configs.TrainingConfig, (), {"warmup": 5000}, ValueError, "warmup must be <= steps=4000"),
    (configs.TrainingConfig, (), {"schedule": "step"}, ValueError, "schedule must be 'constant', 'linear' or"),
    (configs.GPTConfig, (0, 8), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (configs.GPTConfig, (11, 8), {"d_model": 6, "num_heads": 4}, ValueError, "d_model=6 is not divisible"),
    (configs.GPTConfig, (11, 8), {"activation": "swish"}, ValueError, "activation must be one of"),
    (configs.GPTConfig, (11, 8), {"layer_norm_eps": 0.0}, ValueError, "layer_norm_eps must be a finite number > 0"),
    (configs.GPTConfig, (11, 0), {}, ValueError, "context_length must be >= 1, got 0"),
    (configs.GPTConfig, (11, 8), {"dropout": 1.0}, ValueError, "dropout must be a probability in [0, 1)"),
    (configs.GPTConfig, (11.0, 8), {}, TypeError, "vocab_size must be an integer, got float"),
    (configs.GPTConfig, (11, 8), {"tie_weights": "no"}, TypeError, "tie_weights must be True or False, got str 'no'"),
    (configs.ModernConfig, (11, 6, 4, 1, 1, 16), {}, ValueError, "d_model=6 is not divisible by num_heads=4"),
    (configs.ModernConfig, (11, 8, 4, 3, 1, 16), {}, ValueError, "num_kv_heads=3 must divide num_heads=4"),
    (configs.ModernConfig, (11, 6, 2, 1, 1, 16), {}, ValueError, "even"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"rope_theta": -1.0}, ValueError,
     "rope_theta must be a finite number > 0, got -1.0"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"rope_theta": 1.0}, ValueError,
     "rope_theta must be a finite number > 1, got 1.0"),
    (configs.ModernConfig, (0, 8, 2, 1, 1, 16), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"rms_eps": 0.0}, ValueError,
     "rms_eps must be a finite number > 0, got 0.0"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"context_length": 0}, ValueError, "context_length must be >= 1, got 0"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"tie_weights": "no"}, TypeError, "tie_weights must be True or False"),
    # models.decoding
    (decoding.greedy_decode, (GRU, SRC, SRC_MASK), {"max_new_tokens": 0}, ValueError, "max_new_tokens must be >= 1"),
    (decoding.greedy_decode, (None, SRC, SRC_MASK), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (decoding.greedy_decode, (GRU, SRC, SRC_MASK.long()), {}, TypeError, "src_mask must be a boolean tensor"),
    (decoding.greedy_decode, (GRU, SRC.float(), SRC_MASK), {}, TypeError,
     "src must be a torch.long tensor of token ids (batch, length), got torch.float32 tensor"),
    (decoding.beam_search, (GRU, SRC.repeat(2, 1), SRC_MASK.repeat(2, 1)), {}, ValueError,
     "beam_search translates one sentence: src must be (1, S), got (2, 3)"),
    (decoding.beam_search, (GRU, SRC, SRC_MASK), {"beam_size": 0}, ValueError, "beam_size must be >= 1, got 0"),
    (decoding.beam_search, (GRU, SRC, SRC_MASK), {"length_penalty": -1.0}, ValueError,
     "length_penalty must be a finite number >= 0 (0 = plain log-probability), got -1.0"),
    (decoding.beam_search, (GRU, [[4, 5, 2]], SRC_MASK), {}, TypeError,
     "src must be a torch.long tensor of token ids (1, S), got list"),
    (decoding.translate, (GRU, "a b", VOCAB, VOCAB), {}, TypeError, "sentences must be a list of strings"),
    (decoding.translate, (GRU, ["a"], VOCAB, VOCAB), {"batch_size": 0}, ValueError, "batch_size must be >= 1"),
    (decoding.translate, (GRU, [3], VOCAB, VOCAB), {}, TypeError, "sentences[0] must be a str, got int"),
    (decoding.translate, (GRU, ["a"], None, VOCAB), {}, TypeError, "src_vocab must be a Vocab"),
    # models.generation
    (generation.top_k_filter, (LOGITS, 0), {}, ValueError, "top_k must be >= 1, got 0"),
    (generation.top_k_filter, (np.ones((1, 3)), 2), {}, TypeError,
     "logits must be a floating torch.Tensor (..., vocab), got ndarray"),
    (generation.top_k_filter, (LOGITS.long(), 1), {}, TypeError,
     "logits must be a floating torch.Tensor (..., vocab), got torch.int64 tensor"),
    (generation.top_k_filter, (LOGITS, 1.5), {}, TypeError, "top_k must be an integer, got float"),
    (generation.top_k_filter, (torch.tensor([[0.0, float("nan")]]), True), {}, TypeError, "top_k must be an integer, got bool"),
    (generation.top_p_filter, (LOGITS, 0), {}, ValueError, "top_p must be in (0, 1], got 0"),
    (generation.top_p_filter, (LOGITS, 1.5), {}, ValueError, "top_p must be in (0, 1], got 1.5"),
    (generation.top_p_filter, (LOGITS, "0.9"), {}, TypeError, "top_p must be a number in (0, 1], got str"),
    (generation.next_token, (LOGITS, -1.0), {}, ValueError, "temperature must be a finite number >= 0"),
    (generation.next_token, (LOGITS, float("inf")), {}, ValueError, "got inf"),
    (generation.generate, (GPT_S, IDS, 2), {"temperature": float("inf")}, ValueError,
     "temperature must be a finite number >= 0"),
    (generation.generate, (GPT_S, IDS, 2), {"eos_id": 11}, ValueError, "eos_id must be in [0, vocab_size=11), got 11"),
    (generation.next_token, (LOGITS,), {"top_k": 0}, ValueError, "top_k must be >= 1, got 0"),
    (generation.next_token, (LOGITS,), {"top_p": 0.0}, ValueError, "top_p must be in (0, 1], got 0.0"),
    (generation.next_token, (torch.tensor([0.0, 1.0]),), {}, ValueError,
     "logits must have shape (batch, vocab), got (2,)"),
    (generation.generate, (GPT_S, IDS, -1), {}, ValueError, "max_new_tokens must be >= 0, got -1"),
    (generation.generate, (GPT_S, IDS.float(), 2), {}, TypeError, "ids must be a torch.long tensor"),
    (generation.generate, (GPT_S, torch.ones(1, 9, dtype=torch.long), 2), {}, ValueError,
     "the prompt has 9 tokens but the model's context is context_length=8"),
    (generation.generate, (GPT_S, torch.tensor([[1, 50]]), 2), {}, ValueError,
     "ids must lie in [0, vocab_size=11), got ids from 1 to 50"),
    (generation.next_token_table, (GPT_S, None, "a"), {}, TypeError,
     "tokenizer must have encode() and decode() (a BPETokenizer), got NoneType"),
    (generation.next_token_table, (GPT_S, None, "a"), {"k": 0}, ValueError, "k must be >= 1, got 0"),
    (generation.next_token_table, (GPT_S, None, 3), {}, TypeError, "prompt must be a str, got int"),
    (generation.next_token_table, (None, None, "a"), {}, TypeError, "model must be a torch.nn.Module"),
    (generation.next_token_table, (BERT_S, None, "a"), {}, TypeError,
     "model must have an integer context_length attribute (its context length), got TinyBert"),
    (generation.generate, (LIN, IDS, 2), {}, TypeError, "model must have an integer context_length attribute"),
    # models.gpt
    (gpt.GPT, ({"vocab_size": 11, "context_length": 8},), {}, TypeError, "config must be a GPTConfig, got dict"),
    (gpt.GPT, (None,), {}, TypeError, "config must be a GPTConfig, got NoneType"),
    (gpt.GPT, (ENC_CFG,), {}, TypeError, "config must be a GPTConfig, got BertEncoderConfig"),
    (gpt.gpt_parameter_count, (), {"tie_weights": "no"}, TypeError, "tie_weights must be True or False"),
    (gpt.lm_loss, (GPT_S, IDS[:, :1]), {}, ValueError, "ids must be (batch, n + 1) with n >= 1, got (1, 1)"),
    (gpt.lm_loss, (GPT_S, np.ones((1, 3))), {}, TypeError, "ids must be a torch.long tensor of token ids"),
    (gpt.lm_loss, (None, IDS), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (gpt.gpt_parameter_count, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (gpt.gpt_parameter_count, (), {"d_ff": 0}, ValueError, "d_ff must be >= 1, got 0"),
    (gpt.gpt_parameter_count, (), {"num_layers": 1.5}, TypeError, "num_layers must be an integer"),
    (gpt.load_tiny_gpt, ("no/such/file.pt",), {}, FileNotFoundError,
     "path 'no/such/file.pt': no such checkpoint file"),
    (gpt.load_tiny_gpt, (None, ), {"unexpected": 1}, TypeError, "unexpected"),
    (gpt.load_tiny_gpt, (bert.CHECKPOINT,), {}, ValueError, "is not a GPT checkpoint"),
    (gpt.load_tiny_gpt, (["a.pt"],), {}, TypeError, "path must be a str or pathlib.Path, got list"),
    # models.mlm_head
    (mlm_head.MlmHead, (0, 5), {}, ValueError, "hidden_size must be >= 1, got 0"),
    (mlm_head.MlmHead, (8, 0), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (mlm_head.MlmHead, (8, 5), {"layer_norm_eps": -1.0}, ValueError,
     "layer_norm_eps must be a finite number > 0, got -1.0"),
    # models.modern
    (modern.ModernLM, ({"vocab_size": 11},), {}, TypeError, "config must be a ModernConfig, got dict"),
    (modern.ModernLM, (None,), {}, TypeError, "config must be a ModernConfig, got NoneType"),
    (modern.ModernLM, (configs.TINY_GPT_CONFIG,), {}, TypeError, "config must be a ModernConfig, got GPTConfig"),
    # models.ngram
    (ngram.CountLM, ([0.1, 0.2],), {}, TypeError, "log_probs must be a torch.Tensor (vocab,) or (vocab, vocab), got list"),
    (ngram.CountLM, (torch.zeros(2, 2, 2),), {}, ValueError, "log_probs must be (vocab,) or (vocab, vocab), got (2, 2, 2)"),
    (ngram.CountLM, (np.zeros(3),), {}, TypeError, "log_probs must be a torch.Tensor"),
    (ngram.unigram_lm, ([0, 1], 3), {}, TypeError, "ids must be a torch.long tensor of token ids (n,), got list"),
    (ngram.unigram_lm, (torch.tensor([0, 5]), 3), {}, ValueError, "ids must lie in [0, vocab_size=3), got ids from 0 to 5"),
    (ngram.unigram_lm, (torch.tensor([0, 1]), 0), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (ngram.bigram_lm, (torch.tensor([0, 1]), 3), {"beta": 0.0}, ValueError, "beta must be a finite number > 0, got 0.0"),
    (ngram.bigram_lm, (torch.tensor([0, 1]), 3), {"beta": "1"}, TypeError, "beta must be a positive number, got str"),
    (ngram.bigram_lm, (torch.tensor([[0, 1]]), 3), {}, ValueError, "ids must have shape (n,)"),
    (COUNT_LM.nll, (torch.tensor([[0, 1]]),), {}, ValueError, "ids must have shape (n,)"),
    (COUNT_LM.nll, (torch.tensor([0, 7]),), {}, ValueError, "ids must lie in [0, vocab_size=3), got ids from 0 to 7"),
    (COUNT_LM.nll, (torch.tensor([0]),), {}, ValueError, "ids must be a 1-D stream of at least 2 tokens, got (1,)"),
    (BIGRAM_LM.next_token_log_probs, (), {}, ValueError, "a bigram model needs the previous token"),
    (BIGRAM_LM.next_token_log_probs, (7,), {}, ValueError, "previous must be in [0, vocab_size=3), got 7"),
    (BIGRAM_LM.next_token_log_probs, (1.0,), {}, TypeError, "previous must be an integer, got float"),
    # models.seq2seq
    (seq2seq.AdditiveAttention, (0, 4, 4), {}, ValueError, "d_query must be >= 1, got 0"),
    (seq2seq.AdditiveAttention, (4, "4", 4), {}, TypeError, "d_key must be an integer, got str"),
    (seq2seq.AdditiveAttention, (4, 4, -1), {}, ValueError, "d_att must be >= 1, got -1"),
    (seq2seq.Seq2SeqGRU, (0, 10), {}, ValueError, "src_vocab must be >= 1, got 0"),
    (seq2seq.Seq2SeqGRU, (10, 10), {"pad_id": 10}, ValueError, "pad_id must be in [0, src_vocab=10), got 10"),
    (seq2seq.Seq2SeqGRU, (10, 10), {"hidden": 0}, ValueError, "hidden must be >= 1, got 0"),
    (seq2seq.AttentionSeq2SeqGRU, (10, 0), {}, ValueError, "tgt_vocab must be >= 1, got 0"),
    (seq2seq.AttentionSeq2SeqGRU, (10, 10), {"att": 0}, ValueError, "att must be >= 1, got 0"),
    (seq2seq.AttentionSeq2SeqGRU, (10, 10), {"emb": 2.5}, TypeError, "emb must be an integer, got float"),
    # models.transformer
    (transformer.TransformerTranslator, (10, 10), {"d_model": 6, "num_heads": 4}, ValueError,
     "d_model=6 is not divisible by num_heads=4"),
    (transformer.TransformerTranslator, (0, 10), {}, ValueError, "src_vocab must be >= 1, got 0"),
    (transformer.TransformerTranslator, (10, 10), {"pad_id": 10}, ValueError,
     "pad_id must be in [0, src_vocab=10), got 10"),
    (transformer.TransformerTranslator, (10, 10), {"context_length": 0}, ValueError, "context_length must be >= 1, got 0"),
    # data.docstrings
    (ds.load_topic_sentences, ("dev",), {}, ValueError,
     "split must be one of ('train', 'validation', 'test'), got 'dev'"),
    (ds.load_topic_sentences, (3,), {}, ValueError, "split must be one of"),
    (ds.load_topic_sentences, (None,), {}, ValueError, "got None"),
    (ds.load_topic_sentences, ("train",), {"per_topic": 0}, ValueError, "per_topic must be >= 1, got 0"),
    (ds.load_topic_sentences, ("train",), {"per_topic": "64"}, TypeError,
     "per_topic must be an integer, got str"),
    (ds.load_topic_sentences, ("test",), {"per_topic": 10_000}, ValueError,
     "per_topic must be at most 220 for the test split (its topic 'numbers' has 220 sentences)"),
    (ds.topic_documents, ("Train",), {}, ValueError, "split must be one of"),
    (ds.topic_documents, (["train"],), {}, ValueError, "got ['train']"),
    (ds.topic_documents, ("",), {}, ValueError, "got ''"),
    (ds.sentence_pairs, ("dev",), {}, ValueError, "split must be one of"),
    (ds.sentence_pairs, ("train",), {"seed": -1}, ValueError, "seed must be >= 0, got -1"),
    (ds.sentence_pairs, ("train",), {"seed": "a"}, TypeError, "seed must be an integer, got str"),
    # data.language_modeling
    (lm.lm_tokenizer, (100,), {}, ValueError, "vocab_size must be >= 257 (1 special token + 256 bytes)"),
    (lm.lm_tokenizer, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (lm.lm_tokenizer, (512.0,), {}, TypeError, "vocab_size must be an integer, got float"),
    (lm.lm_corpus, (100,), {}, ValueError, "vocab_size must be >= 257"),
    (lm.lm_corpus, (-5,), {}, ValueError, "vocab_size must be >= 1, got -5"),
    (lm.lm_corpus, ("1024",), {}, TypeError, "vocab_size must be an integer, got str"),
    (lm.encode_documents, (LM_TOK, "one document"), {}, TypeError,
     "documents must be a list of tokens, got the str 'one document'"),
    (lm.encode_documents, (PT_TOK, ["a"]), {}, ValueError,
     "tokenizer must know <|endoftext|> (a BPETokenizer from lm_tokenizer()), got BPETokenizer"),
    (lm.encode_documents, (None, ["a"]), {}, ValueError, "tokenizer must know <|endoftext|>"),
    (lm.random_windows, (torch.arange(10), 0, 3), {}, ValueError, "batch_size must be >= 1, got 0"),
    (lm.random_windows, (torch.arange(3), 2, 3), {}, ValueError,
     "ids must be 1-D with at least length + 1 = 4 tokens"),
    (lm.random_windows, ([1, 2, 3, 4], 1, 2), {}, TypeError,
     "ids must be a torch.long tensor of token ids (n,), got list"),
    (lm.random_windows, (torch.arange(10)[None], 1, 2), {}, ValueError, "ids must have shape (n,)"),
    (lm.bits_per_char, (1.0, 10, 0), {}, ValueError, "n_chars must be >= 1, got 0"),
    (lm.bits_per_char, (-1.0, 10, 30), {}, ValueError, "nats_per_token must be a finite loss >= 0, got -1.0"),
    (lm.bits_per_char, (float("nan"), 10, 30), {}, ValueError, "nats_per_token must be a finite loss >= 0"),
    (lm.bits_per_char, (torch.tensor(1.0), 10, 30), {}, TypeError,
     "nats_per_token must be a number, got Tensor"),
    (lm.evaluate_lm, (GPT_S, torch.arange(5)), {"block": 0}, ValueError, "block must be >= 1, got 0"),
    (lm.evaluate_lm, (None, torch.arange(5)), {}, TypeError, "model must be a torch.nn.Module"),
    (lm.evaluate_lm, (LIN, torch.arange(5)), {}, TypeError,
     "model must have an integer context_length attribute (its context length), got Linear"),
    (lm.evaluate_lm, (GPT_S, torch.tensor([1])), {}, ValueError,
     "ids must hold at least 2 tokens (one to predict), got 1"),
    (lm.evaluate_lm, (GPT_S, IDS), {}, ValueError, "ids must have shape (n,)"),
    (lm.known_word_fraction, ("1 2 3", "the cat"), {}, ValueError, "texts contain no words"),
    (lm.known_word_fraction, (3, "the cat"), {}, TypeError, "texts must be a list of tokens, got int"),
    (lm.known_word_fraction, (["a cat", None], "the cat"), {}, TypeError, "texts[1] must be a str, got NoneType"),
    (lm.known_word_fraction, ("a cat", None), {}, TypeError, "reference must be a list of tokens, got NoneType"),
    # data.pretraining
    (pt.split_documents, ("abc",), {}, TypeError, "documents must be a list of tokens, got the str 'abc'"),
    (pt.split_documents, (DOCS,), {"every": 1}, ValueError, "every must be >= 2, got 1"),
    (pt.split_documents, (DOCS,), {"every": 0}, ValueError, "every must be >= 1, got 0"),
    (pt.pretraining_tokenizer, (0,), {}, ValueError, "vocab_size must be >= 1, got 0"),
    (pt.pretraining_tokenizer, (2.5,), {}, TypeError, "vocab_size must be an integer, got float"),
    (pt.pretraining_tokenizer, (3,), {}, ValueError, "vocab_size must be >= 83 (5 special tokens + the corpus's characters), got 3"),
    (pt.make_nsp_pair, (DOCS, 5, 0, RNG), {}, ValueError, "doc must be in [0, 2), got 5"),
    (pt.make_nsp_pair, (DOCS, 0, 1, RNG), {}, ValueError,
     "index must be in [0, 1) so that a next sentence exists, got 1"),
    (pt.make_nsp_pair, (DOCS, 0, 0, None), {}, TypeError, "rng must be a Generator, got NoneType"),
    (pt.make_nsp_pair, (DOCS[:1], 0, 0, RNG), {}, ValueError, "documents must hold at least 2 documents"),
    (pt.make_nsp_pair, (DOCS, 0.0, 0, RNG), {}, TypeError, "doc must be an integer, got float"),
    (pt.PretrainingData, (PT_TOK, DOCS), {"seq_len": 4}, ValueError,
     "seq_len must be >= 5 (3 special tokens + 2 words), got 4"),
    (pt.PretrainingData, (PT_TOK, DOCS), {"mask_prob": 1.5}, ValueError,
     "mask_prob must be a probability in [0, 1], got 1.5"),
    (pt.PretrainingData, (PT_TOK, DOCS[:1]), {}, ValueError, "documents must hold >= 2 documents"),
    (pt.PretrainingData, (LM_TOK, DOCS), {}, ValueError,
     "tokenizer must know BERT's special tokens (pretraining_tokenizer()); BPETokenizer lacks"),
    (PT_DATA.example, (RNG,), {"position": 9}, ValueError, "position must be in [0, 2), got 9"),
    (PT_DATA.example, (None,), {}, TypeError, "rng must be a Generator, got NoneType"),
    (PT_DATA.example, (RNG,), {"position": -1}, ValueError, "position must be >= 0, got -1"),
    (PT_DATA.batch, (0, RNG), {}, ValueError, "batch_size must be >= 1, got 0"),
    (PT_DATA.batch, (2, 0), {}, TypeError, "rng must be a Generator, got int"),
    (PT_DATA.batch, (2.0, RNG), {}, TypeError, "batch_size must be an integer, got float"),
    # data.translation.batches
    (tb.Vocab, ("abc",), {}, TypeError, "tokens must be an iterable of str tokens, got the str 'abc'"),
    (tb.Vocab, ([1, 2],), {}, TypeError, "each token must be a str, got int"),
    (tb.Vocab, (None,), {}, TypeError, "tokens must be an iterable of str tokens, got NoneType"),
    (tb.Vocab.build, ("a b c",), {}, TypeError, "sentences must be a list of str, got the str 'a b c'"),
    (tb.Vocab.build, (["a b"],), {"min_freq": 0}, ValueError, "min_freq must be >= 1, got 0"),
    (tb.Vocab.build, ([3],), {}, TypeError, "sentence must be a str, got int"),
    (VOCAB.encode, (3,), {}, TypeError, "sentence must be a list of tokens, got int"),
    (VOCAB.encode, ([1, 2],), {}, TypeError, "each token of sentence must be a str, got int"),
    (VOCAB.encode, (None,), {}, TypeError, "sentence must be a list of tokens, got NoneType"),
    (VOCAB.decode, ("4 5",), {}, TypeError, "ids must be a list of tokens, got the str '4 5'"),
    (VOCAB.decode, ([4.5],), {}, TypeError, "ids must be integer token ids, got float 4.5"),
    (VOCAB.decode, (4,), {}, TypeError, "ids must be a list of tokens, got int"),
    (tb.batch_iterator, (PAIRS, VOCAB, VOCAB, 3), {}, ValueError, "need at least batch_size=3 pairs, got 2"),
    (tb.batch_iterator, (PAIRS, VOCAB, VOCAB, 0), {}, ValueError, "batch_size must be >= 1, got 0"),
    (tb.batch_iterator, (PAIRS, None, VOCAB, 1), {}, TypeError, "src_vocab must be a Vocab, got NoneType"),
    (tb.batch_iterator, (PAIRS, VOCAB, VOCAB, 1), {"bucket": 0}, ValueError, "bucket must be >= 1, got 0"),
    # data.translation.grammar
    (tg.NP, ("unicorn",), {}, ValueError, "noun must be one of ['armchair',"),
    (tg.NP, ("cat",), {"adjs": "red"}, TypeError, "adjs must be a tuple, got str 'red'"),
    (tg.NP, ("cat",), {"adjs": ("purple",)}, ValueError, "adjs[i] must be one of"),
    (tg.NP, ("cat",), {"rel": "that sat"}, TypeError, "rel must be a VP, got str"),
    (tg.VP, ("sat", tg.NP("mat")), {}, ValueError,
     "prep must be one of ['in', 'on'] for the place verb 'sat', got None"),
    (tg.VP, ("ate", tg.NP("mat")), {}, ValueError, "verb must be one of"),
    (tg.VP, ("saw", "the dog"), {}, TypeError, "obj must be a NP, got str 'the dog'"),
    (tg.Clause, ("cat", VP_), {}, TypeError, "subj must be a NP, got str 'cat'"),
    (tg.Clause, (NP_, NP_), {}, TypeError, "vp must be a VP, got NP"),
    (tg.Clause, (NP_, None), {}, TypeError, "vp must be a VP, got NoneType"),
    (tg.Sentence, ((),), {}, ValueError, "clauses is empty; a sentence needs at least one Clause"),
    (tg.Sentence, ([CLAUSE],), {}, TypeError, "clauses must be a tuple, got list"),
    (tg.Sentence, ((CLAUSE, CLAUSE),), {}, ValueError,
     "connector must be one of ['and', 'because', 'but'], got None"),
    (tg.Sentence, ((CLAUSE, "and it slept"), "and"), {}, TypeError, "clauses[i] must be a Clause, got str"),
    (tg.realize, (CLAUSE, "de"), {}, ValueError, "lang must be 'en', 'fr' or 'ru', got 'de'"),
    (tg.realize, ("the cat saw the dog", "fr"), {}, TypeError, "sentence must be a Sentence or Clause, got str"),
    (tg.realize, (NP_, "en"), {}, TypeError, "sentence must be a Sentence or Clause, got NP"),
    # data.translation.sampling
    (ts.sample_sentence, (None,), {}, TypeError, "rng must be a Random, got NoneType"),
    (ts.sample_sentence, (RNG,), {}, TypeError, "rng must be a Random, got Generator"),
    (ts.sample_sentence, (0,), {}, TypeError, "rng must be a Random, got int"),
    (ts.make_translation_data, ("de",), {"n_train": 10, "n_test": 2}, ValueError,
     "target must be one of ('fr', 'ru'), got 'de'"),
    (ts.make_translation_data, (), {"n_train": 0}, ValueError, "n_train must be >= 1, got 0"),
    (ts.make_translation_data, (), {"n_test": -1}, ValueError, "n_test must be >= 1, got -1"),
    (ts.make_translation_data, (), {"n_train": 10, "n_test": 2, "max_words": 0}, ValueError,
     "max_words must be >= 1, got 0"),
    # pretrained (every check runs before MiniLM is loaded)
    (pretrained.load_topic_classifier, ("few",), {}, ValueError,
     "labels must be one of ['all', 'budget'], got 'few'"),
    (pretrained.load_topic_classifier, (64,), {}, ValueError,
     "labels must be one of ['all', 'budget'], got 64"),
    (pretrained.load_topic_classifier, (None,), {}, ValueError, "got None"),
    (pretrained.encode, (3,), {}, TypeError, "text must be a str, got int"),
    (pretrained.encode, (None,), {}, TypeError, "text must be a str, got NoneType"),
    (pretrained.encode, (["a", "b"],), {}, TypeError, "text must be a str, got list"),
    (pretrained.word_vectors, (3, "cat"), {}, TypeError, "sentence must be a str, got int"),
    (pretrained.word_vectors, ("the cat", ["cat"]), {}, TypeError, "word must be a str, got list"),
    (pretrained.word_vectors, ("the cat", "cat"), {"occurrence": -1}, ValueError,
     "occurrence must be >= 0, got -1"),
    (pretrained.cosine_by_layer, (None, "the cat", "cat"), {}, TypeError, "sentence_a must be a str, got NoneType"),
    (pretrained.cosine_by_layer, ("the cat", 3, "cat"), {}, TypeError, "sentence_b must be a str, got int"),
    (pretrained.cosine_by_layer, ("the cat", "a cat", 3), {}, TypeError, "word must be a str, got int"),
    (pretrained.attention_maps, (3,), {}, TypeError, "sentence must be a str, got int"),
    (pretrained.attention_maps, (None,), {}, TypeError, "sentence must be a str, got NoneType"),
    (pretrained.attention_maps, (["the", "cat"],), {}, TypeError, "sentence must be a str, got list"),
    (pretrained.fill_mask, ("no mask here",), {}, ValueError, "text must contain exactly one [MASK], got 0"),
    (pretrained.fill_mask, ("a [MASK] b",), {"top_k": 0}, ValueError, "top_k must be >= 1, got 0"),
    (pretrained.fill_mask, (3,), {}, TypeError, "text must be a str, got int"),
    # issue 49: MiniLM has 512 positions and 30,522 tokens (these rows load it)
    (pretrained.encode, (LONG_TEXT,), {}, ValueError,
     "text is 2,002 WordPiece tokens long with [CLS] and [SEP]; MiniLM reads at most 512"),
    (pretrained.word_vectors, (LONG_TEXT, "word"), {}, ValueError, "sentence is 2,002 WordPiece tokens long"),
    (pretrained.attention_maps, (LONG_TEXT,), {}, ValueError, "sentence is 2,002 WordPiece tokens long"),
    (pretrained.fill_mask, ("[MASK] " + LONG_TEXT,), {}, ValueError, "text is 2,003 WordPiece tokens long"),
    (pretrained.fill_mask, ("a [MASK] b",), {"top_k": 10**6}, ValueError,
     "top_k must be at most the vocabulary size 30,522 (every token ranked), got 1,000,000"),
    # SmolLM2 from its GGUF file (a bad file: tests/test_gguf.py; each check runs before loading)
    (pretrained.load_smollm2, (3,), {}, TypeError, "path must be a file path (str or Path), got int"),
    (pretrained.load_smollm2, ("/no/such/file.gguf",), {}, FileNotFoundError,
     "path: no GGUF file at /no/such/file.gguf"),
    (pretrained.load_smollm2, (), {"cache": "yes"}, TypeError, "cache must be"),
    (interop.read_gguf, (None,), {}, TypeError, "path must be a file path (str or Path), got NoneType"),
    (interop.read_gguf, (__file__,), {}, ValueError,
     "test_bad_inputs_torch.py: not a GGUF file: it starts"),
    (interop.read_gguf, (b"x.gguf",), {}, TypeError, "path must be a file path (str or Path), got bytes"),
    (interop.from_gguf, (1.5,), {}, TypeError, "path must be a file path (str or Path), got float"),
    (interop.from_gguf, (__file__,), {}, ValueError, "not a GGUF file"),
    (interop.from_gguf, ("/no/such/file.gguf",), {}, FileNotFoundError, "/no/such/file.gguf"),
    (SMOLLM2_FILE.raw, ("nope",), {}, ValueError, "has no tensor 'nope'"),
    (SMOLLM2_FILE.raw, (None,), {}, ValueError, "has no tensor None"),
    (SMOLLM2_FILE.raw, (0,), {}, ValueError, "has no tensor 0"),
    (SMOLLM2_FILE.tensor, ("blk.99.attn_q.weight",), {}, ValueError,
     "has no tensor 'blk.99.attn_q.weight'"),
    (SMOLLM2_FILE.tensor, ([],), {}, ValueError, "has no tensor []"),
    (SMOLLM2_FILE.tensor, ("",), {}, ValueError, "has no tensor ''"),
    # forward (and the other public methods) of the torch modules
    (MHA.forward, (T3,), {"cache": KVCache()}, TypeError, "cache must be a LayerKVCache or None, got KVCache"),
    # issue 49: a float64 input to a float32 module (torch says only "mat1 and mat2 must have the same dtype")
    (MHA.forward, (T3.double(),), {}, TypeError,
     "query has dtype torch.float64 but MultiHeadAttention's weights are torch.float32: convert one to the other (query.to(torch.float32) or model.to(torch.float64))"),
    (MHA.forward, (T3, T3.double(), T3.double()), {}, TypeError, "key has dtype torch.float64 but MultiHeadAttention's weights are torch.float32"),
    (FFN.forward, (T3.double(),), {}, TypeError, "x has dtype torch.float64 but FeedForward's weights are torch.float32"),
    (FFN_SWIGLU.forward, (T3.double(),), {}, TypeError, "x has dtype torch.float64 but SwiGLUFeedForward's weights"),
    (ENC_LAYER.forward, (T3.double(),), {}, TypeError, "x has dtype torch.float64 but EncoderLayer's weights"),
    (ENC.forward, (T3.half(),), {}, TypeError, "x has dtype torch.float16 but Encoder's weights are torch.float32"),
    (DEC_LAYER.forward, (T3, T3.double()), {}, TypeError, "memory has dtype torch.float64 but DecoderLayer's weights"),
    (DEC.forward, (T3.double(), T3), {}, TypeError, "x has dtype torch.float64 but Decoder's weights"),
    (MOE_S.forward, (T3.double(),), {}, TypeError, "x has dtype torch.float64 but MixtureOfExperts's weights"),
    (MLA_S.forward, (torch.ones(1, 3, 16, dtype=torch.float64),), {}, TypeError,
     "x has dtype torch.float64 but MultiHeadLatentAttention's weights"),
    (CLASSIFIER.forward, (T3.double(), M3), {}, TypeError, "hidden has dtype torch.float64 but BertClassifier's weights"),
    (MLM_HEAD.forward, (torch.ones(1, 8, dtype=torch.float64), torch.ones(20, 8)), {}, TypeError,
     "hidden has dtype torch.float64 but MlmHead's weights"),
    (LORA_L.forward, (torch.ones(2, 4, dtype=torch.float64),), {}, TypeError, "x has dtype torch.float64 but LoRALinear's weights"),
    (MHA.forward, (T3, torch.ones(1, 3, 8)), {"causal": True}, ValueError, "causal=True is for self-attention"),
    (MHA.forward, (T3, torch.ones(1, 0, 8), torch.ones(1, 0, 8)), {}, ValueError,
     "query and key need at least one position each"),
    (MHA.forward, (T3,), {"cache": _layer_cache(1, 2, 8)}, ValueError, "this call needs batch=1, kv_heads=2, d_head=4"),
    (MHA.forward, (T3,), {"cache": LayerKVCache(), "mask": M3}, ValueError, "mask and cache together"),
    (GQA.forward, (T3,), {"cache": _layer_cache(2, 2, 2)}, ValueError, "this call needs batch=1"),
    (GQA.forward, (T3, torch.ones(2, 3, 8)), {}, ValueError, "query (batch, n_q, d), key and value"),
    (FFN_SWIGLU.forward, (torch.ones(1, 3, 4),), {}, ValueError, "x must end with d_model=8, got (1, 3, 4)"),
    (FFN_SWIGLU.forward, (np.ones((1, 3, 8)),), {}, TypeError, "x must be a torch.Tensor (..., d_model=8)"),
    (FFN_SWIGLU.forward, (torch.ones(1, 3, 8, dtype=torch.long),), {}, TypeError, "x must be a floating tensor"),
    (NORM.forward, (torch.ones(1, 3, 4),), {}, ValueError, "x must end with d_model=8, got (1, 3, 4)"),
    (NORM.forward, ([1.0] * 8,), {}, TypeError, "x must be a torch.Tensor (..., d_model=8), got list"),
    (NORM.forward, (torch.ones(8, dtype=torch.long),), {}, TypeError, "x must be a floating tensor"),
    (GQA.forward, (torch.ones(1, 3, 6),), {}, ValueError, "query must have shape (batch, n, d_model=8)"),
    (MHA.forward, (torch.ones(3, 8), T3, T3), {}, ValueError, "query must have shape (batch, n, d_model=8)"),
    (MHA.forward, (T3, np.ones((1, 3, 8)), T3), {}, TypeError, "key must be a torch.Tensor, got ndarray"),
    (MHA.forward, (T3, T3, T3, torch.ones(3, 3)), {}, TypeError, "mask must be boolean"),
    (MHA.forward, (T3, torch.ones(2, 3, 8), torch.ones(2, 3, 8)), {}, ValueError, "must share the batch size"),
    (ENC_LAYER.forward, (torch.ones(1, 3, 4),), {}, ValueError, "x must have shape (batch, n, d_model=8), got (1, 3, 4)"),
    (ENC_LAYER.forward, (T3, torch.ones(3, 4, dtype=torch.bool)), {}, ValueError, "does not fit"),
    (ENC_LAYER.forward, (T3, torch.zeros(3, 3, dtype=torch.bool)), {}, ValueError, "mask hides every key"),
    (DEC_LAYER.forward, (T3, torch.ones(1, 3, 4)), {}, ValueError, "memory must have shape (batch, n, d_model=8)"),
    (DEC_LAYER.forward, (T3, torch.ones(2, 3, 8)), {}, ValueError, "batch"),
    (DEC_LAYER.forward, (T3, T3, None, torch.ones(1, 1, 3)), {}, TypeError, "memory_mask must be boolean"),
    (ENC.forward, (np.ones((1, 3, 8)),), {}, TypeError, "x must be a torch.Tensor, got ndarray"),
    (ENC.forward, (torch.ones(1, 3, 5),), {}, ValueError, "x must have shape (batch, n, d_model=8), got (1, 3, 5)"),
    (ENC.forward, (T3, torch.ones(1, 1, 3)), {}, TypeError, "mask must be boolean"),
    (DEC.forward, (T3, np.ones((1, 3, 8))), {}, TypeError, "memory must be a torch.Tensor, got ndarray"),
    (DEC.forward, (torch.ones(3, 8), T3), {}, ValueError, "x must have shape (batch, n, d_model=8), got (3, 8)"),
    (DEC.forward, (T3, T3, torch.ones(3, 3)), {}, TypeError, "self_mask must be boolean"),
    (FFN.forward, (torch.ones(1, 3, 4),), {}, ValueError, "x must end with d_model=8, got (1, 3, 4)"),
    (FFN.forward, (np.ones((1, 3, 8)),), {}, TypeError, "x must be a torch.Tensor (..., d_model=8), got ndarray"),
    (FFN.forward, (torch.ones(1, 3, 8, dtype=torch.long),), {}, TypeError, "x must be a floating tensor, got torch.int64"),
    (GPT_S.forward, (IDS.float(),), {}, TypeError, "ids must be a torch.long tensor of token ids (batch, n), got torch.float32 tensor"),
    (GPT_S.forward, (torch.tensor([[0, 11]]),), {}, ValueError, "ids must lie in [0, vocab_size=11), got ids from 0 to 11"),
    (GPT_S.forward, (IDS, []), {}, TypeError, "cache must be a KVCache or None, got list"),
    (GPT_S.forward, (torch.ones(1, 9, dtype=torch.long),), {}, ValueError, "do not fit the context context_length=8"),
    (MODERN_S.forward, (IDS[0],), {}, ValueError, "ids must have shape (batch, n) with no empty axis, got (3,)"),
    (MODERN_S.forward, (torch.tensor([[-1, 2]]),), {}, ValueError, "ids must lie in [0, vocab_size=11), got ids from -1 to 2"),
    (MODERN_S.forward, (IDS, LayerKVCache()), {}, TypeError, "cache must be a KVCache or None, got LayerKVCache"),
    (MODERN_S.forward, (IDS, _filled_cache(MODERN_2)), {}, ValueError, "cache holds 2 layers but the model has 1"),
    (MODERN_2.forward, (IDS, _filled_cache(MODERN_2, batch=2)), {}, ValueError, "this call needs batch=1"),
    (MODERN_2.forward, (IDS, _filled_cache(MODERN_S)), {}, ValueError, "cache holds 1 layers but the model has 2"),
    (GPT_S.forward, (IDS, _filled_cache(MODERN_S)), {}, ValueError, "this call needs batch=1, kv_heads=2, d_head=4"),
    (BERT_S.forward, (torch.ones(1, 9, dtype=torch.long),), {}, ValueError, "context_length=8 position embeddings"),
    (BERT_S.forward, (IDS, torch.zeros(1, 2, dtype=torch.long)), {}, ValueError, "segment_ids must have the shape of input_ids (1, 3)"),
    (BERT_S.forward, (IDS, torch.full((1, 3), 2)), {}, ValueError, "segment_ids must lie in [0, type_vocab_size=2), got ids from 2 to 2"),
    (BERT_S.forward, (torch.tensor([[1, 20]]),), {}, ValueError, "input_ids must lie in [0, vocab_size=20)"),
    (BERT_S.forward, (IDS, None, torch.ones(1, 3)), {}, TypeError, "attention_mask must be a boolean torch.Tensor (batch, n)"),
    (BERT_S.forward, (IDS, None, torch.zeros(1, 3, dtype=torch.bool)), {}, ValueError, "some sequence has no real token"),
    (BERT_S.forward, (IDS, None, torch.ones(1, 2, dtype=torch.bool)), {}, ValueError,
     "attention_mask must have the shape of input_ids (1, 3), got (1, 2)"),
    (BERT_S.mlm_logits, (torch.ones(1, 3, 4),), {}, ValueError, "hidden must end with d_model=8, got (1, 3, 4)"),
    (BERT_S.mlm_logits, (np.ones((1, 3, 8)),), {}, TypeError, "hidden must be a torch.Tensor (..., d_model=8), got ndarray"),
    (BERT_S.mlm_logits, (torch.ones(1, 3, 8, dtype=torch.long),), {}, TypeError, "hidden must be a floating tensor"),
    (BERT_S.nsp_logits, (torch.ones(1, 8),), {}, ValueError, "hidden must have shape (batch, n, d_model=8), got (1, 8)"),
    (BERT_S.nsp_logits, (np.ones((1, 3, 8)),), {}, TypeError, "hidden must be a torch.Tensor, got ndarray"),
    (BERT_S.nsp_logits, (torch.ones(1, 3, 5),), {}, ValueError, "hidden must have shape (batch, n, d_model=8), got (1, 3, 5)"),
    (BERT_ENC.forward, (IDS[0],), {}, ValueError, "input_ids must have shape (batch, n)"),
    (BERT_ENC.forward, (torch.tensor([[1, 25]]),), {}, ValueError, "input_ids must lie in [0, vocab_size=20)"),
    (BERT_ENC.forward, (IDS, torch.full((1, 3), 2)), {}, ValueError, "token_type_ids must lie in [0, type_vocab_size=2), got ids from 2 to 2"),
    (BERT_ENC.forward, (IDS, torch.tensor([[0, -1, 0]])), {}, ValueError, "token_type_ids must lie in [0, type_vocab_size=2), got ids from -1 to 0"),
    (BERT_ENC.forward, (IDS, torch.zeros(1, 3)), {}, TypeError, "token_type_ids must be a torch.long tensor of token ids (batch, n), got torch.float32"),
    (BERT_ENC.forward, (IDS, None, torch.ones(1, 2)), {}, ValueError, "attention_mask must have the shape of input_ids (1, 3), got (1, 2)"),
    (BERT_ENC.forward, (IDS, None, torch.zeros(1, 3)), {}, ValueError, "attention_mask hides every key from some query"),
    (BERT_ENC.embed, (IDS[0],), {}, ValueError, "input_ids must have shape (batch, n)"),
    (BERT_ENC.embed, (IDS.float(),), {}, TypeError, "input_ids must be a torch.long tensor of token ids"),
    (BERT_ENC.embed, (torch.ones(1, 9, dtype=torch.long),), {}, ValueError, "more than max_position_embeddings=8"),
    (MLM_HEAD.forward, (torch.ones(1, 4), torch.ones(20, 8)), {}, ValueError, "hidden must end with hidden_size=8, got (1, 4)"),
    (MLM_HEAD.forward, (torch.ones(1, 8), torch.ones(8, 20)), {}, ValueError, "word_embeddings must be (vocab_size, hidden_size) = (20, 8), got (8, 20)"),
    (MLM_HEAD.forward, (np.ones((1, 8)), torch.ones(20, 8)), {}, TypeError, "hidden must be a torch.Tensor (..., hidden_size=8), got ndarray"),
    (CLASSIFIER.forward, (torch.ones(1, 3, 4), M3), {}, ValueError, "hidden must have shape (batch, n, hidden_size=8), got (1, 3, 4)"),
    (CLASSIFIER.forward, (T3, torch.ones(1, 4)), {}, ValueError, "attention_mask must have shape (batch=1, n=3), got (1, 4)"),
    (CLASSIFIER.forward, (np.ones((1, 3, 8)), M3), {}, TypeError, "hidden must be a torch.Tensor, got ndarray"),
    (SPAN.forward, (torch.ones(1, 3, 4),), {}, ValueError, "hidden must have shape (batch, n, hidden_size=8), got (1, 3, 4)"),
    (SPAN.forward, (np.ones((1, 3, 8)),), {}, TypeError, "hidden must be a torch.Tensor, got ndarray"),
    (SPAN.forward, (torch.ones(3, 8),), {}, ValueError, "hidden must have shape (batch, n, hidden_size=8), got (3, 8)"),
    (ADD_ATT.forward, (torch.ones(1, 4), torch.ones(1, 3, 6)), {}, ValueError, "query must have shape (batch, d_query=8), got (1, 4)"),
    (ADD_ATT.forward, (torch.ones(1, 8), torch.ones(1, 3, 4)), {}, ValueError, "keys must have shape (batch, n, d_key=6), got (1, 3, 4)"),
    (ADD_ATT.forward, (torch.ones(1, 8), torch.ones(1, 3, 6), torch.ones(1, 3)), {}, TypeError, "mask must be boolean"),
    (ADD_ATT.forward, (torch.ones(1, 8), torch.ones(1, 3, 6), torch.zeros(1, 3, dtype=torch.bool)), {}, ValueError, "mask hides every key"),
    (ADD_ATT.project_keys, (torch.ones(1, 3, 4),), {}, ValueError, "keys must have shape (batch, n, d_key=6), got (1, 3, 4)"),
    (ADD_ATT.project_keys, (np.ones((1, 3, 6)),), {}, TypeError, "keys must be a torch.Tensor"),
    (ADD_ATT.project_keys, (torch.ones(3, 6),), {}, ValueError, "keys must have shape (batch, n, d_key=6), got (3, 6)"),
    (GRU.forward, (SRC, SRC_MASK, torch.tensor([[1, 12]])), {}, ValueError, "tgt_in must lie in [0, vocab_size=10)"),
    (GRU.encode, (SRC, SRC_MASK[:, :2]), {}, ValueError, "src_mask must have the shape of src (1, 3), got (1, 2)"),
    (GRU.encode, (torch.tensor([[0, 4]]), torch.tensor([[False, True]])), {}, ValueError, "src_mask must mark at least the first token"),
    (GRU.decode, (torch.ones(1, 16), SRC_MASK, IDS.float()), {}, TypeError, "tgt_in must be a torch.long tensor of token ids"),
    (ATT_GRU.forward, (SRC.float(), SRC_MASK, IDS), {}, TypeError, "src must be a torch.long tensor of token ids (batch, length)"),
    (ATT_GRU.encode, (torch.tensor([[4, 99]]), SRC_MASK[:, :2]), {}, ValueError, "src must lie in [0, vocab_size=10), got ids from 4 to 99"),
    (ATT_GRU.decode, (ATT_GRU.encode(SRC, SRC_MASK), SRC_MASK, IDS[0]), {}, ValueError, "tgt_in must have shape (batch, length)"),
    (TRANSLATOR.forward, (SRC, SRC_MASK.long(), IDS), {}, TypeError, "src_mask must be a boolean tensor"),
    (TRANSLATOR.encode, (SRC, SRC_MASK, ), {"extra": 1}, TypeError, "extra"),
    (TRANSLATOR.encode, (torch.ones(1, 20, dtype=torch.long), torch.ones(1, 20, dtype=torch.bool)), {}, ValueError,
     "sequence of length 20 is longer than context_length=16"),
    (TRANSLATOR.decode, (torch.ones(1, 3, 8), SRC_MASK, torch.tensor([[1, 10]])), {}, ValueError, "tgt_in must lie in [0, vocab_size=10)"),
    (TRANSLATOR.decode, (torch.ones(1, 3, 4), SRC_MASK, IDS), {}, ValueError, "memory must have shape (batch, n, d_model=8), got (1, 3, 4)"),
    (GRU.forward, (SRC, SRC_MASK[:, :1], IDS), {}, ValueError, "src_mask must have the shape of src (1, 3)"),
    (GRU.forward, ([[4, 5]], SRC_MASK, IDS), {}, TypeError, "src must be a torch.long tensor of token ids (batch, length), got list"),
    (GRU.encode, (SRC[0], SRC_MASK), {}, ValueError, "src must have shape (batch, length)"),
    (GRU.decode, (torch.ones(1, 16), SRC_MASK, IDS[0]), {}, ValueError, "tgt_in must have shape (batch, length)"),
    (GRU.decode, (torch.ones(1, 16), SRC_MASK, torch.tensor([[1, 10]])), {}, ValueError,
     "tgt_in must lie in [0, vocab_size=10), got ids from 1 to 10"),
    (ATT_GRU.forward, (SRC, SRC_MASK.long(), IDS), {}, TypeError, "src_mask must be a boolean tensor"),
    (ATT_GRU.forward, (SRC, torch.tensor([[True, False, True]]), IDS), {}, ValueError,
     "src_mask row 0 has a hole ([1, 0, 1])"),
    (ATT_GRU.forward, (SRC, SRC_MASK, IDS.float()), {}, TypeError, "tgt_in must be a torch.long tensor of token ids"),
    (ATT_GRU.encode, (SRC, None), {}, TypeError, "src_mask must be a boolean tensor"),
    (ATT_GRU.encode, (np.array([[4, 5]]), SRC_MASK), {}, TypeError, "src must be a torch.long tensor of token ids"),
    (ATT_GRU.decode, (ATT_GRU.encode(SRC, SRC_MASK), SRC_MASK, torch.tensor([[3, 11]])), {}, ValueError,
     "tgt_in must lie in [0, vocab_size=10)"),
    (ATT_GRU.decode, (ATT_GRU.encode(SRC, SRC_MASK), SRC_MASK[:, :2], IDS), {}, ValueError,
     "mask must have shape (batch, n), got (1, 2)"),
    (TRANSLATOR.forward, (SRC, SRC_MASK, torch.tensor([[1, 10]])), {}, ValueError, "tgt_in must lie in [0, vocab_size=10)"),
    (TRANSLATOR.forward, (SRC, SRC_MASK[:, :2], IDS), {}, ValueError, "src_mask must have the shape of src (1, 3)"),
    (TRANSLATOR.encode, (SRC.float(), SRC_MASK), {}, TypeError, "src must be a torch.long tensor of token ids"),
    (TRANSLATOR.decode, (torch.ones(1, 3, 8), SRC_MASK, IDS.float()), {}, TypeError, "tgt_in must be a torch.long tensor"),
    # interop: copying weights in
    (interop.from_torch, (nn.Linear(4, 4),), {}, TypeError, "module must be a torch.nn.MultiheadAttention, "
     "TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder or TransformerDecoder, got Linear"),
    (interop.from_torch, (MHA,), {}, TypeError, "got MultiHeadAttention"),
    (interop.from_torch, (None,), {}, TypeError, "got NoneType"),
    (interop.from_torch, (ENC,), {}, TypeError, "got Encoder"),
    (interop.from_torch, (nn.MultiheadAttention(4, 2, kdim=3),), {}, ValueError, "kdim = vdim = embed_dim"),
    (interop.from_torch, (nn.MultiheadAttention(4, 2, add_bias_kv=True),), {}, ValueError, "add_bias_kv=False"),
    (interop.from_torch, (nn.TransformerEncoderLayer(4, 2, activation=nn.SiLU()),), {}, ValueError,
     "module.activation: only relu, gelu and tanh-approximated gelu can be copied"),
    (interop.from_torch, (nn.TransformerDecoderLayer(4, 2, activation=nn.SiLU()),), {}, ValueError,
     "module.activation"),
    (interop.from_hf, (GPT_S,), {}, TypeError, "model must be a transformers model of one of "
     "['BertModel', 'DeepseekV3ForCausalLM', 'GPT2LMHeadModel'"),
    (interop.from_hf, (GPT_S,), {}, TypeError, "'Qwen3MoeForCausalLM'], got GPT (not supported)"),
    (interop.from_hf, (None,), {}, TypeError, "got NoneType"),
    (interop.from_hf, ("bert-base-uncased",), {}, TypeError, "got str"),
    (interop.from_hf, (HF["roberta"],), {}, TypeError, "got RobertaModel"),
    (interop.from_hf, (HF["decoder"],), {}, ValueError, "config.is_decoder=True is not supported (BertEncoder: False)"),
    (interop.from_hf, (HF["relative"],), {}, ValueError, "config.position_embedding_type='relative_key' is not supported"),
    (interop.copy_weights, (nn.Linear(2, 2), {"w.weight": torch.ones(2, 2)}, {"": "w"}), {}, ValueError,
     "model: the weight 'w.bias' (for our 'bias') is missing"),
    (interop.copy_weights, (nn.Linear(2, 2), {"w.weight": torch.ones(3, 2), "w.bias": torch.ones(2)}, {"": "w"}),
     {}, ValueError, "model: 'w.weight' gives shape (3, 2), our 'weight' needs (2, 2)"),
    (interop.copy_weights, (nn.Linear(2, 2), {"w.weight": torch.ones(2, 2), "w.bias": torch.ones(3)},
                            {"": ("w", lambda t: t)}), {}, ValueError, "gives shape (3,)"),
    # every training entry point stops on a loss that cannot be computed
    (training.train, (BERT_S, [ONE_MASKED, NO_MASKED], bert.pretraining_loss), {"steps": 2, "progress": False},
     ValueError, "batch['mlm_labels'] has no position to predict"),
    # lecture 14: chat template, instruction data, LoRA, DPO, the assistant's training pieces
    (chat.render_chat, ([{"role": "system", "content": "x"}], CHAT_TOK), {}, ValueError,
     "messages[0]['role'] must be one of ['assistant', 'user'], got 'system'"),
    (chat.render_chat, ("hi", CHAT_TOK), {}, TypeError, "messages must be a list of"),
    (chat.render_chat, (USER_MSG, lm.lm_tokenizer(512)), {}, TypeError,
     "tokenizer must know the chat tokens"),
    (chat.render_chat, ([],  CHAT_TOK), {}, ValueError, "at least one message, got an empty list"),
    (chat.render_chat, (USER_MSG, CHAT_TOK), {"template": "llama"}, ValueError,
     "template must be one of ['chatml', 'course'], got 'llama'"),
    (chat.render_chat, (USER_MSG, CHAT_TOK), {"template": "chatml"}, TypeError,
     "tokenizer must know ChatML's <|im_start|> and <|im_end|>"),
    (chat.render_chat, ([{"role": "tool", "content": "x"}], CHAT_TOK), {"template": "chatml"},
     ValueError, "messages[0]['role'] must be one of ['assistant', 'system', 'user'], got 'tool'"),
    (ins.solve, ("upper", ["a", "b", "c"]), {}, ValueError, "family must be one of"),
    (ins.solve, ("first", ["a", "b"]), {}, ValueError, "words must hold 3 to 6 words, got 2"),
    (ins.solve, ("first", "a b c"), {}, TypeError, "words must be a list of tokens, got the str"),
    (ins.solve, ("first", ["a", "b c", "d"]), {}, ValueError, "words[1] must be one word"),
    (ins.make_instruction, ("first", ["a", "b", "c"], 4), {}, ValueError,
     "phrasing must be 0, 1, 2 (training) or 3 (held out), got 4"),
    (ins.make_instruction, ("last", ["a", 1, "c"]), {}, TypeError, "words[1] must be a str, got int"),
    (ins.make_instruction, ("sum", ["a", "b", "c"]), {}, ValueError, "family must be one of"),
    (ins.training_instructions, (0,), {}, ValueError, "n must be >= 1, got 0"),
    (ins.training_instructions, (5,), {"seed": -1}, ValueError, "seed must be >= 0, got -1"),
    (ins.training_instructions, (2.5,), {}, TypeError, "n must be an integer, got float"),
    (ins.held_out_instructions, ("new_words",), {}, ValueError, "kind must be one of"),
    (ins.held_out_instructions, ("unseen_words", 0), {}, ValueError, "per_family must be >= 1"),
    (ins.held_out_instructions, ("unseen_words", 61), {}, ValueError,
     "per_family must be <= 60, got 61"),
    (ins.validation_instructions, (0,), {}, ValueError, "per_family must be >= 1, got 0"),
    (ins.validation_instructions, (201,), {}, ValueError, "per_family must be <= 200, got 201"),
    (ins.validation_instructions, (2.5,), {}, TypeError, "per_family must be an integer, got float"),
    (ins.preference_pair, (("first", 0),), {}, TypeError, "instruction must be an Instruction"),
    (ins.preference_pair, ("What is the first word?",), {}, TypeError,
     "instruction must be an Instruction (make_instruction), got str"),
    (ins.preference_pair, (None,), {}, TypeError, "got NoneType"),
    (ins.exact_match, (None, "a"), {}, TypeError, "reply must be a str, got NoneType"),
    (ins.exact_match, ("a", 3), {}, TypeError, "answer must be a str, got int"),
    (ins.exact_match, (["a"], "a"), {}, TypeError, "reply must be a str, got list"),
    (lora.LoRALinear, (nn.Conv1d(2, 2, 1), 2, 4.0), {}, TypeError,
     "base must be a torch.nn.Linear, got Conv1d"),
    (lora.LoRALinear, (nn.Linear(4, 3), 0, 4.0), {}, ValueError, "r must be >= 1, got 0"),
    (lora.LoRALinear, (nn.Linear(4, 3), 2, 0.0), {}, ValueError,
     "alpha must be a finite number > 0, got 0.0"),
    (lora.LoRALinear, (nn.Linear(4, 3), 2, 4.0, 1.5), {}, ValueError, "dropout"),
    (LORA_L.forward, (torch.ones(2, 5),), {}, ValueError, "in_features"),
    (LORA_L.forward, (np.ones((2, 4)),), {}, TypeError, "x must be a torch.Tensor"),
    (LORA_L.forward, (torch.ones(2, 3),), {}, ValueError, "got (2, 3)"),
    (lora.apply_lora, (nn.Sequential(nn.Linear(2, 2)), 2, 4.0, ["w_q"]), {}, ValueError,
     "target_names: the model has no nn.Linear named ['w_q']"),
    (lora.apply_lora, (GPT_S, 2, 4.0, ["norm1"]), {}, TypeError,
     "target_names: 'norm1' is a LayerNorm, not an nn.Linear"),
    (lora.apply_lora, (GPT_S, 2, 4.0, "w_q"), {}, TypeError,
     "target_names must be a list of tokens, got the str"),
    (lora.apply_lora, (GPT_S, 2, -1.0, ["w_q"]), {}, ValueError, "alpha must be a finite number > 0"),
    (lora.merge_lora, (nn.Linear(2, 2),), {}, ValueError, "model has no LoRALinear layer to merge"),
    (lora.merge_lora, (None,), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (lora.merge_lora, (np.ones(2),), {}, TypeError, "model must be a torch.nn.Module, got ndarray"),
    (lora.trainable_parameter_count, (None,), {}, TypeError, "model must be a torch.nn.Module"),
    (lora.trainable_parameter_count, ([nn.Linear(2, 2)],), {}, TypeError, "got list"),
    (lora.trainable_parameter_count, ("model",), {}, TypeError, "got str"),
    (dpo.dpo_loss, (LP, LP, LP, torch.zeros(2)), {}, ValueError,
     "reference_rejected_logps must have shape (pairs,) like policy_chosen_logps (3,), got (2,)"),
    (dpo.dpo_loss, (LP, LP, LP, LP), {"beta": 0.0}, ValueError,
     "beta must be a finite number > 0, got 0.0"),
    (dpo.dpo_loss, (LP, [0.0, 0.0, 0.0], LP, LP), {}, TypeError,
     "policy_rejected_logps must be a floating torch.Tensor (pairs,), got list"),
    (dpo.dpo_loss, (torch.zeros(3, 1), torch.zeros(3, 1), torch.zeros(3, 1), torch.zeros(3, 1)),
     {}, ValueError, "policy_chosen_logps must have shape (pairs,)"),
    (dpo.dpo_nll_loss, (LP, LP, LP, LP, torch.ones(2)), {}, ValueError,
     "chosen_tokens must have shape (pairs,) like policy_chosen_logps (3,), got (2,)"),
    (dpo.dpo_nll_loss, (LP, LP, LP, LP, torch.zeros(3)), {}, ValueError,
     "chosen_tokens must count at least one token, got a total of 0"),
    (dpo.dpo_nll_loss, (LP, LP, LP, LP, [1, 1, 1]), {}, TypeError,
     "chosen_tokens must be a torch.Tensor (pairs,), got list"),
    (dpo.dpo_nll_loss, (LP, LP, LP, LP, torch.ones(3)), {"nll_weight": -1.0}, ValueError,
     "nll_weight must be a finite number >= 0, got -1.0"),
    (dpo.dpo_nll_loss, (LP, LP, LP, LP, torch.ones(3)), {"beta": 0.0}, ValueError,
     "beta must be a finite number > 0, got 0.0"),
    (assistant.add_chat_tokens, (MODERN_S, 20), {}, TypeError,
     "model must be a course_lib GPT, got ModernLM"),
    (assistant.add_chat_tokens, (gpt.GPT(configs.GPTConfig(11, 8, d_model=8, num_heads=2, num_layers=1)), 11), {},
     ValueError, "vocab_size must be larger than the model's 11 tokens, got 11"),
    (assistant.add_chat_tokens, (gpt.GPT(configs.GPTConfig(11, 8, d_model=8, num_heads=2, num_layers=1)), 12.0), {},
     TypeError, "vocab_size must be an integer, got float"),
    (assistant.chat_batch, ([],), {}, ValueError, "rendered must be a non-empty list"),
    (assistant.chat_batch, (([1, 2], [True, False]),), {}, TypeError,
     "rendered must be a list of (ids, loss_mask) pairs; for one use [pair]"),
    (assistant.chat_batch, ([([1, 2], [True])],), {}, ValueError,
     "rendered[0] must be (ids, loss_mask) of equal lengths"),
    (assistant.response_loss, (GPT_CHAT, CHAT_IDS, CHAT_MASK[:, 1:]), {}, ValueError,
     "loss_mask must have the shape of ids"),
    (assistant.response_loss, (GPT_CHAT, CHAT_IDS, CHAT_MASK.long()), {}, TypeError,
     "loss_mask must be a torch.bool tensor (batch, n)"),
    (assistant.response_loss, (GPT_CHAT, CHAT_IDS, torch.zeros_like(CHAT_MASK)), {}, ValueError,
     "loss_mask marks no target token"),
    (assistant.response_loss, (None, CHAT_IDS, CHAT_MASK), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (assistant.sequence_logprobs, (GPT_CHAT, CHAT_IDS.float(), CHAT_MASK), {}, TypeError,
     "ids must be a torch.long tensor (batch, n)"),
    (assistant.sequence_logprobs, (GPT_CHAT, CHAT_IDS[:, :1], CHAT_MASK[:, :1]), {}, ValueError,
     "ids must hold at least 2 positions"),
    (assistant.sequence_logprobs, (GPT_CHAT, CHAT_IDS, CHAT_MASK[0]), {}, ValueError,
     "loss_mask must have the shape of ids"),
    (assistant.generate_replies, (GPT_CHAT, CHAT_TOK, "hi"), {}, TypeError,
     "prompts must be a list of str, got str"),
    (assistant.generate_replies, (GPT_CHAT, CHAT_TOK, ["hi"]), {"max_new_tokens": 0}, ValueError,
     "max_new_tokens must be >= 1, got 0"),
    (assistant.generate_replies, (GPT_CHAT, CHAT_TOK, ["hi"]), {"template": "alpaca"}, ValueError,
     "template must be one of ['chatml', 'course'], got 'alpaca'"),
    (assistant.generate_replies, (None, CHAT_TOK, ["hi"]), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (assistant.load_assistant, ("best",), {}, ValueError,
     "name must be one of ['dpo', 'grpo', 'lora', 'tuned'], got 'best'"),
    (assistant.load_assistant, (3,), {}, ValueError, "name must be one of"),
    (assistant.load_assistant, ("tuned",), {"path": "no/such.pt"}, FileNotFoundError,
     "path 'no/such.pt': no such checkpoint file"),
    (assistant.load_assistant, ("tuned", gpt.GPT_CHECKPOINT), {}, ValueError,
     "is not a chat assistant checkpoint: it lacks ['replies']"),
    # lecture 16: mixture of experts, sliding windows, latent attention
    (Router, (8, 4, 5), {}, ValueError, "top_k=5 is more than num_experts=4"),
    (Router, (8, 4, 0), {}, ValueError, "top_k must be >= 1, got 0"),
    (Router, (8, 4, 2), {"scoring": "tanh"}, ValueError, "scoring must be one of ('softmax', 'sigmoid')"),
    (Router, (8, 4, 1), {"num_groups": 2}, ValueError, "needs scoring='sigmoid'"),
    (MixtureOfExperts, (8, 16, 4, 5), {}, ValueError, "top_k=5 is more than num_experts=4"),
    (MixtureOfExperts, (8, 0, 4, 2), {}, ValueError, "d_ff must be >= 1, got 0"),
    (MixtureOfExperts, (8, 16, 4, 2), {"shared_d_ff": 0}, ValueError, "shared_d_ff must be >= 1, got 0"),
    (MOE_S.forward, (torch.zeros(2, 3, 5),), {}, ValueError, "x must end with d_model=8, got (2, 3, 5)"),
    (MOE_S.forward, (np.zeros((2, 3, 8)),), {}, TypeError, "x must be a torch.Tensor (..., d_model=8)"),
    (MOE_S.forward, (torch.zeros(2, 3, 8, dtype=torch.long),), {}, TypeError, "x must be a floating tensor"),
    (softmax_top_k, (torch.zeros(3, 4), 5), {}, ValueError, "k=5 is more than num_experts=4"),
    (softmax_top_k, (torch.zeros(4), 2), {}, ValueError, "logits must be a floating (tokens, num_experts) tensor"),
    (softmax_top_k, (torch.zeros(3, 4), 0), {}, ValueError, "k must be >= 1, got 0"),
    (sigmoid_top_k, (torch.zeros(3, 4), 5), {}, ValueError, "k=5 is more than num_experts=4"),
    (sigmoid_top_k, (torch.zeros(3, 4), 1), {"num_groups": 3}, ValueError, "num_groups=3 must divide the 4 experts"),
    (sigmoid_top_k, ([[0.0]], 1), {}, ValueError, "logits must be a floating (tokens, num_experts) tensor"),
    (load_balancing_loss, ([], 2), {}, ValueError, "router_logits: got an empty list"),
    (load_balancing_loss, (torch.zeros(5, 4), 5), {}, ValueError, "top_k=5 is more than num_experts=4"),
    (load_balancing_loss, (torch.zeros(4), 1), {}, ValueError, "router_logits must be a floating (tokens, num_experts) tensor"),
    (nn_moe.check_top_k, (3, 2), {}, ValueError, "top_k=3 is more than num_experts=2"),
    (nn_moe.check_top_k, (1.5, 2), {}, TypeError, "top_k must be an integer, got float 1.5"),
    (nn_moe.check_top_k, (1, 0), {}, ValueError, "num_experts must be >= 1, got 0"),
    (configs.MoEConfig, (4, 5, 16), {}, ValueError, "top_k=5 is more than num_experts=4"),
    (configs.MoEConfig, (4, 2, 0), {}, ValueError, "d_ff must be >= 1, got 0"),
    (configs.MoEConfig, (4, 2, 16), {"scoring": "relu"}, ValueError, "scoring must be one of"),
    (configs.MLAConfig, (0, 8, 4, 8), {}, ValueError, "kv_lora_rank must be >= 1, got 0"),
    (configs.MLAConfig, (8, 8, 3, 8), {}, ValueError, "qk_rope_head_dim=3 must be even"),
    (configs.MLAConfig, (8, 8, 4, 0), {}, ValueError, "v_head_dim must be >= 1, got 0"),
    (configs.ModernConfig, (11, 8, 2, 2, 1, 16), {"mla": configs.MLAConfig(8, 2, 4, 2)}, ValueError,
     "kv_lora_rank=8 does not fit"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"sliding_window": 0}, ValueError,
     "sliding_window must be >= 1, got 0"),
    (configs.ModernConfig, (11, 8, 2, 1, 1, 16), {"layer_types": ("local",)}, ValueError,
     "layer_types: each must be one of ('full_attention', 'sliding_attention')"),
    (mla.check_latent_sizes, (2, 40, 8, 4, 8), {}, ValueError, "kv_lora_rank=40 does not fit"),
    (mla.check_latent_sizes, (2, 4, 8, 5, 8), {}, ValueError, "qk_rope_head_dim=5 must be even"),
    (mla.check_latent_sizes, (0, 4, 8, 4, 8), {}, ValueError, "num_heads must be >= 1, got 0"),
    (MultiHeadLatentAttention, (16, 2, 40, 8, 4, 8), {}, ValueError, "kv_lora_rank=40 does not fit"),
    (MultiHeadLatentAttention, (0, 2, 4, 8, 4, 8), {}, ValueError, "d_model must be >= 1, got 0"),
    (MultiHeadLatentAttention, (16, 2, 4, 8, 4, 8), {"q_lora_rank": 0}, ValueError,
     "q_lora_rank must be >= 1, got 0"),
    (MLA_S.forward, (torch.zeros(1, 3, 8),), {}, ValueError,
     "x must have shape (batch, n, d_model=16), got (1, 3, 8)"),
    (MLA_S.forward, (np.zeros((1, 3, 16)),), {}, TypeError, "x must be a torch.Tensor, got ndarray"),
    (MLA_S.forward, (torch.zeros(2, 3, 16),), {"cache": _latent_cache(1, 1, 4)}, ValueError,
     "this call needs batch=2, kv_heads=1, d_head=4"),
    (la.check_window, (0,), {}, ValueError, "window must be >= 1, got 0"),
    (la.check_window, (2.5,), {}, TypeError, "window must be an integer, got float 2.5"),
    (la.check_window, (None,), {}, TypeError, "window must be an integer, got NoneType None"),
    (sliding_window_mask, (0, 5, 0), {}, ValueError, "window must be >= 1, got 0"),
    (sliding_window_mask, (0, 0, 2), {}, ValueError, "n_new must be >= 1, got 0"),
    (sliding_window_mask, (2, 3, 2), {"n_keys": 6}, ValueError, "n_keys must be in [1, start + n_new = 5], got 6"),
    (SlidingWindowKVCache, (0,), {}, ValueError, "window must be an integer >= 1 (positions kept), got 0"),
    (SlidingWindowKVCache, (2.0,), {}, ValueError, "window must be an integer >= 1"),
    (SlidingWindowKVCache, (None,), {}, ValueError, "got None"),
    (MultiHeadAttention(8, 2, window=3).forward, (torch.zeros(1, 2, 8),),
     {"cache": SlidingWindowKVCache(2), "causal": True}, ValueError,
     "cache keeps a window of 2 positions but this layer's window is 3"),
    (modern.router_logits, (MODERN_S,), {}, ValueError, "model has no router logits"),
    (modern.router_logits, (None,), {}, TypeError, "model must be a ModernLM, got NoneType"),
    (modern.modern_parameter_count, (None,), {}, TypeError, "config must be a ModernConfig, got NoneType"),
    (modern.modern_parameter_count, (MODERN_S,), {}, TypeError, "config must be a ModernConfig, got ModernLM"),
    (modern.modern_parameter_count, (configs.TINY_GPT_CONFIG,), {}, TypeError, "got GPTConfig"),
    (modern.kv_cache_bytes_for, (MODERN_S.config, 0), {}, ValueError, "seq_len must be >= 1, got 0"),
    (modern.kv_cache_bytes_for, (MODERN_S.config, 4), {"bytes_per_value": 0}, ValueError,
     "bytes_per_value must be >= 1, got 0"),
    (modern.kv_cache_bytes_for, (MODERN_S, 4), {}, TypeError, "config must be a ModernConfig, got ModernLM"),
    (modern.router_logits, (GPT_S,), {}, TypeError, "model must be a ModernLM, got GPT"),
    # issue 49: silent results and internal errors left in the library
    (generation.next_token, (torch.full((1, 3), -float("inf")),), {"temperature": 0}, ValueError,
     "logits row 0 is -inf everywhere"),
    (generation.next_token, (torch.tensor([[0.0, float("inf"), 1.0]]),), {}, ValueError,
     "logits row 0 contains +inf"),
    (KVCache().layer, (1,), {}, ValueError, "index must be a layer number in [0, 0]"),
    (KVCache().layer, (-1,), {}, ValueError, "index must be a layer number in [0, 0]"),
    (KVCache().layer, ("0",), {}, ValueError, "index must be a layer number"),
    (LayerKVCache().append, (torch.ones(1, 2, 3, 4), torch.ones(1, 2, 2, 4)), {}, ValueError,
     "must agree in (batch, kv_heads, n_new)"),
    (LayerKVCache().append, (torch.ones(2, 3, 4), torch.ones(2, 3, 4)), {}, TypeError,
     "k must be a 4-D torch.Tensor (batch, kv_heads, n_new, d_head), got shape (2, 3, 4)"),
    (LayerKVCache().append, (np.ones((1, 2, 3, 4)), np.ones((1, 2, 3, 4))), {}, TypeError,
     "k must be a 4-D torch.Tensor (batch, kv_heads, n_new, d_head), got ndarray"),
    (_layer_cache(1, 2, 4).append, (torch.ones(1, 2, 1, 8), torch.ones(1, 2, 1, 4)), {},
     ValueError, "do not fit"),
    (la.causal_mask_from, (-1, 2), {}, ValueError, "start must be an int >= 0, got -1"),
    (la.causal_mask_from, (0, 0), {}, ValueError, "n_new must be an int >= 1, got 0"),
    (la.causal_mask_from, (0, 2.0), {}, ValueError, "n_new must be an int >= 1, got 2.0"),
    (rope_qk, (torch.ones(2, 3, 4), torch.ones(2, 3, 4), torch.arange(3)), {}, ValueError,
     "q must be a 4-D tensor (B, heads, n, d_head), got shape (2, 3, 4)"),
    (rope_qk, (torch.ones(1, 2, 3, 4), torch.ones(1, 1, 2, 4), torch.arange(3)), {}, ValueError,
     "must agree in B, n and d_head"),
    (rope_qk, (torch.ones(1, 2, 3, 4), torch.ones(1, 1, 3, 4), torch.arange(4)), {}, ValueError,
     "positions must be a tensor of shape (n,) = (3,)"),
    (classifier.BertClassifier([], 4, 2).forward, (torch.ones(1, 3, 4), torch.zeros(1, 3)), {},
     ValueError, "attention_mask: row 0 has no real token"),
    (gpt.load_tiny_gpt, (__file__,), {}, ValueError, "is not a GPT checkpoint: torch.load cannot"),
    (bert.load_tiny_bert, (__file__,), {}, ValueError, "is not a TinyBert checkpoint"),
    (assistant.load_assistant, ("tuned", assistant.ASSISTANT_CHECKPOINTS["lora"]), {}, ValueError,
     "holds adapters on 'pretrained', not a 'tuned' assistant"),
    (assistant.load_assistant, ("lora", assistant.ASSISTANT_CHECKPOINTS["tuned"]), {}, ValueError,
     "holds a whole model, not a 'lora' assistant"),
    (assistant.load_assistant, ("tuned", __file__), {}, ValueError,
     "is not a chat assistant checkpoint: torch.load cannot read it"),
    (lora.apply_lora, (gpt.GPT(configs.GPTConfig(11, 8, d_model=8, num_heads=2, num_layers=1)), 2,
     4.0, ["w_q", "w_x"]), {}, ValueError, "the model has no nn.Linear named ['w_x']"),
    (ins.preference_pair, (ins.make_instruction("first", ("cat", "dog", "cat"), 0),), {}, ValueError,
     "the typical mistake for 'first'"),
    (_ascii_bytes_tokenizer().encode, ("h\u00e9",), {}, ValueError,
     "byte 0xc3 ('\u00c3') is not in the byte-level vocabulary and there is no unk_token"),
    (_ascii_bytes_tokenizer().encode, (3,), {}, TypeError, "text must be a str"),
    (_ascii_bytes_tokenizer().encode, ("\ud800",), {}, ValueError,
     "text has '\\ud800' at index 0, a lone surrogate"),
    (dpo.dpo_loss, (torch.tensor([0.5]), torch.tensor([-1.0]), torch.tensor([-1.0]),
     torch.tensor([-1.0])), {}, ValueError, "policy_chosen_logps must hold log-probabilities (<= 0)"),
    (dpo.dpo_nll_loss, (*[torch.tensor([-1.0])] * 4, torch.tensor([3.0])), {"nll_weight": float("inf")},
     ValueError, "nll_weight must be a finite number >= 0, got inf"),
    (dpo.dpo_nll_loss, (*[torch.tensor([-1.0])] * 4, torch.tensor([-3.0])), {}, ValueError,
     "chosen_tokens must hold whole token counts >= 0"),
    (dpo.dpo_nll_loss, (*[torch.tensor([-1.0])] * 4, torch.tensor([2.5])), {}, ValueError,
     "chosen_tokens must hold whole token counts >= 0"),
    (assistant.token_logprobs, (GPT_CHAT, CHAT_IDS.float()), {}, TypeError,
     "ids must be a torch.long tensor (batch, n)"),
    (assistant.token_logprobs, (GPT_CHAT, CHAT_IDS[:, :1]), {}, ValueError,
     "ids must hold at least 2 positions"),
    (assistant.token_logprobs, (None, CHAT_IDS), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (rl.sample_group, (GPT_CHAT, CHAT_TOK, "hi", 2), {}, TypeError,
     "prompts must be a non-empty list of str, got str"),
    (rl.sample_group, (GPT_CHAT, CHAT_TOK, ["hi"], 0), {}, ValueError,
     "group_size must be >= 1, got 0"),
    (rl.sample_group, (GPT_CHAT, CHAT_TOK, ["hi"], 2), {"max_new_tokens": 0}, ValueError,
     "max_new_tokens must be >= 1, got 0"),
    (rl.exact_match_rewards, (["a", "b"], ["a"]), {}, ValueError,
     "answers must hold one answer per reply (2), got 1"),
    (rl.exact_match_rewards, ("a", ["a"]), {}, TypeError, "replies must be a list of str, got str"),
    (rl.exact_match_rewards, (["a"], [3]), {}, TypeError, "answers[0] must be a str, got int"),
    (rl.one_word_rewards, ([],), {}, ValueError, "replies must hold at least one reply"),
    (rl.one_word_rewards, ("open",), {}, TypeError, "replies must be a list of str, got str"),
    (rl.one_word_rewards, ([None],), {}, TypeError, "replies[0] must be a str, got NoneType"),
    (rl.group_advantages, (torch.ones(4), 1), {}, ValueError,
     "group_size must be >= 2: a group of one completion is its own baseline"),
    (rl.group_advantages, (torch.ones(5), 2), {}, ValueError,
     "5 rewards is not a multiple of group_size=2"),
    (rl.group_advantages, (torch.ones(4), 2, "std"), {}, ValueError,
     "scale_rewards must be one of ['batch', 'group', 'none'], got 'std'"),
    (rl.group_advantages, (torch.ones(4, dtype=torch.bool), 2), {}, TypeError,
     "rewards must hold real numbers, got torch.bool"),
    (rl.reinforce_loss, (TLP, ADV, TMASK[:, :2]), {}, ValueError,
     "mask must have the shape of logps (B, T) = (2, 3), got (2, 2)"),
    (rl.reinforce_loss, (TLP, torch.zeros(3), TMASK), {}, ValueError,
     "advantages must have shape (B,) = (2,), got (3,)"),
    (rl.reinforce_loss, (TLP.long(), ADV, TMASK), {}, TypeError,
     "logps must be a floating torch.Tensor (B, T), got torch.int64 tensor"),
    (rl.kl_k3, (TLP, torch.zeros(3, 2)), {}, ValueError,
     "ref_logps must have shape (B, T) like logps = (2, 3), got (3, 2)"),
    (rl.kl_k3, (TLP, None), {}, TypeError, "ref_logps must be a floating torch.Tensor"),
    (rl.kl_k3, (torch.zeros(3), torch.zeros(3)), {}, ValueError,
     "logps must have shape (B, T), got (3,)"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"beta": -0.1}, ValueError,
     "beta must be a finite number >= 0 (0 = no KL term), got -0.1"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"beta": 0.1}, ValueError,
     "ref_logps is needed when beta > 0 (the KL term), got None"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"epsilon_low": 1.2}, ValueError,
     "epsilon_low must be in (0, 1)"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"epsilon_high": 0}, ValueError,
     "epsilon_high must be in (0, 1)"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK[:1]), {}, ValueError,
     "mask must have the shape of logps (B, T) = (2, 3), got (1, 3)"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"loss_type": "bnpo"}, ValueError,
     "loss_type must be one of ['dapo', 'dr_grpo', 'grpo'], got 'bnpo'"),
    (rl.grpo_loss, (TLP, TLP, ADV, TMASK), {"loss_type": "dr_grpo", "max_completion_length": 2},
     ValueError, "max_completion_length must be at least the longest completion (3 tokens), got 2"),
    (rl.clip_fraction, (TLP, None, ADV, TMASK), {}, TypeError, "old_logps must be a floating"),
    (rl.clip_fraction, (TLP, TLP, ADV, TMASK), {"epsilon_low": 0.0}, ValueError,
     "epsilon_low must be in (0, 1)"),
    (rl.clip_fraction, (TLP, TLP, ADV, TMASK.float() * 2), {}, ValueError,
     "mask must be bool (or hold only 0 and 1)"),
    (rl.pass_at_k, (8, 9, 1), {}, ValueError, "c must be <= n=8 (right samples among n), got 9"),
    (rl.pass_at_k, (8, 3, 9), {}, ValueError, "k must be <= n=8 (the samples drawn), got 9"),
    (rl.pass_at_k, (8, 3, 0), {}, ValueError, "k must be >= 1, got 0"),
    (rl.grpo_train, (GPT_CHAT, CHAT_TOK, lambda i: (["hi"], ["a"])), {"steps": 0}, ValueError,
     "steps must be >= 1, got 0"),
    (rl.grpo_train, (None, CHAT_TOK, lambda i: (["hi"], ["a"])), {"steps": 1}, TypeError,
     "policy must be a torch.nn.Module, got NoneType"),
    (rl.grpo_train, (GPT_CHAT, CHAT_TOK, lambda i: (["hi"], ["a"])), {"steps": 1, "beta": 0.1},
     ValueError, "reference is needed when beta > 0"),
    (rl.grpo_train, (GPT_CHAT, CHAT_TOK, lambda i: (["hi"], ["a"])),
     {"steps": 1, "iterations": 0}, ValueError, "iterations must be >= 1, got 0"),
    # lecture 18: evaluation
    (ev.encode_text, (object(), "a"), {}, TypeError, "tokenizer must have an encode(text)"),
    (ev.encode_text, (EV_TOK, None), {}, TypeError, "text must be a str, got NoneType"),
    (ev.encode_text, (EV_TOK, "a"), {"add_special_tokens": "yes"}, TypeError,
     "add_special_tokens must be True or False"),
    (ev.encode_pair, (EV_TOK, None, " a"), {}, TypeError, "context must be a str, got NoneType"),
    (ev.encode_pair, (EV_TOK, "q", 3), {}, TypeError, "continuation must be a str, got int"),
    (ev.encode_pair, (object(), "q", " a"), {}, TypeError, "tokenizer must have an encode"),
    (ev.context_window, ("gpt",), {}, TypeError, "model must be a torch.nn.Module, got str"),
    (ev.context_window, (None,), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (ev.context_window, (nn.Linear(2, 2),), {}, TypeError,
     "model must have a context_length (the course's models) or a config"),
    (ev.loglikelihood, (EV_GPT, EV_TOK, []), {}, ValueError, "requests is empty"),
    (ev.loglikelihood, (EV_GPT, EV_TOK, [("a", " b")]), {"batch_size": 0}, ValueError,
     "batch_size must be >= 1, got 0"),
    (ev.loglikelihood, (EV_GPT, EV_TOK, [("a", " b")]), {"max_length": -1}, ValueError,
     "max_length must be >= 1, got -1"),
    (ev.choice_requests, ("q", []), {}, ValueError, "choices is empty"),
    (ev.choice_requests, (None, ["a"]), {}, TypeError, "context must be a str, got NoneType"),
    (ev.choice_requests, ("q", ["a"]), {"delimiter": 1}, TypeError, "delimiter must be a str"),
    (ev.choice_scores, ([-1.0], ["a", "b"]), {}, ValueError,
     "loglikelihoods must hold one number per choice (2), got shape (1,)"),
    (ev.choice_scores, ([-1.0, -2.0], ["a", "b"], "best"), {}, ValueError,
     "rule must be one of ['acc', 'acc_norm', 'per_byte', 'per_token'], got 'best'"),
    (ev.choice_scores, (["x", "y"], ["a", "b"]), {}, TypeError,
     "loglikelihoods must contain real numbers"),
    (ev.choose, ([-1.0, -2.0], ["a", "b"], "per_token"), {}, ValueError,
     "rule 'per_token' needs token_counts"),
    (ev.choose, ([-1.0, -2.0], "ab"), {}, TypeError, "choices must be a list of str, got str"),
    (ev.choose, ([-1.0, -2.0], ["a", "b"], "per_token", [1, 0]), {}, ValueError,
     "token_counts must hold one positive count per choice"),
    (ev.is_correct, ([-1.0, -2.0], ["a", "b"], 2), {}, ValueError,
     "gold must be the index of the right choice, in [0, 2), got 2"),
    (ev.is_correct, ([-1.0, -2.0], ["a", "b"], True), {}, ValueError,
     "gold must be the index of the right choice, in [0, 2), got True"),
    (ev.is_correct, ([-1.0, -2.0], ["a", "b"], 1.0), {}, ValueError,
     "gold must be the index of the right choice, in [0, 2), got 1.0"),
    (ev.correct_per_item, ([[-1.0, -2.0]], [["a", "b"]], [0, 1]), {}, ValueError,
     "must hold one entry per item, got 1, 1, 2"),
    (ev.correct_per_item, ("x", [["a", "b"]], [0]), {}, TypeError,
     "loglikelihoods must be a list with one entry per item, got str"),
    (ev.correct_per_item, ([[-1.0, -2.0]], [["a", "b"]], [5]), {}, ValueError,
     "gold must be the index of the right choice, in [0, 2), got 5"),
    (ev.fewshot_prompt, ("shots", "q"), {}, TypeError, "shots must be a list of (query, answer)"),
    (ev.fewshot_prompt, ([("q", 1)], "q"), {}, TypeError, "shots[0][1] must be a str, got int"),
    (ev.fewshot_prompt, ([("q",)], "q"), {}, TypeError, "shots[0] must be a (query, answer) pair"),
    (ev.letter_prompt, ("q", []), {}, ValueError, "choices is empty"),
    (ev.letter_prompt, (None, ["a"]), {}, TypeError, "question must be a str, got NoneType"),
    (ev.letter_prompt, ("q", ["a"] * 27), {}, ValueError, "takes at most 26 choices, got 27"),
    (ev.correct_array, ([0, 2],), {}, ValueError, "correct must hold 0/1"),
    (ev.correct_array, ([],), {}, ValueError, "correct must be a non-empty 1-D list"),
    (ev.correct_array, ("abc",), {}, TypeError, "correct must hold 0/1 (or False/True) per item"),
    (ev.paired_bootstrap, ([0, 1], [1]), {}, ValueError,
     "correct_a and correct_b must score the same items, got 2 and 1 items"),
    (ev.paired_bootstrap, ([0, 1], [1, 0]), {"n_resamples": 0}, ValueError,
     "n_resamples must be >= 1, got 0"),
    (ev.paired_bootstrap, ([0, 1], [1, 0]), {"confidence": 1.5}, ValueError,
     "confidence must be a probability in [0, 1], got 1.5"),
    (ev.word_ngrams, (None, 2), {}, TypeError, "text must be a str, got NoneType"),
    (ev.word_ngrams, ("a b", 0), {}, ValueError, "n must be >= 1, got 0"),
    (ev.word_ngrams, ("a b", 2.5), {}, TypeError, "n must be an integer, got float 2.5"),
    (ev.contaminated, ("abc", ["x"]), {}, TypeError, "items must be a list of tokens, got the str"),
    (ev.contaminated, (["a"], "corpus"), {}, TypeError, "corpus must be a list of texts, got one str"),
    (ev.contaminated, (["a"], ["x"]), {"n": 0}, ValueError, "n must be >= 1, got 0"),
    (ev.load_benchmark, ("mmlu",), {}, ValueError, "name must be one of ['arc_easy', 'arithmetic'"),
    (ev.load_benchmark, (None,), {}, ValueError, "got None"),
    (ev.load_benchmark, (3,), {}, ValueError, "got 3"),
    (ev.chance_accuracy, ({},), {}, TypeError, "task must be a dict with a list of items"),
    (ev.chance_accuracy, ({"items": []},), {}, ValueError, "task has no items"),
    (ev.chance_accuracy, ({"items": [{"query": "q", "choices": [], "gold": 0}]},), {}, ValueError,
     "choices is empty"),
    (ev.item_requests, (EV_TASK, {"query": "q"}), {}, TypeError,
     "item must be a dict with query, choices and gold"),
    (ev.item_requests, (EV_TASK, EV_TASK["items"][0]), {"fewshot": True}, ValueError,
     "ships no shots"),
    (ev.item_requests, (EV_TASK, EV_TASK["items"][0]), {"letters": True}, ValueError,
     "only ARC-Easy's items keep the bare question"),
    (ev.item_requests, (EV_TASK, EV_TASK["items"][0]), {"reverse": "yes"}, TypeError,
     "reverse must be True or False"),
    (ev.load_stored_scores, ("gpt",), {}, ValueError,
     "name must be one of ['smollm2', 'smollm2_lm_eval'], got 'gpt'"),
    (ev.load_stored_scores, (None,), {}, ValueError, "got None"),
    (ev.load_stored_scores, (1,), {}, ValueError, "got 1"),
    # data_parallel (lecture 11's section 9; tools/training/distributed.py under torchrun)
    (dp.shard_batch, (torch.zeros(6, 3), 0, 4), {}, ValueError, "the world size (4 processes) must divide the global batch: batch has 6 rows"),
    (dp.shard_batch, ("ids", 0, 2), {}, TypeError, "batch must be a tensor or a tuple/list/dict of tensors, got str"),
    (dp.shard_batch, (torch.zeros(4, 1), 2, 2), {}, ValueError, "rank must be < world_size=2, got 2"),
    (dp.shard_batch, ((torch.zeros(4, 1), torch.zeros(3, 1)), 0, 2), {}, ValueError, "every tensor of batch must have the same number of rows"),
    (dp.average_gradients, ("model",), {}, TypeError, "model must be a torch.nn.Module, got str"),
    (dp.average_gradients, (nn.Linear(2, 2),), {}, RuntimeError, "average_gradients needs torch.distributed's default process group"),
    (dp.average_gradients, (None,), {}, TypeError, "model must be a torch.nn.Module, got NoneType"),
    (dp.data_parallel_steps, (nn.Linear(2, 2), "batch", 1, 0, 1), {}, TypeError, "batch_at must be a function step -> (B, n + 1) token ids, got str"),
    (dp.data_parallel_steps, (nn.Linear(2, 2), dp._batch_at, 0, 0, 1), {}, ValueError, "steps must be >= 1, got 0"),
    (dp.data_parallel_steps, (nn.Linear(2, 2), dp._batch_at, 1, 0, 0), {}, ValueError, "world_size must be >= 1, got 0"),
    (dp.compare_data_parallel, (3,), {}, ValueError, "world_size must divide the global batch of 8 rows, got 3"),
    (dp.compare_data_parallel, (2,), {"steps": 0}, ValueError, "steps must be >= 1, got 0"),
    (dp.compare_data_parallel, ("2",), {}, TypeError, "world_size must be an integer, got str '2'"),
    (dp.zero_memory_per_gpu, (7e9, 8, 4), {}, ValueError, "stage must be 0, 1, 2 or 3 (0 = plain data parallelism), got 4"),
    (dp.zero_memory_per_gpu, (7e9, 0, 1), {}, ValueError, "gpus must be >= 1, got 0"),
    (dp.zero_memory_per_gpu, (-1, 8, 1), {}, ValueError, "parameters must be a finite number > 0, got -1"),
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


def _key(fn) -> str:
    """``module.qualname`` of a callable, a bound method's function for a method."""
    fn = getattr(fn, "__func__", fn)
    return f"{fn.__module__}.{fn.__qualname__}"


# Public callables with nothing to refuse, and why (they take no argument, or only hold data, or
# run inside a model whose forward has checked its input: validation happens at the door).
_INNER = "an inner step run unchecked; its door is {}"
EXEMPT = {
    "course_lib.nn.cache.KVCache": "takes no argument",
    "course_lib.pretrained.smollm2_path": "takes no argument",
    "course_lib.pretrained.weights_cache_dir": "takes no argument",
    "course_lib.interop.gguf.GGUFFile": "a record read_gguf fills after checking the file",
    "course_lib.nn.norms.RMSNorm.extra_repr": "takes no argument (torch prints it)",
    "course_lib.nn.cache.KVCache.numel": "takes no argument",
    "course_lib.nn.cache.LayerKVCache": "takes no argument",
    "course_lib.nn.cache.KVCache.crop": _INNER.format(
        "speculative_generate, which crops its caches"
    ),
    "course_lib.nn.cache.LayerKVCache.crop": _INNER.format("KVCache.crop"),
    "course_lib.nn.attention.MultiHeadAttention.split_heads": _INNER.format("forward"),
    "course_lib.nn.attention.MultiHeadAttention.new_cache": "takes no argument",
    "course_lib.nn.latent_attention.MultiHeadLatentAttention.new_cache": "takes no argument",
    "course_lib.nn.cache.SlidingWindowKVCache.append": _INNER.format("MultiHeadAttention.forward"),
    "course_lib.nn.moe.Router.forward": _INNER.format("MixtureOfExperts.forward"),
    "course_lib.configs.ModernConfig.layer_type": _INNER.format(
        "ModernLM(config), layer 0, 1, ..."
    ),
    "course_lib.nn.attention.attend": _INNER.format("MultiHeadAttention.forward"),
    "course_lib.nn.residual.residual": _INNER.format("EncoderLayer/DecoderLayer.forward"),
    "course_lib.nn.rope.rotate": _INNER.format("rope_qk, the attention's hook"),
    "course_lib.nn.rope.rope_qk_unchecked": "unchecked by name: "
    + _INNER.format("ModernLM.forward; rope_qk is it with its input checked"),
    "course_lib.pretrained.minilm_path": "takes no argument",
    "course_lib.pretrained.load_minilm": "takes no argument",
    "course_lib.pretrained.load_minilm_encoder": "takes no argument",
    "course_lib.pretrained.load_minilm_mlm": "takes no argument",
    "course_lib.data.language_modeling.lm_documents": "takes no argument",
    "course_lib.data.pretraining.load_pretraining_corpus": "takes no argument",
    "course_lib.training.TrainingLog": "result record of train(); holds data, validates nothing",
    "course_lib.models.bert_encoder.BertEncoderOutput": "result record of BertEncoder.forward",
    "course_lib.data.language_modeling.LMCorpus": "result record of lm_corpus()",
    "course_lib.data.translation.batches.Batch": "record of make_batch()'s tensors; the models "
    "and translation_loss check what they read from it",
    "course_lib.data.translation.sampling.TranslationData": "result record of "
    "make_translation_data()",
    "course_lib.data.chat.load_chat_tokenizer": "takes no argument",
    "course_lib.data.instructions.instruction_words": "takes no argument",
    "course_lib.data.instructions.Instruction": "result record of make_instruction()",
    "course_lib.models.rl.GRPOLog": "result record of grpo_train(); holds data, validates nothing",
    "course_lib.models.lora.LoRALinear.merge": "takes no argument",
}


def _public_callables() -> list[str]:
    """Every public function, class and public method of the modules this file covers."""
    import importlib
    import inspect
    import pkgutil

    import course_lib.data
    import course_lib.interop
    import course_lib.models
    import course_lib.nn

    names = ["course_lib.configs", "course_lib.pretrained", "course_lib.training"]
    for pkg in (course_lib.nn, course_lib.interop, course_lib.models, course_lib.data):
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
    found = []
    for name in names:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if not callable(obj) or getattr(obj, "__module__", None) != name:
                continue  # data (a dict, a config instance) or a re-export
            found.append(_key(obj))
            if inspect.isclass(obj):
                for meth, value in vars(obj).items():
                    func = getattr(value, "__func__", value)  # classmethods
                    if not meth.startswith("_") and inspect.isfunction(func):
                        found.append(f"{name}.{obj.__qualname__}.{meth}")
    return found


def test_at_least_three_bad_inputs_per_callable_in_this_table():
    counts: dict[str, int] = {}
    for fn, *_ in CASES:
        counts[_key(fn)] = counts.get(_key(fn), 0) + 1
    assert min(counts.values()) >= 3, {k: v for k, v in counts.items() if v < 3}


def test_every_public_callable_of_these_modules_is_covered_or_exempt():
    """With the rows tests/test_bad_inputs.py already holds for these modules."""
    from test_bad_inputs import CASES as NUMPY_SIDE_CASES

    counts: dict[str, int] = {}
    for fn, *_ in [*CASES, *NUMPY_SIDE_CASES]:
        counts[_key(fn)] = counts.get(_key(fn), 0) + 1
    public = _public_callables()
    assert len(public) > 150  # the walk found the modules
    missing = {k: counts.get(k, 0) for k in public if counts.get(k, 0) < 3 and k not in EXEMPT}
    assert not missing, missing
    assert not set(EXEMPT) - set(public), "stale exemptions"
    assert not set(EXEMPT) & {k for k, v in counts.items() if v}, "exempt but tested"


def test_documented_results_where_an_error_is_not_due():
    """Issue 49: inputs with a right answer get it (by hand), not nan or torch's error."""
    from course_lib import rope

    # a nan at a padded position is left out of the mean, as the docstring says
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [float("nan"), 0.0]]])
    pooled = classifier.mean_pool(hidden, torch.tensor([[1, 1, 0]]))
    assert torch.equal(pooled, torch.tensor([[2.0, 3.0]]))
    # so small a temperature is greedy (logits / 1e-45 would overflow to inf, softmax to nan)
    logits = torch.tensor([[0.5, 3.0, 2.9]])
    assert generation.next_token(logits, temperature=1e-45).tolist() == [1]
    # a bare LoRALinear merges into the nn.Linear it equals
    layer = lora.LoRALinear(nn.Linear(4, 3), 2, 4.0)
    nn.init.normal_(layer.lora_B.weight)
    x = torch.randn(5, 4)
    merged = lora.merge_lora(layer)
    assert isinstance(merged, nn.Linear) and torch.allclose(merged(x), layer(x), atol=1e-6)
    # apply_lora with a missing name leaves the model as it was
    model = gpt.GPT(configs.GPTConfig(11, 8, d_model=8, num_heads=2, num_layers=1))
    with pytest.raises(ValueError):
        lora.apply_lora(model, 2, 4.0, ["w_q", "w_x"])
    assert all(p.requires_grad for p in model.parameters())
    assert not any(isinstance(m, lora.LoRALinear) for m in model.modules())
    # a numpy float theta is a number like any other
    x = np.arange(8.0).reshape(2, 4)
    assert np.array_equal(
        rope(x, np.arange(2), theta=np.float32(100.0)), rope(x, np.arange(2), 100.0)
    )
    # a tensor in an autograd graph: say how to hand it over
    with pytest.raises(TypeError, match=r"requires grad.*pass x.detach\(\).numpy\(\)"):
        rope(torch.ones(2, 4, requires_grad=True), np.arange(2))
