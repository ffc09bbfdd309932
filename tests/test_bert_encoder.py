"""BertEncoder (the course's own layers) reproduces transformers' BertModel; MLM head; fill_mask."""

import pytest
import torch
from transformers import BertConfig, BertModel

from course_lib.configs import BertEncoderConfig
from course_lib.interop import from_hf
from course_lib.models.bert_encoder import BertEncoder, without_heads
from course_lib.models.mlm_head import MlmHead
from course_lib.nn.feedforward import ACTIVATIONS
from course_lib.pretrained import load_minilm

PAIRS = [
    ("The bank raised its interest rates.", "Customers were not pleased."),
    ("I sat by the river bank.", "The water was cold and the fish were biting."),
    ("Return a new list.", "It is empty."),
]

RANDOM_CONFIGS = [
    dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
         intermediate_size=64, max_position_embeddings=40),
    dict(vocab_size=61, hidden_size=48, num_hidden_layers=3, num_attention_heads=6,
         intermediate_size=80, hidden_act="gelu_new", layer_norm_eps=1e-5, type_vocab_size=3),
    dict(vocab_size=50, hidden_size=24, num_hidden_layers=1, num_attention_heads=2,
         intermediate_size=24, hidden_act="relu", layer_norm_eps=1e-7),
]  # fmt: skip


def _compare(hf, ours, input_ids, token_type_ids, attention_mask):
    with torch.no_grad():
        ref = hf(input_ids=input_ids, token_type_ids=token_type_ids,
                 attention_mask=attention_mask, output_hidden_states=True,
                 output_attentions=True)  # fmt: skip
        out = ours(input_ids, token_type_ids, attention_mask)
    assert len(out.hidden_states) == len(ref.hidden_states) == hf.config.num_hidden_layers + 1
    assert len(out.attentions) == len(ref.attentions) == hf.config.num_hidden_layers
    real = attention_mask.bool()
    dh = max(
        (a - b)[real].abs().max().item()
        for a, b in zip(out.hidden_states, ref.hidden_states, strict=True)
    )
    # Attention rows of real query tokens: (k, heads, n) after moving the query axis first.
    da = max(
        (a - b).transpose(1, 2)[real].abs().max().item()
        for a, b in zip(out.attentions, ref.attentions, strict=True)
    )
    dp = (out.pooler_output - ref.pooler_output).abs().max().item()
    return dh, da, dp


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def test_from_hf_reproduces_minilm_on_padded_sentence_pairs(minilm):
    tokenizer, model = minilm
    ours = from_hf(model)
    enc = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
                    return_tensors="pt")  # fmt: skip
    assert (enc["attention_mask"] == 0).any() and (enc["token_type_ids"] == 1).any()
    dh, da, dp = _compare(model, ours, enc["input_ids"], enc["token_type_ids"],
                          enc["attention_mask"])  # fmt: skip
    assert dh < 1e-5 and da < 1e-5 and dp < 1e-5, (dh, da, dp)
    # Padded query positions get (meaningless) vectors in both; they agree less tightly.
    with torch.no_grad():
        ref = model(**enc).last_hidden_state
        out = ours(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    assert torch.allclose(out.last_hidden_state, ref, atol=1e-4)


@pytest.mark.parametrize("kwargs", RANDOM_CONFIGS)
def test_from_hf_reproduces_random_configs(kwargs):
    torch.manual_seed(0)
    hf = BertModel(BertConfig(attn_implementation="eager", **kwargs)).eval()
    ours = from_hf(hf)
    assert ours.config.hidden_act == kwargs.get("hidden_act", "gelu")
    assert ours.config.layer_norm_eps == kwargs.get("layer_norm_eps", 1e-12)
    assert ours.encoder.layers[0].norm1.eps == kwargs.get("layer_norm_eps", 1e-12)
    assert ours.encoder.layers[0].ffn.activation == kwargs.get("hidden_act", "gelu")
    ids = torch.randint(1, kwargs["vocab_size"], (4, 11))
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 4:] = 0
    mask[3, 10:] = 0
    dh, da, dp = _compare(hf, ours, ids, types, mask)
    assert dh < 1e-5 and da < 1e-5 and dp < 1e-5, (dh, da, dp)


