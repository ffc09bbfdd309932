"""Lecture 14 checks: right answers (two ways each) pass; realistic mistakes get their hint; the
stub fails; hidden seeds give the same verdicts."""

import math

import numpy as np
import pytest
import torch
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub

from course_lib.checks import ExerciseError
from course_lib.checks.lecture14 import (
    check_accuracy,
    check_dpo_losses,
    check_lora_break_even,
    check_lora_forward,
    check_response_mask,
)

USER, ASSISTANT, END = 512, 513, 514

# --- right answers, written independently of course_lib ------------------------------------


def mask_by_state(ids):
    mask, speaking = [], False
    for t in ids:
        if t in (USER, ASSISTANT):
            speaking = t == ASSISTANT
            mask.append(False)
        else:
            mask.append(speaking)
            if t == END:
                speaking = False
    return mask


def mask_by_positions(ids):
    ids = np.array(ids)
    out = np.zeros(len(ids), dtype=bool)
    for start in np.flatnonzero(ids == ASSISTANT):
        end = start + 1 + np.flatnonzero(ids[start + 1 :] == END)[0]
        out[start + 1 : end + 1] = True
    return out


def lora_numpy(x, W, b, A, B, alpha):
    return x @ W.T + b + alpha / A.shape[0] * x @ A.T @ B.T


def lora_merged_torch(x, W, b, A, B, alpha):
    merged = torch.tensor(W) + alpha / A.shape[0] * torch.tensor(B) @ torch.tensor(A)
    return torch.tensor(x, dtype=torch.float32) @ merged.float().T + torch.tensor(b).float()


def dpo_numpy(pc, pr, rc, rr, beta):
    return np.logaddexp(0.0, -beta * ((pc - rc) - (pr - rr)))


def dpo_loop(pc, pr, rc, rr, beta):
    out = []
    for a, b, c, d in zip(pc, pr, rc, rr, strict=True):
        z = beta * ((a - c) - (b - d))
        out.append(-math.log(1 / (1 + math.exp(-z))))
    return out


RIGHT = [
    (check_response_mask, mask_by_state, mask_by_positions, "14.1 passed"),
    (check_lora_forward, lora_numpy, lora_merged_torch, "14.2 passed"),
    (check_dpo_losses, dpo_numpy, dpo_loop, "14.3 passed"),
]


@pytest.mark.parametrize(
    "check,first,second,message", RIGHT, ids=lambda v: getattr(v, "__name__", "")
)
def test_right_answers_pass_for_several_seeds(check, first, second, message, capsys):
    for seed in (0, 1, 7):
        check(first, seed=seed)
        check(second, seed=seed)
    assert capsys.readouterr().out.count(message) == 6


def mask_with_role(ids):
    return [m or t == ASSISTANT for m, t in zip(mask_by_state(ids), ids, strict=True)]


def mask_without_end(ids):
    return [m and t != END for m, t in zip(mask_by_state(ids), ids, strict=True)]


WRONG = [
    (check_response_mask, mask_with_role, "the <|assistant|> token itself is part of the PROMPT"),
    (check_response_mask, mask_without_end, "learn to STOP"),
    (check_response_mask, lambda ids: [True] * len(ids), "marks every token"),
    (check_response_mask, lambda ids: None, "expected a list"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + b + a * x @ A.T @ B.T, "PR #823"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + b + x @ A.T @ B.T, "you left it out"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + b + A.shape[0] / a * x @ A.T @ B.T,
     "not r / alpha"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + a / A.shape[0] * x @ A.T @ B.T,
     "has a bias b"),
    (check_dpo_losses, lambda pc, pr, rc, rr, b: np.logaddexp(0, -b * (pc - pr)), "REFERENCE"),
    (check_dpo_losses, lambda pc, pr, rc, rr, b: b * np.logaddexp(0, -((pc - rc) - (pr - rr))),
     "INSIDE the sigmoid"),
    (check_dpo_losses, lambda pc, pr, rc, rr, b: np.logaddexp(0, b * ((pc - rc) - (pr - rr))),
     "the sign"),
    (check_dpo_losses, lambda *a: dpo_numpy(*a).mean(), "one loss per pair"),
]  # fmt: skip


