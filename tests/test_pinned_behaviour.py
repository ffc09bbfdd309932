"""Behaviour pinned so that a subtle bug fails a test (each test names the mutant it kills;
``python -m tools.dev.mutate`` applies those mutants and reports any that survive)."""

import math

import numpy as np
import pytest
import torch
from test_translation_models import Table

from course_lib import MultiHeadAttention
from course_lib.data.pretraining import IGNORE_INDEX, mask_tokens
from course_lib.models import beam_search
from course_lib.training import TrainingLog


def test_attention_dropout_is_active_in_training_only():
    """Mutant: the attention weights' dropout never applied."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    plain = MultiHeadAttention(8, 2, dropout=0.0)
    plain.load_state_dict(mha.state_dict())
    x = torch.randn(2, 5, 8)
    mha.eval()
    torch.testing.assert_close(mha(x, x, x), plain(x, x, x))  # eval: no dropout
    mha.train()
    out1, w1 = mha(x, x, x), mha.attention_weights
    out2 = mha(x, x, x)
    assert not torch.allclose(out1, plain(x, x, x))  # training: dropout changes the output
    assert not torch.allclose(out1, out2)  # ... differently every call
    # and the weights stored are the ones before dropout (rows still sum to 1)
    torch.testing.assert_close(w1.sum(-1), torch.ones(2, 2, 5))


def test_mlm_rule_is_80_10_10_within_a_tolerance_that_rejects_78_12_10():
    """Mutant: [MASK] with probability 0.78, a random token with 0.12."""
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 1000, size=(2000, 500))  # 1e6 tokens, ~150,000 picked
    masked, labels = mask_tokens(ids, rng, mask_id=4, vocab_size=1000)
    picked = labels != IGNORE_INDEX
    n = int(picked.sum())
    share_mask = float((masked[picked] == 4).mean())
    share_same = float((masked[picked] == ids[picked]).mean())
    share_random = 1 - share_mask - share_same
    sigma = math.sqrt(0.8 * 0.2 / n)  # ~0.001: 0.02 off is ~20 sigma
    assert abs(share_mask - 0.8) < 5 * sigma
    assert abs(share_random - 0.1 * (1 - 1 / 995)) < 5 * sigma
    assert abs(n / ids.size - 0.15) < 5 * math.sqrt(0.15 * 0.85 / ids.size)


def test_smoothed_is_the_mean_of_the_last_window_losses():
    """Mutant: the running mean over one value too many (or too few)."""
    log = TrainingLog(losses=[1.0, 2.0, 3.0, 4.0, 10.0])
    assert log.smoothed(2) == [1.0, 1.5, 2.5, 3.5, 7.0]
    assert log.smoothed(3) == pytest.approx([1.0, 1.5, 2.0, 3.0, 17 / 3])
    assert log.smoothed(1) == log.losses


class _Table(Table):
    """Fixed next-word probabilities by prefix (ids: 2 = <eos>, 3 = a)."""

    P = {(): {2: 0.5, 3: 0.5}, (3,): {2: 0.6, 3: 0.4}}


def test_length_penalty_counts_words_and_eos_but_not_the_start_token():
    """Mutant: the length in log P / length ** alpha counts <bos> too.

    "<eos>": P = 0.5, 1 token -> log(0.5) / 1 = -0.693; "a <eos>": P = 0.3, 2 tokens ->
    log(0.3) / 2 = -0.602, so alpha = 1 picks "a <eos>". Counting <bos> would give
    -0.347 and -0.401 and pick "<eos>".
    """
    src = torch.ones(1, 3, dtype=torch.long)
    kw = {"beam_size": 2, "max_new_tokens": 2}
    assert beam_search(_Table(), src, src == 1, **kw) == [2]  # alpha = 0: the most probable
    assert beam_search(_Table(), src, src == 1, length_penalty=1.0, **kw) == [3, 2]


def test_multi_piece_word_vector_is_the_mean_of_its_different_pieces():
    """Mutant: a word split into WordPieces represented by its first piece only."""
    from course_lib.pretrained import load_minilm, word_vectors

    tokenizer, model = load_minilm()
    sentence, word = "An unaffable person.", "unaffable"
    enc = tokenizer(sentence, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    pieces = tokenizer.tokenize(word)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    i = tokens.index(pieces[0])
    assert len(pieces) == 3 and tokens[i : i + 3] == pieces
    hidden = torch.stack(out.hidden_states)[:, 0, i : i + 3]  # (7 layers, 3 pieces, 384)
    assert (hidden[:, 0] - hidden[:, 1]).abs().max() > 0.1  # the pieces' vectors differ
    torch.testing.assert_close(word_vectors(sentence, word), hidden.mean(dim=1))