def test_attention_ignores_padding_and_rows_sum_to_one():
    torch.manual_seed(0)
    ours = BertEncoder(BertEncoderConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=32)).eval()  # fmt: skip
    ids = torch.randint(1, 30, (2, 6))
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    out = ours(ids, attention_mask=mask)
    w = out.attentions[0]
    assert w.shape == (2, 2, 6, 6)
    assert torch.allclose(w.sum(-1), torch.ones(2, 2, 6))
    assert (w[1, :, :, 4:] == 0).all()
    # Changing a padded token changes nothing at the real positions.
    ids2 = ids.clone()
    ids2[1, 5] = (ids[1, 5] % 29) + 1
    out2 = ours(ids2, attention_mask=mask)
    assert torch.allclose(out.last_hidden_state[1, :4], out2.last_hidden_state[1, :4])


def test_activations_are_transformers_activations():
    from transformers.activations import ACT2FN

    x = torch.linspace(-6, 6, 101)
    for name in ("gelu", "gelu_new", "relu"):
        assert torch.allclose(ACTIVATIONS[name](x), ACT2FN[name](x), atol=1e-6), name


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="num_attention_heads"):
        BertEncoderConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act"):
        BertEncoderConfig(hidden_act="swish")
    with pytest.raises(TypeError, match="BertModel"):
        from_hf(torch.nn.Linear(2, 2))
    ours = BertEncoder(BertEncoderConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=8,
                                         max_position_embeddings=5))  # fmt: skip
    with pytest.raises(ValueError, match="input_ids"):
        ours(torch.ones(3, dtype=torch.long))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        ours(torch.ones(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask"):
        ours(torch.ones(1, 4, dtype=torch.long), attention_mask=torch.ones(1, 3))


def test_mlm_head_is_berts_head_shape_with_tied_output():
    from transformers.models.bert.modeling_bert import BertLMPredictionHead

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=40, hidden_size=16)
    ref = BertLMPredictionHead(cfg).eval()
    head = MlmHead(16, 40, cfg.layer_norm_eps)
    emb = torch.randn(40, 16)
    with torch.no_grad():
        head.dense.load_state_dict(ref.transform.dense.state_dict())
        head.norm.load_state_dict(ref.transform.LayerNorm.state_dict())
        ref.decoder.weight.copy_(emb)
        head.bias.copy_(torch.randn(40))
        ref.bias.copy_(head.bias)
        ref.decoder.bias = ref.bias
        h = torch.randn(3, 5, 16)
        assert torch.allclose(head(h, emb), ref(h), atol=1e-5)
    with pytest.raises(ValueError, match="word_embeddings"):
        head(h, emb[:10])


def test_without_heads_matches_transformers_with_that_heads_output_zeroed():
    torch.manual_seed(0)
    cfg = BertConfig(attn_implementation="eager", **RANDOM_CONFIGS[0])
    hf = BertModel(cfg).eval()
    ours = from_hf(hf)
    ablated = without_heads(ours, [(1, 2), (0, 0)])
    d = cfg.hidden_size // cfg.num_attention_heads
    with torch.no_grad():  # the reference: transformers, W_O's columns of those heads zeroed
        hf.encoder.layer[1].attention.output.dense.weight[:, 2 * d : 3 * d] = 0
        hf.encoder.layer[0].attention.output.dense.weight[:, 0:d] = 0
    ids = torch.randint(1, 97, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    dh, da, _ = _compare(hf, ablated, ids, torch.zeros_like(ids), mask)
    assert dh < 1e-5 and da < 1e-5
    with torch.no_grad():  # and the original is unchanged (differs from the ablated model)
        assert not torch.allclose(ours(ids).last_hidden_state, ablated(ids).last_hidden_state)
    with pytest.raises(ValueError, match="layer, head"):
        without_heads(ours, [(2, 0)])


def test_fill_mask_equals_transformers_with_the_shipped_head(minilm):
    from course_lib.pretrained import MLM_HEAD_FILE, fill_mask, load_minilm_mlm

    tokenizer, model = minilm
    text = "If the file does not [MASK], an exception is raised."
    got = fill_mask(text, top_k=5)
    assert len(got) == 5 and all(isinstance(w, str) for w, _ in got)
    probs = [p for _, p in got]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    # Reference: transformers' BertModel (frozen MiniLM), the hidden state of the layer the
    # head was trained on, then the head by hand from the checkpoint's tensors.
    ckpt = torch.load(MLM_HEAD_FILE, map_location="cpu", weights_only=True)
    _, _, head, meta = load_minilm_mlm()
    assert meta["history"][-1]["step"] == meta["training"]["steps"]
    assert meta["layer"] == ckpt["layer"] and 0 <= meta["layer"] <= 6
    enc = tokenizer(text, return_tensors="pt")
    where = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        h = model(**enc, output_hidden_states=True).hidden_states[meta["layer"]][0, where]
        dense = {k: v.float() for k, v in ckpt["head"].items()}
        x = torch.nn.functional.gelu(h @ dense["dense.weight"].T + dense["dense.bias"])
        x = torch.nn.functional.layer_norm(
            x, (384,), dense["norm.weight"], dense["norm.bias"], 1e-12
        )
        p = torch.softmax(x @ model.embeddings.word_embeddings.weight.T + dense["bias"], -1)
    top = p.topk(5)
    assert [w for w, _ in got] == tokenizer.convert_ids_to_tokens(top.indices.tolist())
    assert torch.allclose(torch.tensor(probs), top.values, atol=1e-5)
    with pytest.raises(ValueError, match="exactly one"):
        fill_mask("no mask here")
    with pytest.raises(TypeError, match="text"):
        fill_mask(3)


MIN_TECHNICAL_HITS = 8  # of N_TECHNICAL_PROBES = 14, "most" (the shipped head: 9)


def test_shipped_mlm_head_fills_most_technical_blanks():
    """The issue's target: an acceptable word in the top 5 for most technical sentences the
    head never saw (FILL_MASK_PROBES; tools/training/train_mlm_head.py keeps them out of its text),
    and held-out content words well above the most-frequent-words baseline."""
    from course_lib.pretrained import (
        FILL_MASK_PROBES,
        MLM_HEAD_FILE,
        N_TECHNICAL_PROBES,
        fill_mask,
        load_minilm_mlm,
    )

    assert MLM_HEAD_FILE.stat().st_size < 1_000_000  # the head only, float16
    hits = [
        any(word in ok for word, _ in fill_mask(text, top_k=5))
        for text, ok in FILL_MASK_PROBES[:N_TECHNICAL_PROBES]
    ]
    assert sum(hits) >= MIN_TECHNICAL_HITS, hits
    test = load_minilm_mlm()[3]["history"][-1]["test"]
    assert test["content_top5"] > 2 * test["baseline_content_top5"]


def test_from_hf_refuses_models_it_would_copy_wrong():
    # RoBERTa (other position ids) and a BERT used as a decoder (causal) give other numbers: the
    # copy must refuse them, not run them as BERT.
    from transformers import RobertaConfig, RobertaModel

    small = dict(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=16, max_position_embeddings=16)  # fmt: skip
    with pytest.raises(TypeError, match="got RobertaModel"):
        from_hf(RobertaModel(RobertaConfig(**small)))
    with pytest.raises(ValueError, match="config.is_decoder=True is not supported"):
        from_hf(BertModel(BertConfig(**small, is_decoder=True)))
