"""The helpers every lecture's checks share (course_lib/checks/__init__.py): a crash or a wrong
shape on a batched input names the input and gets the lecture's batch hint; `within` is a
binomial tolerance worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib import softmax
from course_lib.checks import ExerciseError, call_on_batch, check_batched, within
from course_lib.checks.lecture02 import check_self_attention
from course_lib.checks.lecture03 import check_split_heads
from course_lib.checks.lecture09 import check_previous_token_score


def _self_attention_with_k_dot_t(x, w_q, w_k, w_v):  # right for one sequence, K.T on a batch
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return softmax(q @ k.T / np.sqrt(k.shape[-1]), axis=-1) @ v


def _split_heads_2d(x, h):  # right for (n, d_model) only
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)


def _previous_token_score_one_head(a):  # np.diag only works for one head
    return np.diag(a, -1).mean()


@pytest.mark.parametrize(
    "check, answer, where, hint",
    [
        (check_self_attention, _self_attention_with_k_dot_t, "(X of shape (2, 4, 6))",
         "K.T reverses ALL axes"),
        (check_split_heads, _split_heads_2d, "(on an input with a leading batch axis)",
         "(*lead, n, d_model) = x.shape"),
        (check_previous_token_score, _previous_token_score_one_head,
         "(on a (layers, heads, n, n) input)", "np.diag and a[i, j] only work for one head"),
    ],
)  # fmt: skip
def test_a_crash_on_a_batch_names_the_input_and_gives_the_batch_hint(check, answer, where, hint):
    with pytest.raises(ExerciseError) as info:
        check(answer)
    assert "raised" in info.value.message and info.value.message.endswith(where)
    assert hint in info.value.hint


def test_call_on_batch_keeps_the_plain_message_for_one_sequence():
    def broken(x):
        raise ValueError("boom")

    with pytest.raises(ExerciseError) as info:
        call_on_batch("9.9", broken, np.ones(3), batched=False, batch_hint="B", where=" (W)")
    assert not info.value.message.endswith(" (W)") and info.value.hint != "B"
    assert call_on_batch("9.9", lambda x: x + 1, 1, batched=True, batch_hint="B", where="") == 2


def test_check_batched_gives_the_batch_hint_only_for_a_wrong_shape_on_a_batch():
    expected = np.ones((2, 3, 4))
    kwargs = {"what": "x", "hint": "generic"}
    with pytest.raises(ExerciseError) as info:
        check_batched("9.9", np.ones((3, 4)), expected, batched=True, batch_hint="B", **kwargs)
    assert info.value.hint == "B"
    with pytest.raises(ExerciseError) as info:  # right shape, wrong values: the generic hint
        check_batched("9.9", 2 * expected, expected, batched=True, batch_hint="B", **kwargs)
    assert info.value.hint == "generic"
    with pytest.raises(ExerciseError) as info:  # one sequence: the generic hint
        check_batched("9.9", np.ones(4), np.ones(3), batched=False, batch_hint="B", **kwargs)
    assert info.value.hint == "generic"
    check_batched("9.9", expected.copy(), expected, batched=True, batch_hint="B", **kwargs)


@pytest.mark.parametrize(
    "count, n, p, inside",
    # n p = 50 and sd = sqrt(100 * 0.5 * 0.5) = 5: five sd are 25, so 25..75 pass.
    [(75, 100, 0.5, True), (25, 100, 0.5, True), (76, 100, 0.5, False), (24, 100, 0.5, False),
     # n p = 1500, sd = sqrt(10000 * 0.15 * 0.85) = 35.7: 1678 is 4.98 sd away, 1680 5.04.
     (1678, 10_000, 0.15, True), (1680, 10_000, 0.15, False)],
)  # fmt: skip
def test_within_is_five_binomial_standard_deviations(count, n, p, inside):
    assert within(count, n, p) is inside