@pytest.mark.parametrize("check,wrong,fragment", WRONG)
def test_mistakes_get_their_hint(check, wrong, fragment):
    for seed in (0, 3):
        with pytest.raises(ExerciseError) as err:
            check(wrong, seed=seed)
        assert fragment in str(err.value)


@pytest.mark.parametrize("check", [c for c, *_ in RIGHT] + [check_accuracy])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)


def accuracy_answer(kind, families, per_family):
    from course_lib import generate_replies, load_assistant, load_chat_tokenizer
    from course_lib.data.instructions import held_out_instructions

    model, _ = load_assistant("tuned")
    items = [x for x in held_out_instructions(kind, per_family) if x.family in families]
    replies = generate_replies(model, load_chat_tokenizer(), [x.prompt for x in items])
    return sum(r.strip() == x.answer for r, x in zip(replies, items, strict=True)) / len(items)


def test_accuracy_right_and_wrong(capsys):
    check_accuracy(accuracy_answer, seed=0)
    assert "14.4 passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="not a percentage"):
        check_accuracy(lambda *a: 100 * accuracy_answer(*a), seed=0)
    with pytest.raises(ExerciseError, match="expected a number"):
        check_accuracy(lambda *a: "0.5", seed=0)


# --- 14.5 (predict, then measure: where LoRA stops saving parameters) ----------------------------


def break_even_formula(out_f, in_f):
    return math.ceil((out_f * in_f + out_f) / (in_f + out_f))


def break_even_measured(out_f, in_f):  # written differently: count LoRALinear's trainable numbers
    from course_lib.models.lora import LoRALinear

    full = out_f * in_f + out_f
    r = 1
    while r * (in_f + out_f) < full:
        r += 1
    if out_f * in_f <= 10_000:  # build it only when small: counting is what is being measured
        layer = LoRALinear(torch.nn.Linear(in_f, out_f), r, 1.0)
        assert sum(p.numel() for p in layer.parameters() if p.requires_grad) >= full
    return r


def test_lora_break_even_against_torch_parameter_counts():
    """The reference: LoRALinear's trainable parameters at r reach the layer's, at r - 1 not."""
    from course_lib.checks.lecture14 import lora_break_even
    from course_lib.models.lora import LoRALinear

    for out_f, in_f in ((128, 128), (3072, 768), (7, 13), (1, 5)):
        r = lora_break_even(out_f, in_f)
        full = sum(p.numel() for p in torch.nn.Linear(in_f, out_f).parameters())

        def trained(rank, out_f=out_f, in_f=in_f):
            layer = LoRALinear(torch.nn.Linear(in_f, out_f), rank, 1.0)
            return sum(p.numel() for p in layer.parameters() if p.requires_grad)

        assert trained(r) >= full and (r == 1 or trained(r - 1) < full), (out_f, in_f)
    assert lora_break_even(128, 128) == 65  # by hand: (16,384 + 128) / 256 = 64.5


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("fn", [break_even_formula, break_even_measured])
def test_lora_break_even_passes_right_answers(fn, seed, capsys):
    check_lora_break_even(fn, seed=seed)
    assert "✅ Exercise 14.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "hint"),
    [(lambda o, i: (o * i + o) // (i + o), "round UP"),
     (lambda o, i: min(o, i), "low-rank"),
     (lambda o, i: math.ceil(o * i / (i + o)), "bias, out numbers"),
     (lambda o, i: math.ceil((o * i + o) / i), "AND B"),
     (lambda o, i: float(break_even_formula(o, i)), "a Python int")],
)  # fmt: skip
def test_lora_break_even_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_lora_break_even(fn)
