"""GPT is GPT-2: weights copied from transformers' GPT2LMHeadModel give the same logits, loss
and greedy generations (random-init configs, built offline)."""

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model
from transformers.utils import logging as hf_logging

from course_lib import (
    GPT,
    GPTConfig,
    KVCache,
    count_parameters,
    generate,
    gpt_parameter_count,
    lm_loss,
)
from course_lib.interop import from_hf

hf_logging.set_verbosity_error()

CONFIGS = [
    {"vocab_size": 97, "n_positions": 32, "n_embd": 48, "n_layer": 3, "n_head": 4},
    {"vocab_size": 301, "n_positions": 20, "n_embd": 64, "n_layer": 1, "n_head": 8,
     "n_inner": 100, "activation_function": "gelu", "layer_norm_epsilon": 1e-3},
    {"vocab_size": 50, "n_positions": 64, "n_embd": 24, "n_layer": 2, "n_head": 1,
     "activation_function": "relu"},
    {"vocab_size": 1000, "n_positions": 16, "n_embd": 96, "n_layer": 4, "n_head": 12},
]  # fmt: skip


def _hf(seed: int = 0, tie: bool = True, **config) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    cfg = GPT2Config(**config, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=0, eos_token_id=0, tie_word_embeddings=tie)  # fmt: skip
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # non-trivial LayerNorms and biases, so a mix-up cannot hide
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("config", CONFIGS)
def test_from_hf_reproduces_logits(config):
    hf = _hf(**config)
    ours = from_hf(hf)
    ids = torch.randint(0, config["vocab_size"], (3, config["n_positions"]))
    with torch.no_grad():
        diff = (ours(ids) - hf(ids).logits).abs().max().item()
    assert diff < 1e-5
    assert count_parameters(ours) == hf.num_parameters()


def test_from_hf_untied_head_and_bare_model():
    hf = _hf(tie=False, **CONFIGS[0])
    assert hf.lm_head.weight.data_ptr() != hf.transformer.wte.weight.data_ptr()
    ours = from_hf(hf)
    assert not ours.config.tie_weights
    ids = torch.randint(0, 97, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), hf(ids).logits, rtol=0, atol=1e-5)
    bare = from_hf(hf.transformer)  # no LM head: scores against the embeddings
    assert bare.config.tie_weights


def test_lm_loss_equals_transformers_loss_with_labels():
    hf = _hf(**CONFIGS[0])
    ours = from_hf(hf)
    ids = torch.randint(0, 97, (4, 17))
    with torch.no_grad():
        ref = hf(ids[:, :-1], labels=ids[:, :-1]).loss  # transformers shifts inside
        ref_full = hf(ids, labels=ids).loss
        assert abs(lm_loss(ours, ids).item() - ref_full.item()) < 1e-5
        assert abs(lm_loss(ours, ids[:, :-1]).item() - ref.item()) < 1e-5


@pytest.mark.parametrize("config", CONFIGS[:2])
def test_greedy_generation_equals_transformers_generate(config):
    hf = _hf(seed=1, **config)
    ours = from_hf(hf)
    ids = torch.randint(0, config["vocab_size"], (2, 4), generator=torch.Generator().manual_seed(0))
    new = config["n_positions"] - 4
    theirs = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                         min_new_tokens=new, do_sample=False, pad_token_id=0)  # fmt: skip
    with_cache = generate(ours, ids, new, temperature=0)
    without = generate(ours, ids, new, temperature=0, use_cache=False)
    assert torch.equal(with_cache, without)
    assert torch.equal(with_cache, theirs)


def test_cached_forward_equals_full_forward():
    hf = _hf(**CONFIGS[0])
    ours = from_hf(hf)
    ids = torch.randint(0, 97, (2, 12))
    cache = KVCache()
    with torch.no_grad():
        parts = [ours(ids[:, :7], cache)] + [ours(ids[:, t : t + 1], cache) for t in range(7, 12)]
        torch.testing.assert_close(torch.cat(parts, 1), ours(ids), rtol=0, atol=1e-5)
    assert len(cache) == 12


def test_cached_forward_equals_transformers_past_key_values():
    hf = _hf(**CONFIGS[3])
    ours = from_hf(hf)
    ids = torch.randint(0, 1000, (2, 16))
    cache = KVCache()
    with torch.no_grad():
        out = hf(ids[:, :9], use_cache=True)  # transformers' own KV cache as the reference
        theirs = [out.logits]
        ours_parts = [ours(ids[:, :9], cache)]
        for t in range(9, 16):
            out = hf(ids[:, t : t + 1], past_key_values=out.past_key_values, use_cache=True)
            theirs.append(out.logits)
            ours_parts.append(ours(ids[:, t : t + 1], cache))
    torch.testing.assert_close(torch.cat(ours_parts, 1), torch.cat(theirs, 1), rtol=0, atol=1e-5)


