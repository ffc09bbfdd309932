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
    check_count_replies,
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


def dpo_loop(pc, pr, rc, rr, beta):  # -log sigmoid(z) = max(-z, 0) + log(1 + e^-|z|)
    out = []
    for a, b, c, d in zip(pc, pr, rc, rr, strict=True):
        z = beta * ((a - c) - (b - d))
        out.append(max(-z, 0.0) + math.log1p(math.exp(-abs(z))))
    return out


def dpo_naive_log1p(pc, pr, rc, rr, beta):  # a mistake: exp(1000) overflows to inf
    with np.errstate(over="ignore"):
        return np.log1p(np.exp(-beta * ((pc - rc) - (pr - rr))))


def dpo_naive_log_sigmoid(pc, pr, rc, rr, beta):  # a mistake: sigmoid(-1000) underflows to 0
    with np.errstate(over="ignore", divide="ignore"):
        return -np.log(1 / (1 + np.exp(-beta * ((pc - rc) - (pr - rr)))))


def dpo_torch_float32(pc, pr, rc, rr, beta):  # in float32, as torch computes by default
    t = [torch.tensor(v, dtype=torch.float32) for v in (pc, pr, rc, rr)]
    return -torch.nn.functional.logsigmoid(beta * ((t[0] - t[2]) - (t[1] - t[3])))


RIGHT = [
    (check_response_mask, mask_by_state, mask_by_positions, "14.1 passed"),
    (check_lora_forward, lora_numpy, lora_merged_torch, "14.2 passed"),
    (check_dpo_losses, dpo_numpy, dpo_loop, "14.3 passed"),
    (check_dpo_losses, dpo_torch_float32, dpo_numpy, "14.3 passed"),
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
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + b + x @ A.T @ B.T,
     "left LoRA's scaling out"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + b + A.shape[0] / a * x @ A.T @ B.T,
     "upside down"),
    (check_lora_forward, lambda x, W, b, A, B, a: a / A.shape[0] * x @ A.T @ B.T,
     "returned the update alone"),
    (check_lora_forward, lambda x, W, b, A, B, a: x @ W.T + a / A.shape[0] * x @ A.T @ B.T,
     "has a bias b"),
    (check_dpo_losses, lambda pc, pr, rc, rr, b: np.logaddexp(0, -b * (pc - pr)), "REFERENCE"),
    (check_dpo_losses, lambda pc, pr, rc, rr, b: b * np.logaddexp(0, -((pc - rc) - (pr - rr))),
     "multiplied the loss by beta"),
    (check_dpo_losses, dpo_naive_log1p, "not stable"),
    (check_dpo_losses, dpo_naive_log_sigmoid, "not stable"),
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


