"""llama.cpp's block formats read back (course_lib.inference.dequantize) against a block worked by
hand and against ``gguf.quants.dequantize`` (the reference), bit for bit, on real tensors of
SmolLM2's file and on random blocks; every tensor of the file is in the slow tier."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize as gguf_dequantize
from gguf.quants import quantize as gguf_quantize

from course_lib.inference import BLOCK_BYTES, dequantize
from course_lib.interop.gguf import read_gguf
from course_lib.pretrained import smollm2_path


@pytest.fixture(scope="module")
def smollm2_file():
    return read_gguf(smollm2_path())


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_a_q4_1_block_worked_by_hand():
    # d = 0.5, m = -1; byte j holds weight j (low four bits) = j and weight j + 16 (high) = 15 - j
    block = np.concatenate([
        np.array([0.5], np.float16).view(np.uint8), np.array([-1.0], np.float16).view(np.uint8),
        np.array([j | (15 - j) << 4 for j in range(16)], np.uint8),
    ])  # fmt: skip
    w = dequantize(block, "Q4_1", (32,))
    expected = [0.5 * j - 1 for j in range(16)] + [0.5 * (15 - j) - 1 for j in range(16)]
    assert w.tolist() == expected


def test_q8_0_and_q4_0_blocks_worked_by_hand():
    scale = np.array([0.25], np.float16).view(np.uint8)
    q8 = np.concatenate([scale, np.arange(-16, 16, dtype=np.int8).view(np.uint8)])
    assert dequantize(q8, "Q8_0", (1, 32)).tolist() == [[0.25 * q for q in range(-16, 16)]]
    q4 = np.concatenate([scale, np.full(16, 0x3C, np.uint8)])  # low 12, high 3
    assert dequantize(q4, "Q4_0", (32,)).tolist() == [0.25 * 4] * 16 + [0.25 * -5] * 16


@pytest.mark.parametrize("fmt", ["Q8_0", "Q4_0", "Q4_1"])
def test_random_blocks_equal_gguf_bit_for_bit(fmt):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((48, 256)) * rng.uniform(0.01, 3, (48, 1))).astype(np.float32)
    blocks = gguf_quantize(x, GGMLQuantizationType[fmt])  # the reference's own bytes
    assert blocks.nbytes == x.size // 32 * BLOCK_BYTES[fmt]
    ours = dequantize(blocks, fmt, x.shape)
    assert _same_bits(ours, gguf_dequantize(blocks, GGMLQuantizationType[fmt]))


@pytest.mark.parametrize(
    "name",
    [
        "blk.0.attn_q.weight",
        "blk.0.attn_k.weight",
        "blk.17.ffn_down.weight",
        "blk.29.ffn_up.weight",
    ],
)
def test_real_q4_1_tensors_equal_gguf_bit_for_bit(smollm2_file, name):
    shape, fmt, _ = smollm2_file.tensors[name]
    assert fmt == "Q4_1"
    raw = smollm2_file.raw(name)
    reference = gguf_dequantize(raw, GGMLQuantizationType.Q4_1).reshape(shape)
    assert _same_bits(dequantize(raw, fmt, shape), reference)


def test_the_q8_0_embedding_rows_equal_gguf_bit_for_bit(smollm2_file):
    (vocab, d), fmt, _ = smollm2_file.tensors["token_embd.weight"]
    assert fmt == "Q8_0" and (vocab, d) == (49152, 576)
    rows = 2000  # rows are whole blocks: the first rows are the first bytes
    raw = smollm2_file.raw("token_embd.weight")[: rows * d // 32 * BLOCK_BYTES["Q8_0"]]
    reference = gguf_dequantize(raw, GGMLQuantizationType.Q8_0).reshape(rows, d)
    assert _same_bits(dequantize(raw, fmt, (rows, d)), reference)


@pytest.mark.slow  # 272 tensors, 134.5 M weights, both dequantisers: a few seconds
def test_every_tensor_of_the_file_equals_gguf_bit_for_bit(smollm2_file):
    kinds = {}
    for name, (shape, fmt, _) in smollm2_file.tensors.items():
        raw = smollm2_file.raw(name)
        reference = gguf_dequantize(raw, GGMLQuantizationType[fmt]).reshape(shape)
        assert _same_bits(smollm2_file.tensor(name), reference), name
        kinds[fmt] = kinds.get(fmt, 0) + 1
    assert kinds == {"Q4_1": 210, "Q8_0": 1, "F32": 61}
