"""SmolLM2-135M-Instruct in the course's ModernLM (course_lib.pretrained.load_smollm2) against
``transformers`` built from the same GGUF file: the tokenizer's ids (fast tier), the logits to
1e-4 and greedy cached generation token for token (slow tier: ``transformers`` loads the file
once per session, 14 s here and more on a busy machine)."""

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


@pytest.mark.slow  # transformers loads the GGUF file (14 s here; more on a busy machine)
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


CONVERSATIONS = [
    [{"role": "user", "content": "What is the first word of: open file read?"}],
    [{"role": "user", "content": "What is the first word of: open file read?"},
     {"role": "assistant", "content": "open"}],
    [{"role": "system", "content": "Answer with one word."},
     {"role": "user", "content": "Name a colour 🙂"},
     {"role": "assistant", "content": "Blue."},
     {"role": "user", "content": "  And another,\nplease?  "},
     {"role": "assistant", "content": "\nGreen — naïvely."}],
]  # fmt: skip


@pytest.mark.parametrize("generation_prompt", [False, True])
@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_render_chat_chatml_equals_apply_chat_template(smollm2, hf_tokenizer, messages,
                                                        generation_prompt):  # fmt: skip
    from course_lib import render_chat

    _, tokenizer = smollm2
    ids, mask = render_chat(messages, tokenizer, generation_prompt, template="chatml")
    expected = hf_tokenizer.apply_chat_template(
        messages, add_generation_prompt=generation_prompt, tokenize=True, return_dict=False
    )
    assert ids == list(expected)
    # the mask marks exactly each assistant reply and its <|im_end|>
    marked = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m],
                              skip_special_tokens=False)  # fmt: skip
    replies = [m["content"] + "<|im_end|>" for m in messages if m["role"] == "assistant"]
    assert marked == "".join(replies)


@pytest.mark.slow
def test_the_stored_reference_of_lecture_13_is_transformers_output(smollm2, hf_model):
    """course_lib/data/smollm2_reference.json (tools/training/smollm2_reference.py) against a fresh run."""
    import json
    from importlib.resources import files

    from tools.training.smollm2_reference import PROBE_IDS, PROMPTS, reference

    stored = json.loads(files("course_lib.data").joinpath("smollm2_reference.json").read_text())
    assert stored["probe_ids"] == PROBE_IDS and [r["prompt"] for r in stored["prompts"]] == PROMPTS
    model, tokenizer = smollm2
    for old, new in zip(stored["prompts"], reference(model, tokenizer, hf_model), strict=True):
        assert old["ids"] == new["ids"] and old["top_ids"] == new["top_ids"]
        assert old["greedy_ids"] == new["greedy_ids"] == new["course_greedy_ids"]
        torch.testing.assert_close(torch.tensor(old["probe_logits"]),
                                   torch.tensor(new["probe_logits"]), atol=1e-5, rtol=0)  # fmt: skip
        torch.testing.assert_close(torch.tensor(old["top_logits"]),
                                   torch.tensor(new["top_logits"]), atol=1e-5, rtol=0)  # fmt: skip
        assert new["max_abs_diff_all_logits"] < 1e-4
