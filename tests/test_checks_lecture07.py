"""The lecture 07 checks pass the reference answers and reject plausible wrong ones."""

import numpy as np
import pytest
import torch

from course_lib import additive_attention, causal_mask, padding_mask
from course_lib.checks import ExerciseError
from course_lib.checks.lecture07 import (
    check_additive_attention,
    check_decoder_self_mask,
    check_greedy_decode,
)
from course_lib.models import greedy_decode


def stub(*args, **kwargs):
    raise NotImplementedError("Exercise: replace this line with your answer")


# ---- 7.1 ----


def test_additive_attention_reference_passes(capsys):
    check_additive_attention(additive_attention)
    assert "Exercise 7.1 passed" in capsys.readouterr().out


def test_additive_attention_without_tanh_fails():
    def no_tanh(s, h, wq, wk, v, mask=None):
        e = (s @ wq + h @ wk) @ v
        if mask is not None:
            e = np.where(mask, e, -np.inf)
        w = np.exp(e - e.max())
        w /= w.sum()
        return w @ h, w

    with pytest.raises(ExerciseError, match=r"(?s)weights for .*expected.*got"):
        check_additive_attention(no_tanh)


def test_additive_attention_ignoring_the_mask_fails():
    def no_mask(s, h, wq, wk, v, mask=None):
        return additive_attention(s, h, wq, wk, v)

    with pytest.raises(ExerciseError, match="masked out"):
        check_additive_attention(no_mask)


def test_additive_attention_stub_fails():
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_additive_attention(stub)


# ---- 7.2 ----


def reference_mask(lengths, n):
    return causal_mask(n)[None] & padding_mask(np.asarray(lengths), n)


def test_decoder_mask_reference_passes(capsys):
    check_decoder_self_mask(reference_mask)
    assert "Exercise 7.2 passed" in capsys.readouterr().out


def test_decoder_mask_wrong_answers_fail():
    def causal_only(lengths, n):
        return np.broadcast_to(causal_mask(n), (len(lengths), n, n))

    with pytest.raises(ExerciseError, match=r"(?s)expected.*got"):
        check_decoder_self_mask(causal_only)

    def upper(lengths, n):  # the future instead of the past
        return np.triu(np.ones((n, n), bool))[None] & padding_mask(np.asarray(lengths), n)

    with pytest.raises(ExerciseError, match=r"(?s)expected.*got"):
        check_decoder_self_mask(upper)

    def as_ints(lengths, n):
        return reference_mask(lengths, n).astype(int)

    with pytest.raises(ExerciseError, match="boolean"):
        check_decoder_self_mask(as_ints)
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_decoder_self_mask(stub)


# ---- 7.3 ----


def reference_greedy(model, src, src_mask, bos_id, eos_id, pad_id, max_len):
    return greedy_decode(model, src, src_mask, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id,
                         max_len=max_len)  # fmt: skip


def test_greedy_reference_passes(capsys):
    check_greedy_decode(reference_greedy)
    assert "Exercise 7.3 passed" in capsys.readouterr().out


def test_greedy_without_padding_after_eos_fails():
    @torch.no_grad()
    def keeps_going(model, src, src_mask, bos_id, eos_id, pad_id, max_len):
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id)
        for _ in range(max_len):
            nxt = model.decode(memory, src_mask, ys)[:, -1].argmax(-1)
            ys = torch.cat([ys, nxt[:, None]], 1)
            if (ys == eos_id).any(1).all():
                break
        return ys[:, 1:]

    with pytest.raises(ExerciseError, match=r"(?s)expected.*got"):
        check_greedy_decode(keeps_going)


def test_greedy_using_the_first_position_fails():
    @torch.no_grad()
    def first_position(model, src, src_mask, bos_id, eos_id, pad_id, max_len):
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len):
            nxt = model.decode(memory, src_mask, ys)[:, 0].argmax(-1).masked_fill(done, pad_id)
            ys = torch.cat([ys, nxt[:, None]], 1)
            done |= nxt == eos_id
            if done.all():
                break
        return ys[:, 1:]

    with pytest.raises(ExerciseError, match=r"(?s)expected.*got"):
        check_greedy_decode(first_position)


def test_greedy_stub_and_wrong_type_fail():
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_greedy_decode(stub)

    def as_list(*args):
        return reference_greedy(*args).tolist()

    with pytest.raises(ExerciseError, match="torch tensor"):
        check_greedy_decode(as_list)