def test_parameter_count_formula():
    assert gpt_parameter_count() == 124_439_808  # GPT-2 small, by formula
    for cfg in CONFIGS:
        hf = _hf(**cfg)
        got = gpt_parameter_count(cfg["vocab_size"], cfg["n_positions"], cfg["n_embd"],
                                  cfg["n_layer"], cfg.get("n_inner"))  # fmt: skip
        assert got == hf.num_parameters()
    model = GPT(GPTConfig(50, 16, 32, 4, 2, tie_weights=False))
    assert count_parameters(model) == gpt_parameter_count(50, 16, 32, 2, tie_weights=False)


def test_tied_head_shares_the_embedding_and_init_is_gpt2s():
    torch.manual_seed(0)
    model = GPT(GPTConfig(500, 32, 64, 4, 8))
    assert model.lm_head.weight is model.token_embedding.weight
    assert abs(model.token_embedding.weight.std().item() - 0.02) < 0.001
    proj = torch.cat([b.attn.w_o.weight.flatten() for b in model.blocks])
    assert abs(proj.std().item() - 0.02 / 4) < 0.0005  # scaled by 1/sqrt(2 * 8 layers)
    assert GPT(model.config).config == model.config


def test_forward_errors():
    model = GPT(GPTConfig(20, 8, 16, 2, 1))
    with pytest.raises(ValueError, match="context_length=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    cache = KVCache()
    model(torch.zeros(1, 6, dtype=torch.long), cache)
    with pytest.raises(ValueError, match=r"positions 6\.\.8"):
        model(torch.zeros(1, 3, dtype=torch.long), cache)
    with pytest.raises(TypeError, match=r"torch.long tensor of token ids \(batch, n\)"):
        model(torch.zeros(1, 3))
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        model(torch.zeros(1, 3, dtype=torch.long), cache=[])
    with pytest.raises(ValueError, match="n >= 1"):
        lm_loss(model, torch.zeros(1, 1, dtype=torch.long))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_model": 30, "num_heads": 4}, "not divisible"),
        ({"activation": "swish"}, "activation must be one of"),
        ({"dropout": -0.1}, "dropout"),
        ({"context_length": 0}, "context_length"),
    ],
)
def test_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**{"vocab_size": 10, "context_length": 8, **kwargs})


def test_from_hf_refuses_what_it_cannot_copy():
    with pytest.raises(TypeError, match="GPT2LMHeadModel"):
        from_hf(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="GPTConfig"):
        GPT({"vocab_size": 10})
    cfg = {"vocab_size": 20, "n_positions": 8, "n_embd": 16, "n_layer": 1, "n_head": 2}
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx"):
        from_hf(GPT2Model(GPT2Config(**cfg, scale_attn_by_inverse_layer_idx=True)))
    with pytest.raises(ValueError, match="one dropout rate"):
        from_hf(GPT2Model(GPT2Config(**cfg, attn_pdrop=0.2)))
    with pytest.raises(ValueError, match="activation_function"):
        from_hf(GPT2Model(GPT2Config(**cfg, activation_function="silu")))


def test_shipped_checkpoint_loads_safely_and_beats_the_bigram():
    from course_lib import load_tiny_gpt
    from course_lib.configs import TINY_GPT_CONFIG
    from course_lib.data.language_modeling import evaluate_lm, lm_corpus
    from course_lib.models.gpt import GPT_CHECKPOINT
    from course_lib.models.ngram import bigram_lm

    assert GPT_CHECKPOINT.stat().st_size < 3_000_000
    model, meta = load_tiny_gpt()
    assert model.config == TINY_GPT_CONFIG and not model.training
    assert model.lm_head.weight is model.token_embedding.weight
    assert meta["best"]["step"] in [h["step"] for h in meta["history"]]
    corpus = lm_corpus(TINY_GPT_CONFIG.vocab_size)
    held = evaluate_lm(model, corpus.held_out_ids)
    assert abs(held - meta["best"]["held_out_loss"]) < 2e-3  # float16 weights, same numbers
    bigram = bigram_lm(corpus.train_ids, TINY_GPT_CONFIG.vocab_size, 30).nll(corpus.held_out_ids)
    assert held < 0.85 * bigram  # issue 13: at least 15 % below the bigram (bits/char ratio)
