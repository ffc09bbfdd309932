"""The packaged MiniLM encoder: offline loading, per-layer word vectors, attention maps."""

import numpy as np
import pytest
import torch

from course_lib.pretrained import (
    MINILM_MAX_POSITIONS,
    attention_maps,
    cosine_by_layer,
    encode,
    load_minilm,
    minilm_path,
    word_vectors,
)

RIVER = "I sat by the river bank."
MONEY = "I deposited money in the bank."


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def test_loads_the_packaged_bert_encoder(minilm):
    tokenizer, model = minilm
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size) == (6, 12, 384)
    assert tokenizer.vocab_size == 30522 and (minilm_path() / "vocab.txt").exists()
    assert model.config._attn_implementation == "eager"
    assert not model.training
    # the length the course's functions refuse beyond (issue 49) is the model's own
    assert cfg.max_position_embeddings == MINILM_MAX_POSITIONS


def test_word_vectors_are_the_hidden_states(minilm):
    tokenizer, model = minilm
    enc = tokenizer(RIVER, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    i = tokens.index("bank")
    vecs = word_vectors(RIVER, "bank")
    assert vecs.shape == (7, 384)
    for layer in range(7):
        torch.testing.assert_close(vecs[layer], out.hidden_states[layer][0, i])
    torch.testing.assert_close(vecs[-1], out.last_hidden_state[0, i])


def test_multi_piece_words_are_averaged(minilm):
    tokenizer, _ = minilm
    assert len(tokenizer.tokenize("unaffable")) == 3
    vecs = word_vectors("An unaffable person.", "unaffable")
    tokens, _ = attention_maps("An unaffable person.")
    assert vecs.shape == (7, 384) and tokens[2:5] == tokenizer.tokenize("unaffable")


def test_bank_cosines(minilm):
    cos = cosine_by_layer(RIVER, MONEY, "bank")
    assert cos.shape == (7,)
    # Layer 0 sees no context: same token, same position (6), same segment -> the same vector.
    assert cos[0] == pytest.approx(1.0, abs=1e-6)
    assert (cos[1:] < 0.95).all()
    # At another position the position embedding differs, so layer 0 is no longer exactly 1.
    moved = cosine_by_layer(RIVER, "The bank approved my loan.", "bank")
    assert moved[0] < 0.999


def test_attention_maps(minilm):
    tokens, att = attention_maps(RIVER)
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert att.shape == (6, 12, len(tokens), len(tokens))
    np.testing.assert_allclose(att.sum(-1).numpy(), 1.0, atol=1e-5)


def test_errors(minilm):
    with pytest.raises(ValueError, match="occurs 0 time"):
        word_vectors(RIVER, "money")
    with pytest.raises(ValueError, match="occurrence=1 needs more"):
        word_vectors(RIVER, "bank", occurrence=1)
    with pytest.raises(TypeError, match="sentence must be a str"):
        attention_maps(["not", "a", "string"])


def test_the_longest_text_minilm_reads_is_read(minilm):
    """512 tokens with [CLS] and [SEP] is read; one more is refused (tests/test_bad_inputs_torch.py)."""
    tokens, out = encode(" ".join(["word"] * (MINILM_MAX_POSITIONS - 2)))
    assert len(tokens) == MINILM_MAX_POSITIONS and out.last_hidden_state.shape[1] == 512
    with pytest.raises(ValueError, match="text is 513 WordPiece tokens long"):
        encode(" ".join(["word"] * (MINILM_MAX_POSITIONS - 1)))
