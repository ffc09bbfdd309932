"""Bad inputs, in one table: every row calls a public callable with something wrong and names
the error type and a fragment of the message it must give (the argument, what it got, what it
needs). A row that returned a result instead would be a silent wrong answer (issue 18)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import course_lib as C
from course_lib.bleu import bleu_statistics, compute_bleu, tokenize_for_bleu
from course_lib.data import Batch, Vocab, generate_pairs, make_batch, word_tokens
from course_lib.data.pretraining import mask_tokens, pair_input, truncate_pair
from course_lib.layers import FeedForward
from course_lib.models import translation_loss
from course_lib.tokenization import wordpiece
from course_lib.training import learning_rate_at, train

x = np.ones((3, 4))
nan = np.full((3, 4), np.nan)
inf = np.full((3, 4), np.inf)
rng = np.random.default_rng(0)
t3 = torch.ones(1, 3, 8)
VOCAB = Vocab(["a", "b", "c"])


def _nan_loss(model, batch):
    return model(batch).sum() * float("nan")


def _vector_loss(model, batch):
    return model(batch)


def _empty_target_batch() -> Batch:
    ones = torch.ones(2, 3, dtype=torch.long)
    return Batch(ones, ones.bool(), ones, ones, torch.zeros(2, 3, dtype=torch.bool))


# (callable, args, kwargs, error type, message fragment)
CASES = [
    # softmax
    (C.softmax, (nan,), {}, ValueError, "x contains nan"),
    (C.softmax, ("abc",), {}, TypeError, "x must contain real numbers"),
    (C.softmax, (x,), {"axis": 5}, ValueError, "axis=5 is out of range for x of shape (3, 4)"),
    (C.softmax, (np.array([]),), {}, ValueError, "x is empty"),
    (C.log_softmax, (np.array([np.inf, 1.0]),), {}, ValueError, "x contains +inf"),
    (C.log_softmax, ([[1, 2], [3]],), {}, TypeError, "x must be an array of numbers, got list"),
    (C.log_softmax, (x,), {"axis": -3}, ValueError, "axis=-3 is out of range"),
    (C.naive_softmax, ("a",), {}, TypeError, "x must contain real numbers"),
    (C.naive_softmax, (nan,), {}, ValueError, "x contains nan"),
    (C.naive_softmax, ([],), {}, ValueError, "x is empty"),
    (C.online_softmax, (x, 0), {}, ValueError, "block_size must be >= 1, got 0"),
    (C.online_softmax, (nan, 2), {}, ValueError, "x contains nan"),
    (C.online_softmax, ("ab", 2), {}, TypeError, "x must contain real numbers"),
    # attention
    (C.scaled_dot_product_attention, (np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 4))), {},
     ValueError, "q and k must have the same feature size d_k"),
    (C.scaled_dot_product_attention, (nan, x, x), {}, ValueError, "q contains nan or inf"),
    (C.scaled_dot_product_attention, (x, x, x), {"mask": np.ones((3, 3))}, TypeError,
     "mask must be boolean (True = may attend), got dtype float64"),
    (C.scaled_dot_product_attention, (x, x, x), {"mask": np.zeros((3, 3), bool)}, ValueError,
     "mask hides every key from some query"),
    (C.scaled_dot_product_attention, (np.ones(3), x, x), {}, ValueError,
     "q must have at least 2 dimension(s), got shape (3,)"),
    (C.scaled_dot_product_attention_inplace, (x, x, np.ones((2, 4))), {}, ValueError,
     "k and v must have the same number of positions n_k"),
    (C.scaled_dot_product_attention_inplace, (x, x, inf), {}, ValueError, "v contains nan or inf"),
    (C.scaled_dot_product_attention_inplace, (x, x, x), {"mask": np.ones((2, 2), bool)},
     ValueError, "mask of shape (2, 2) does not broadcast to the scores' shape (3, 3)"),
    (C.attention_scores, (np.ones((2, 3)), np.ones((2, 4))), {}, ValueError,
     "q (2, 3) and k (2, 4) must share the last dimension d_k"),
    (C.attention_scores, ("q", x), {}, TypeError, "q must contain real numbers"),
    (C.attention_scores, (np.ones(3), x), {}, ValueError, "q must have at least 2 dimension(s)"),
    (C.attention_scores, (np.full((2, 4), 1e200), np.full((2, 4), 1e200)), {}, ValueError,
     "q @ k^T overflowed to inf"),
    (C.chunked_attention, (nan, x, x), {}, ValueError, "q contains nan or inf"),
    (C.chunked_attention, (x, inf, x), {}, ValueError, "k contains nan or inf"),
    (C.chunked_attention, (x, x, x), {"block_size": 0}, ValueError, "block_size must be >= 1"),
    (C.chunked_attention, (x, x, x), {"mask": np.ones((3, 3))}, TypeError, "mask must be boolean"),
    (C.chunked_attention_with_logsumexp, (x, x, nan), {}, ValueError, "v contains nan or inf"),
    (C.chunked_attention_with_logsumexp, (x, x, x), {"block_size": -1}, ValueError,
     "block_size must be >= 1, got -1"),
    (C.chunked_attention_with_logsumexp, (np.ones((2, 3)), x, x), {}, ValueError,
     "q and k must have the same feature size d_k"),
    # masks
    (C.causal_mask, (0,), {}, ValueError, "n must be >= 1, got 0"),
    (C.causal_mask, (2.5,), {}, TypeError, "n must be an integer, got float 2.5"),
    (C.causal_mask, (True,), {}, TypeError, "n must be an integer, got bool"),
    (C.padding_mask, ([5], 3), {}, ValueError, "every length must be between 1 and n=3, got [5]"),
    (C.padding_mask, ([[1]], 3), {}, ValueError, "lengths must be a non-empty 1-D array of integers"),
    (C.padding_mask, ([1.5], 3), {}, ValueError, "lengths must be a non-empty 1-D array of integers"),
    (C.padding_mask, ([], 3), {}, ValueError, "lengths must be a non-empty 1-D array"),
    (C.project_qkv, (x, np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2))), {}, ValueError,
     "w_q must have shape (d_model=4, d_out)"),
    (C.project_qkv, (x, *[np.ones((4, 2))] * 3, np.ones(3)), {}, ValueError,
     "b_q must have shape (2,), got (3,)"),
    (C.project_qkv, (np.ones(4), *[np.ones((4, 2))] * 3), {}, ValueError,
     "x must have at least 2 dimension(s)"),
    (C.positional_encoding, (-1, 4), {}, ValueError, "num_positions must be >= 0, got -1"),
    (C.positional_encoding, (3, 5), {}, ValueError, "d_model must be a positive even number"),
    (C.positional_encoding, (3.0, 4), {}, TypeError, "num_positions must be an integer, got float"),
    # BLEU
    (C.corpus_bleu, (["a b c", "d e f"], [["a b c", "d e f"]]), {}, ValueError,
     "references looks like sacrebleu's reference streams"),
    (C.corpus_bleu, (["a b c", "d e f"], [["a b c", "d e f"], ["a b x", "d e y"]]), {},
     ValueError, "references[i] is a str or a list of the references of hypotheses[i]"),
    (C.corpus_bleu, ("a b", ["a b"]), {}, TypeError, "hypotheses must be a list of str, got str"),
    (C.corpus_bleu, (["a"], ["a", "b"]), {}, ValueError,
     "got 1 hypotheses and 2 reference entries"),
    (C.corpus_bleu, (["a"], ["a"]), {"tokenize": "intl"}, ValueError,
     "tokenize must be one of ['13a', 'none'], got 'intl'"),
    (C.sentence_bleu, (["a b"], "a b"), {}, TypeError, "hypothesis must be a str, got list"),
    (C.sentence_bleu, ("a b", 3), {}, TypeError, "references must be a str or a list of str"),
    (C.sentence_bleu, ("a b", "a b"), {"smooth_method": "foo"}, ValueError,
     "smooth_method must be one of"),
    (bleu_statistics, (["a b c"], [["a b c"]]), {}, TypeError,
     "hypotheses[0] must be a list of str tokens, got str (a str would be counted character"),
    (bleu_statistics, ([["a"]], ["a"]), {}, ValueError,
     "references[0] must be a non-empty list of token lists"),
    (bleu_statistics, ([["a"]], []), {}, ValueError, "got 1 hypotheses but 0 reference entries"),
    (bleu_statistics, ([[1, 2]], [[[1, 2]]]), {}, TypeError, "tokens must be str, got int"),
    (compute_bleu, ([1, 1], [1, 1], 2, 2), {}, ValueError,
     "counts and totals need max_ngram_order=4 entries, got 2 and 2"),
    (compute_bleu, ([1] * 4, [1] * 4, 1, 1), {"smooth_method": "x"}, ValueError,
     "smooth_method must be one of"),
    (compute_bleu, ([1] * 4, [1] * 4, -1, 1), {}, ValueError, "sys_len must be >= 0, got -1"),
    (C.ngram_counts, ("a b", 0), {}, ValueError, "n must be >= 1, got 0"),
    (C.ngram_counts, (3, 1), {}, TypeError, "tokens must be a str or a list of str tokens, got int"),
    (C.ngram_counts, ([1, 2], 1), {}, TypeError, "tokens must be a str or a list of str tokens"),
    (C.clipped_counts, ("a b", [], 1), {}, TypeError,
     "references must be a str or a non-empty list of references"),
    (C.clipped_counts, ("a b", 3, 1), {}, TypeError, "references must be a str or a non-empty"),
    (C.clipped_counts, ("a", "a", 0), {}, ValueError, "n must be >= 1, got 0"),
    (C.modified_precision, ("a b", 3, 1), {}, TypeError, "references must be a str or a non-empty"),
    (C.modified_precision, ("a", "a", -1), {}, ValueError, "n must be >= 1, got -1"),
    (C.modified_precision, (3, "a", 1), {}, TypeError, "tokens must be a str or a list of str"),
    (C.closest_ref_length, (3, []), {}, ValueError, "ref_lens must be a non-empty list of lengths"),
    (C.closest_ref_length, (-1, [2]), {}, ValueError, "hyp_len must be >= 0, got -1"),
    (C.closest_ref_length, ("3", [2]), {}, TypeError, "hyp_len must be an integer, got str"),
    (C.brevity_penalty, (-1, 2), {}, ValueError, "sys_len must be >= 0, got -1"),
    (C.brevity_penalty, ("a", 2), {}, TypeError, "sys_len must be an integer, got str"),
    (C.brevity_penalty, (1, -2), {}, ValueError, "ref_len must be >= 0, got -2"),
    (C.geometric_mean, ([],), {}, ValueError, "values is empty"),
    (C.geometric_mean, ([-1, 2],), {}, ValueError, "values must be >= 0, got [-1.0, 2.0]"),
    (C.geometric_mean, ([1, 2], [1]), {}, ValueError, "weights has 1 entries, values has 2"),
    (C.tokenize_13a, (3,), {}, TypeError, "line must be a str, got int"),
    (C.tokenize_13a, (["a"],), {}, TypeError, "line must be a str, got list"),
    (C.tokenize_13a, (None,), {}, TypeError, "line must be a str, got NoneType"),
    (tokenize_for_bleu, ("a", "intl"), {}, ValueError, "tokenize must be one of ['13a', 'none']"),
    (tokenize_for_bleu, (3,), {}, TypeError, "line must be a str, got int"),
    (tokenize_for_bleu, (b"a",), {}, TypeError, "line must be a str, got bytes"),
    # tokenisation and data
    (wordpiece, ("unaffable", "un##aff##able"), {}, TypeError,
     "vocab must be a set of tokens or a dict token -> id (a str would be searched as a substring)"),
    (wordpiece, ("a", None), {}, TypeError, "vocab must be a set of tokens"),
    (wordpiece, (3, {"a"}), {}, TypeError, "word must be a str, got int"),
    (word_tokens, (["a"],), {}, TypeError, "sentence must be a str, got list"),
    (word_tokens, (3,), {}, TypeError, "sentence must be a str, got int"),
    (word_tokens, (None,), {}, TypeError, "sentence must be a str, got NoneType"),
    (pair_input, ("ab", ["c"]), {}, TypeError, "tokens_a must be a list of tokens, got the str 'ab'"),
    (pair_input, (["a"], "cd"), {}, TypeError, "tokens_b must be a list of tokens, got the str"),
    (pair_input, (3, ["c"]), {}, TypeError, "tokens_a must be a list of tokens, got int"),
    (truncate_pair, ("abc", ["d"], 3), {}, TypeError, "tokens_a must be a list of tokens, got the str"),
    (truncate_pair, (["a"], ["b"], -1), {}, ValueError, "max_tokens must be >= 0, got -1"),
    (truncate_pair, (["a"], "bc", 3), {}, TypeError, "tokens_b must be a list of tokens, got the str"),
    (mask_tokens, (np.ones(3), rng), {"mask_id": 4, "vocab_size": 10}, TypeError,
     "input_ids must be integer token ids, got dtype float64"),
    (mask_tokens, (np.ones(3, int), rng), {"mask_id": 4, "vocab_size": 10, "mask_prob": 1.5},
     ValueError, "mask_prob must be a probability in [0, 1], got 1.5"),
    (mask_tokens, (["a", "b"], rng), {"mask_id": 4, "vocab_size": 10}, TypeError,
     "input_ids must be integer token ids"),
    (generate_pairs, (0,), {}, ValueError, "n must be >= 1, got 0"),
    (generate_pairs, (3, "de"), {}, ValueError, "target must be one of ('fr', 'ru'), got 'de'"),
    (generate_pairs, (3,), {"max_len": 0}, ValueError, "max_len must be >= 1, got 0"),
    (make_batch, ([], None, None), {}, ValueError, "pairs is empty"),
    (make_batch, ([("a b", "c")], None, VOCAB), {}, TypeError, "src_vocab must be a Vocab"),
    (make_batch, (["a b"], VOCAB, VOCAB), {}, TypeError,
     "pairs[0] must be a (source, target) pair of str, got 'a b'"),
    # training
    (learning_rate_at, (20, 10, 1e-3), {}, ValueError, "step must be < steps=10"),
    (learning_rate_at, (-1, 10, 1e-3), {}, ValueError, "step must be >= 0, got -1"),
    (learning_rate_at, (0, 10, 1e-3, 20), {}, ValueError, "warmup must be <= steps=10, got 20"),
    (learning_rate_at, (0, 10, 1e-3), {"schedule": "step"}, ValueError, "schedule must be"),
    (learning_rate_at, (0, 10, -1.0), {}, ValueError, "lr must be a finite number > 0, got -1.0"),
    (train, (nn.Linear(2, 1), lambda step: torch.ones(3, 2), _nan_loss), {"steps": 3, "progress": False},
     ValueError, "the loss is nan at step 0: training stopped"),
    (train, (nn.Linear(2, 1), lambda step: torch.ones(3, 2), _vector_loss),
     {"steps": 3, "progress": False}, TypeError, "loss_fn must return a scalar torch.Tensor"),
    (train, (np.ones(3), [], _nan_loss), {"steps": 3}, TypeError, "model must be a torch.nn.Module"),
    (translation_loss, (nn.Linear(2, 2), _empty_target_batch()), {}, ValueError,
     "batch.tgt_mask has no True position"),
    (translation_loss, (None, _empty_target_batch()), {}, TypeError,
     "model must be a torch.nn.Module, got NoneType"),
    (translation_loss, (nn.Linear(2, 2), {"src": 1}), {}, TypeError,
     "batch must be a course_lib.data.Batch, got dict"),
    # torch layers
    (C.MultiHeadAttention, (6, 4), {}, ValueError, "d_model=6 is not divisible by num_heads=4"),
    (C.MultiHeadAttention, (8, 2), {"dropout": 1.5}, ValueError, "dropout must be a probability"),
    (C.MultiHeadAttention, (8.0, 2), {}, TypeError, "d_model must be an integer, got float"),
    (C.EncoderLayer, (8, 2), {"activation": "swish"}, ValueError, "activation must be one of"),
    (C.EncoderLayer, (8, 2), {"layer_norm_eps": -1.0}, ValueError, "layer_norm_eps must be a finite"),
    (C.EncoderLayer, (8, 2, 0), {}, ValueError, "d_ff must be >= 1, got 0"),
    (C.DecoderLayer, (6, 4), {}, ValueError, "not divisible"),
    (C.DecoderLayer, (8, 2), {"layer_norm_eps": "1e-5"}, TypeError, "layer_norm_eps must be a positive number"),
    (C.DecoderLayer, (8, 2), {"dropout": -0.1}, ValueError, "dropout must be a probability"),
    (C.Encoder, (0, 8, 2), {}, ValueError, "num_layers must be >= 1, got 0"),
    (C.Encoder, (2, 8, 3), {}, ValueError, "not divisible"),
    (C.Encoder, (2, 8, 2), {"activation": "tanh"}, ValueError, "activation must be one of"),
    (C.Decoder, (1.5, 8, 2), {}, TypeError, "num_layers must be an integer"),
    (C.Decoder, (1, 8, 2), {"dropout": 1.0}, ValueError, "dropout must be a probability in [0, 1)"),
    (C.Decoder, (1, 0, 2), {}, ValueError, "d_model must be >= 1, got 0"),
    (FeedForward, (8, 0), {}, ValueError, "d_ff must be >= 1, got 0"),
    (FeedForward, (8, 16), {"activation": "GELU"}, ValueError, "activation must be one of"),
    (FeedForward, (8, 16), {"dropout": 2}, ValueError, "dropout must be a probability"),
    (C.count_parameters, (np.ones(3),), {}, TypeError, "module must be a torch.nn.Module, got ndarray"),
    (C.count_parameters, (None,), {}, TypeError, "module must be a torch.nn.Module, got NoneType"),
    (C.count_parameters, ("model",), {}, TypeError, "module must be a torch.nn.Module, got str"),
    (C.transformer_parameter_count, (0,), {}, ValueError, "d_model must be >= 1, got 0"),
    (C.transformer_parameter_count, (4,), {"num_encoder_layers": -1}, ValueError,
     "num_encoder_layers must be >= 0, got -1"),
    (C.transformer_parameter_count, (4.5,), {}, TypeError, "d_model must be an integer, got float"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "error", "fragment"),
    CASES,
    ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)],
)
def test_bad_input_is_refused_with_a_message(fn, args, kwargs, error, fragment):
    with pytest.raises(error) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda m: m(torch.ones(1, 3)), ValueError, "x must have shape (batch, n, d_model=8)"),
        (
            lambda m: m(torch.ones(1, 3, 8), torch.ones(1, 1, 4, dtype=torch.bool)),
            ValueError,
            "mask of shape (1, 1, 4) does not fit",
        ),
        (lambda m: m(np.ones((1, 3, 8))), TypeError, "x must be a torch.Tensor, got ndarray"),
        (lambda m: m(t3, torch.ones(1, 1, 3)), TypeError, "mask must be boolean"),
    ],
)
def test_encoder_layer_forward_bad_input(call, error, fragment):
    with pytest.raises(error, match=None) as info:
        call(C.EncoderLayer(8, 2))
    assert fragment in str(info.value)


def test_count_of_bad_inputs_per_callable():
    """At least three bad inputs for every callable in the table."""
    counts: dict[str, int] = {}
    for fn, *_ in CASES:
        counts[fn.__name__] = counts.get(fn.__name__, 0) + 1
    assert min(counts.values()) >= 3, {k: v for k, v in counts.items() if v < 3}
