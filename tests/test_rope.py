"""RoPE (numpy for the board, torch inside ModernLM) against hand-worked values and
transformers' Llama rotary embedding."""

import math

import numpy as np
import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

from course_lib import halves_to_interleaved, positional_encoding, rope, rope_frequencies
from course_lib.nn.rope import rotate


def test_hand_worked_values():
    # head_dim 2: the pair (1, 0) turns by 1 radian per position.
    out = rope(np.array([[1.0, 0.0]] * 3), [0, 1, 2])
    assert np.allclose(out, [[1, 0], [math.cos(1), math.sin(1)], [math.cos(2), math.sin(2)]])
    # head_dim 4, theta 100: omega = [1, 100 ** (-1/2)] = [1, 0.1]; position 3.
    got = rope(np.array([[1.0, 0.0, 0.0, 1.0]]), [3], theta=100.0)
    assert np.allclose(got, [[math.cos(3), math.sin(3), -math.sin(0.3), math.cos(0.3)]])
    assert np.allclose(rope_frequencies(4, 100.0), [1.0, 0.1])


def test_frequencies_are_lecture_04s():
    # Row pos of the sinusoidal table holds (sin, cos) of pos * omega_i: the same omega_i.
    table = positional_encoding(2, 16)
    assert np.allclose(np.arcsin(table[1, 0::2]), rope_frequencies(16))


# transformers computes the angles position * omega in float32 even for float64 inputs; ours
# are float64. At positions < 50 that differs by a few 1e-6, the size of a float32 rounding.
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 5e-6), (torch.float32, 1e-5)])
@pytest.mark.parametrize("head_dim,theta", [(8, 10000.0), (16, 500000.0), (2, 10.0)])
def test_equals_transformers_after_permuting_halves(dtype, tol, head_dim, theta):
    cfg = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                      rope_parameters={"rope_type": "default", "rope_theta": theta})  # fmt: skip
    rotary = LlamaRotaryEmbedding(cfg)
    q = torch.randn(2, 4, 40, head_dim, dtype=dtype)
    k = torch.randn(2, 4, 40, head_dim, dtype=dtype)
    positions = torch.arange(40) + 7
    cos, sin = rotary(q, positions[None].expand(2, -1))
    hf_q, hf_k = apply_rotary_pos_emb(q, k, cos, sin)  # halves pairing
    perm = torch.as_tensor(halves_to_interleaved(head_dim))
    ours_q = rotate(q[..., perm], positions, theta)  # interleaved pairing, in torch
    ours_k = rotate(k[..., perm], positions, theta)
    assert ours_q.dtype == dtype
    board = rope(q[..., perm].double().numpy(), positions.numpy(), theta)  # the numpy version
    assert np.abs(board - hf_q[..., perm].double().numpy()).max() < tol
    assert (ours_q - hf_q[..., perm]).abs().max() < tol
    assert (ours_k - hf_k[..., perm]).abs().max() < tol
    # Scores do not care which pairing: both give the same q . k.
    scores_hf = hf_q @ hf_k.transpose(-1, -2)
    scores_ours = ours_q @ ours_k.transpose(-1, -2)
    assert (scores_hf - scores_ours).abs().max() < 20 * tol


def test_numpy_equals_torch_and_batched_positions():
    x = np.random.default_rng(1).normal(size=(3, 2, 5, 6))
    pos = np.array([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [3, 3, 3, 3, 3]])[:, None, :]
    a = rope(x, pos)
    for i in range(3):  # torch's rotate takes one row of positions (n,), as the model has
        b = rotate(torch.as_tensor(x[i]), torch.as_tensor(pos[i, 0])).numpy()
        assert np.allclose(a[i], b, atol=1e-12)
    assert np.allclose(a[1], rope(x[1], np.arange(10, 15)))
    f32 = rotate(torch.as_tensor(x[0], dtype=torch.float32), torch.arange(5))
    assert f32.dtype == torch.float32 and np.allclose(f32.numpy(), a[0], atol=1e-6)


def test_score_depends_only_on_distance():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(1, 64)), rng.normal(size=(1, 64))
    for m, n in [(0, 5), (3, 3), (17, 2), (100, 163)]:
        base = (rope(q, [m]) @ rope(k, [n]).T).item()
        for shift in (1, 37, 1000, 123456):
            shifted = (rope(q, [m + shift]) @ rope(k, [n + shift]).T).item()
            assert shifted == pytest.approx(base, abs=1e-9)
        # q^T R(m)^T R(n) k = q^T R(n - m) k: rotate k alone by the distance.
        assert (q @ rope(k, [n - m]).T).item() == pytest.approx(base, abs=1e-9)


def test_rotation_keeps_length_and_position_zero_is_identity():
    x = np.random.default_rng(3).normal(size=(9, 12))
    out = rope(x, np.arange(9) * 11)
    assert np.allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1))
    assert np.array_equal(rope(x[:1], [0]), x[:1])


def test_halves_to_interleaved():
    assert halves_to_interleaved(6).tolist() == [0, 3, 1, 4, 2, 5]


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="head_dim"):
        rope(np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match=r"positions must have shape \(n,\).*n = 2"):
        rope(np.ones((2, 4)), [0, 1, 2])
    with pytest.raises(TypeError, match="positions must be integers"):
        rope(np.ones((2, 4)), ["a", "b"])
    with pytest.raises(ValueError, match="theta"):
        rope(np.ones((2, 4)), [0, 1], theta=0.5)
    with pytest.raises(ValueError, match="theta must be a finite number > 1, got inf"):
        rope(np.ones((2, 4)), [0, 1], theta=float("inf"))
    with pytest.raises(ValueError, match="positions must be whole numbers"):
        rope(np.ones((2, 4)), [0, 0.5])
    assert np.allclose(rope(np.ones((2, 4)), [0.0, 1.0]), rope(np.ones((2, 4)), [0, 1]))