@pytest.mark.parametrize("check", [c for c, *_ in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)


def test_the_dpo_loss_at_margins_of_1000_by_hand():
    """The reference the check compares with (TRL's sigmoid loss), at the margins the check
    uses: -log sigmoid(1000) is e^-1000 (0 in float64), -log sigmoid(-1000) is 1000 + e^-1000."""
    from course_lib.models.dpo import dpo_loss

    pc, pr, rc, rr = (torch.tensor(v) for v in ([-5.0, -2010.0], [-2000.0, -4.0],
                                                 [-1000.0, -1010.0], [-1995.0, -4.0]))  # fmt: skip
    losses = dpo_loss(pc, pr, rc, rr, beta=1.0)[0]
    assert losses.tolist() == [0.0, 1000.0]
    with np.errstate(over="ignore"):
        assert np.isinf(np.log1p(np.exp(1000.0)))  # why the naive form is not stable


# --- 14.4 (predict, then measure: counting past the longest list it was tuned on) --------------


def count_replies_solution_like(word_lists):
    from collections import Counter

    from course_lib import generate_replies, load_assistant, load_chat_tokenizer
    from course_lib.data.instructions import PHRASINGS

    model, _ = load_assistant("tuned")
    prompts = [PHRASINGS["count"][0].format(words=" ".join(w)) for w in word_lists]
    return Counter(generate_replies(model, load_chat_tokenizer(), prompts))


def count_replies_one_by_one(word_lists):  # one prompt at a time, a plain dict, unstripped keys
    from course_lib import generate_replies, load_assistant, load_chat_tokenizer

    model, _ = load_assistant("tuned")
    tally = {}
    for words in word_lists:
        reply = generate_replies(model, load_chat_tokenizer(), [f"How many words are in: "
                                                                f"{' '.join(words)}?"])[0]  # fmt: skip
        tally[reply + " "] = tally.get(reply + " ", 0) + 1
    return tally


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("fn", [count_replies_solution_like, count_replies_one_by_one])
def test_count_replies_passes_right_answers(fn, seed, capsys):
    check_count_replies(fn, "6", seed=seed)
    assert "✅ Exercise 14.4 passed" in capsys.readouterr().out


def count_replies_from_the_lists(word_lists):  # a mistake: the true counts, no model
    return {str(len(words)): 1 for words in word_lists} | {str(len(word_lists[0])): len(word_lists)}


def count_replies_fractions(word_lists):  # a mistake: fractions instead of counts
    tally = count_replies_solution_like(word_lists)
    return {k: v / len(word_lists) for k, v in tally.items()}


def count_replies_lora(word_lists):  # a mistake: another shipped assistant
    from collections import Counter

    from course_lib import generate_replies, load_assistant, load_chat_tokenizer
    from course_lib.data.instructions import PHRASINGS

    model, _ = load_assistant("lora")
    prompts = [PHRASINGS["count"][0].format(words=" ".join(w)) for w in word_lists]
    return Counter(generate_replies(model, load_chat_tokenizer(), prompts))


@pytest.mark.parametrize(
    ("check", "wrong", "fragment"),
    [(check_count_replies, count_replies_from_the_lists, "ask the MODEL"),
     (check_count_replies, count_replies_fractions, "not fractions"),
     (check_count_replies, count_replies_lora, "another shipped assistant"),
     (check_count_replies, lambda word_lists: ["6"] * len(word_lists), "expected a dict")],
)  # fmt: skip
def test_count_replies_mistakes_get_their_hint(check, wrong, fragment):
    with pytest.raises(ExerciseError, match=fragment):
        check(wrong, "6")


@pytest.mark.parametrize(
    ("predicted", "fragment"),
    [(None, "BEFORE you measure"), (["6"], "BEFORE you measure"), ("8", "what a rule that counts"),
     ("7", "find the reason"), ("", "find the reason"), (6, None), (" 6 ", None)],
)  # fmt: skip
def test_the_prediction_of_14_4_is_graded_against_the_measurement(predicted, fragment, capsys):
    if fragment is None:
        check_count_replies(count_replies_solution_like, predicted)
        assert "14.4 passed" in capsys.readouterr().out
        return
    with pytest.raises(ExerciseError, match=fragment) as err:
        check_count_replies(count_replies_solution_like, predicted)
    if isinstance(predicted, str):  # a wrong prediction is never told the answer
        assert "'6'" not in str(err.value) and " 6 " not in str(err.value)


def test_the_tuned_assistant_never_counts_past_its_tuning_lists():
    """What 14.4's prediction is about, measured here on other lists than the check's: asked to
    count 7 or 8 words, the tuned assistant never gives the right count and replies 6 (the
    largest count of its tuning data) to at least 19 of 20 lists; on 6-word lists it is right on
    at least 17 of 20 (measured: 20 of 20 and 19 of 20 at 7 and 8 words; 19 of 20 at 6)."""
    from course_lib.data.instructions import instruction_words

    words = instruction_words()[0]
    rng = np.random.default_rng(99)
    for n, low in ((6, 17), (7, 0), (8, 0)):
        lists = [[words[i] for i in rng.choice(len(words), size=n, replace=False)]
                 for _ in range(20)]  # fmt: skip
        tally = count_replies_solution_like(lists)
        assert tally[str(n)] >= low, (n, tally)
        if n > 6:
            assert tally[str(n)] == 0 and tally["6"] >= 19, (n, tally)


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


def test_the_14_4_prompt_quotes_the_lectures_count_accuracy():
    """Exercise 14.4's "counts right 90 % of the time (lecture 14, new_combinations)" is the
    tuned model's count accuracy on new lists that lecture 14 prints (per family, n = 60)."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    lecture = json.loads((root / "notebooks" / "14_assistant.ipynb").read_text())
    printed = "".join("".join(o.get("text", "")) for c in lecture["cells"] if c["cell_type"] ==
                      "code" for o in c.get("outputs", []))  # fmt: skip
    (line,) = [x for x in printed.splitlines() if x.startswith("new_combinations  first")]
    assert re.search(r"count\s+90 \[", line), line
    exercise = json.loads((root / "solutions" / "14_assistant.ipynb").read_text())
    prompt = next("".join(c["source"]) for c in exercise["cells"]
                  if "".join(c["source"]).startswith("## Exercise 14.4"))  # fmt: skip
    assert "counts right 90 %" in prompt
