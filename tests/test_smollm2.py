"""SmolLM2-135M-Instruct in the course's ModernLM (course_lib.pretrained.load_smollm2) against
``transformers`` built from the same GGUF file: the tokenizer's ids (fast tier), the logits to
1e-4 and greedy cached generation token for token (slow tier: ``transformers`` takes over a
minute to load the file, once per session)."""

from __future__ import annotations

import os

import pytest
import torch

from course_lib import generate
from course_lib.pretrained import load_smollm2, smollm2_path

# A varied text: code, accents, emoji, numbers, whitespace runs, contractions, other scripts.
TEXT = (
    'def add(a, b):\n    return a + b  # 2 spaces\n\n\tif x >= 10_000: print(f"{x!r}")\n'
    "Café déjà vu, naïve façade — Ångström, Straße, ĳ; Ça va? Don't, I'm, we've, they'll.\n"
    "Emoji: 🙂👍🏽🇫🇷 ❤️ … “quotes” «guillemets»   three spaces,\t\ttabs, trailing   \n"
    "Numbers: 3.14159, 1,234,567, 2024-11-28, 0x1F, 1e-5, 42nd, ½ ², phone +44 20 7946 0958.\n"
    "日本語のテキスト, русский текст, العربية, ελληνικά, हिन्दी. URL https://ex.com/a?b=1&c=2\n"
    "    indented\n\n\n   \n"
)
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village,",
    "Attention is all you need because",
]


@pytest.fixture(scope="module")
def smollm2():
    return load_smollm2()


@pytest.fixture(scope="session")
def hf_tokenizer():
    from transformers import AutoTokenizer

    path = smollm2_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@pytest.fixture(scope="session")
def hf_model():
    """``transformers``' LlamaForCausalLM from the same GGUF file (float32, eval mode)."""
    from transformers import LlamaForCausalLM

    path = smollm2_path()
    return LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).eval()


def test_what_the_file_holds(smollm2):
    model, tokenizer = smollm2
    c = model.config
    assert (c.num_layers, c.d_model, c.num_heads, c.num_kv_heads, c.d_ff) == (30, 576, 9, 3, 1536)
    assert (c.vocab_size, c.rope_theta, c.context_length, c.tie_weights) == (
        49152, 100000.0, 8192, True)  # fmt: skip
    assert model.lm_head.weight is model.token_embedding.weight
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert len(tokenizer) == 49152 and len(tokenizer.merges) == 48900
    assert not model.training


def test_the_tokenizer_gives_transformers_ids(smollm2, hf_tokenizer):
    _, tokenizer = smollm2
    for text in [TEXT, *TEXT.splitlines(keepends=True), *PROMPTS]:
        expected = hf_tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.encode(text) == expected, text
        assert tokenizer.decode(expected) == hf_tokenizer.decode(expected) == text
    assert len(tokenizer.encode(TEXT)) >= 250  # not trivially short (274 tokens)


@pytest.mark.slow  # transformers loads the GGUF file in over a minute
def test_the_weights_equal_transformers_after_its_q_k_reordering(smollm2, hf_model):
    from course_lib.interop import from_hf

    model, _ = smollm2
    copy = from_hf(hf_model)  # transformers' halves -> our interleaved rows: the file's order
    ours = model.state_dict()
    for name, value in copy.state_dict().items():
        torch.testing.assert_close(ours[name], value, atol=1e-6, rtol=0, msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("prompt", PROMPTS)
def test_the_logits_equal_transformers(smollm2, hf_model, prompt):
    model, tokenizer = smollm2
    ids = torch.tensor([tokenizer.encode(prompt)])
    with torch.no_grad():
        torch.testing.assert_close(model(ids), hf_model(ids).logits, atol=1e-4, rtol=0)


@pytest.mark.slow
def test_greedy_cached_generation_gives_transformers_tokens(smollm2, hf_model):
    model, tokenizer = smollm2
    for prompt in PROMPTS[:2]:
        ids = torch.tensor([tokenizer.encode(prompt)])
        ours = generate(model, ids, max_new_tokens=24, temperature=0)
        theirs = hf_model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False,
            use_cache=True, pad_token_id=2, eos_token_id=None,
        )  # fmt: skip
        assert ours.tolist() == theirs.tolist(), tokenizer.decode(ours[0])


def test_a_second_load_is_the_same_objects_and_the_cache_is_outside_the_repo(smollm2):
    from course_lib.pretrained import weights_cache_dir

    assert load_smollm2() is smollm2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert not str(weights_cache_dir().resolve()).startswith(root)
