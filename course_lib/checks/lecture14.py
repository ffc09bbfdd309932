"""Checks for the exercises of lecture 14 (response-only mask, LoRA forward, DPO loss, and a
measured accuracy of the shipped assistant).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ..data.chat import load_chat_tokenizer, render_chat
from ..data.instructions import (
    FAMILIES,
    HELD_OUT_KINDS,
    exact_match,
    held_out_instructions,
    instruction_words,
)
from ..models.assistant import generate_replies, load_assistant
from ..models.dpo import dpo_loss
from . import ExerciseError, call_student, check_mistakes, check_prediction, hidden_rng, passed

__all__ = ["check_response_mask", "check_lora_forward", "check_dpo_losses", "check_accuracy",
           "check_lora_break_even"]  # fmt: skip

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "14.1": ("course_lib.data.chat.render_chat",),
    "14.2": ("course_lib.models.lora.LoRALinear", "course_lib.models.lora.apply_lora"),
    "14.3": ("course_lib.models.dpo.dpo_loss",),
    "14.4": (),
    "14.5": (),
}

# Given course_lib functions (cached: "module:function") whose first call is slow: the grader calls
# them once in the student's process before the student's cells run, outside its record of what
# the student's code calls (tools/grading/running.py). The chat tokenizer is trained on first use
# (0.4 s, ten times that under the grader's profile hook); no exercise's reference is here.
FIXTURES = ("course_lib.data.chat:load_chat_tokenizer",)

_USER, _ASSISTANT, _END = 512, 513, 514


# --- 14.1 ----------------------------------------------------------------------------------


def _conversations(rng: np.random.Generator) -> list[tuple[str, list[dict]]]:
    words = list(instruction_words()[0])

    def text(k: int) -> str:
        return " ".join(words[i] for i in rng.choice(len(words), size=k, replace=False))

    two_turns = []
    for _ in range(2):
        two_turns += [{"role": "user", "content": text(3)},
                      {"role": "assistant", "content": text(int(rng.integers(1, 4)))}]  # fmt: skip
    return [
        ("one question, one answer", [{"role": "user", "content": "What is the first word of: "
                                       "open file read?"},
                                      {"role": "assistant", "content": "open"}]),
        ("two turns (random words)", two_turns),
        ("the user speaks last (nothing to train on after the answer)",
         two_turns[:2] + [{"role": "user", "content": text(2)}]),
        ("an answer that is the text '<|end|>' (characters, not the token)",
         [{"role": "user", "content": "Type <|end|>"},
          {"role": "assistant", "content": "<|end|>"}]),
    ]  # fmt: skip


def _masks(ids: list[int]) -> dict[str, list[bool]]:
    """The usual wrong masks, worked out from the ids with the roles' token ids."""
    role, with_role, without_end, users = None, [], [], []
    for t in ids:
        if t in (_USER, _ASSISTANT):
            role = t
            with_role.append(t == _ASSISTANT)
            without_end.append(False)
            users.append(False)
            continue
        with_role.append(role == _ASSISTANT)
        without_end.append(role == _ASSISTANT and t != _END)
        users.append(role == _USER)
    return {
        "the <|assistant|> token itself is part of the PROMPT: the model reads it, then answers; "
        "it is never a target (mask False).": with_role,
        "mark the assistant's <|end|> token too: the model must learn to STOP after its answer.":
            without_end,
        "that is the user's part: train on what the ASSISTANT says (and its <|end|>).": users,
        "that marks every token (an ordinary language-model loss): the mask is True only on the "
        "assistant's answers.": [True] * len(ids),
    }  # fmt: skip


def check_response_mask(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.1: ``response_mask(ids)`` -> the loss mask of a rendered conversation."""
    ex = "14.1"
    tok = load_chat_tokenizer()
    for what, messages in _conversations(np.random.default_rng(seed)):
        ids, expected = render_chat(messages, tok)
        got = call_student(ex, student_fn, list(ids))
        if got is None or isinstance(got, (str, bytes)) or not hasattr(got, "__len__"):
            raise ExerciseError(ex, f"{what}: expected a list of {len(ids)} True/False, got "
                                f"{type(got).__name__}.", "return one bool per id.")  # fmt: skip
        got = [bool(v) for v in np.asarray(got).reshape(-1).tolist()]
        mistakes = {h: np.array(m, dtype=float) for h, m in _masks(ids).items()}
        check_mistakes(ex, np.array(got, dtype=float), np.array(expected, dtype=float),
                       what=f"{what} (1 = True)", mistakes=mistakes,
                       hint="True from the token after <|assistant|> up to and including the "
                            "<|end|> that closes that turn; False everywhere else.")  # fmt: skip
    passed(ex, "the response-only mask")


# --- 14.2 ----------------------------------------------------------------------------------


def _lora_reference(x, W, b, A, B, alpha):
    r = A.shape[0]
    return x @ W.T + b + (alpha / r) * (x @ A.T) @ B.T


def check_lora_forward(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.2: ``lora_forward(x, W, b, A, B, alpha)`` with the scaling ``alpha / r``."""
    ex = "14.2"
    rng = np.random.default_rng(seed)
    cases = [
        ("x (2, 3), r = 1, alpha = 1, B = 0 (the start of training: the base layer alone)",
         rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=4),
         rng.normal(size=(1, 3)), np.zeros((4, 1)), 1.0),
        ("x (5, 6), r = 2, alpha = 16", rng.normal(size=(5, 6)), rng.normal(size=(3, 6)),
         rng.normal(size=3), rng.normal(size=(2, 6)), rng.normal(size=(3, 2)), 16.0),
        ("x (2, 4, 8) (a batch of sequences), r = 4, alpha = 8", rng.normal(size=(2, 4, 8)),
         rng.normal(size=(5, 8)), rng.normal(size=5), rng.normal(size=(4, 8)),
         rng.normal(size=(5, 4)), 8.0),
    ]  # fmt: skip
    for what, x, W, b, A, B, alpha in cases:
        got = call_student(ex, student_fn, x.copy(), W.copy(), b.copy(), A.copy(), B.copy(), alpha)
        if isinstance(got, torch.Tensor):
            got = got.detach().double().numpy()
        r = A.shape[0]
        update = (x @ A.T) @ B.T
        base = x @ W.T + b
        mistakes = {
            "scale the update by alpha / r, not by alpha (as peft and the LoRA paper do; "
            "LLMs-from-scratch's LoRA scaled by alpha alone until its PR #823 of September "
            "2025): with r = 1 the two agree, so the check uses r > 1.":
                base + alpha * update,
            "the update is multiplied by the scaling alpha / r: you left it out.": base + update,
            "the scaling is alpha / r (alpha divided by the rank), not r / alpha.":
                base + (r / alpha) * update,
            "keep the frozen layer: y = x W^T + b PLUS the update.": (alpha / r) * update,
            "the frozen layer has a bias b: add it.": x @ W.T + (alpha / r) * update,
        }  # fmt: skip
        check_mistakes(ex, got, _lora_reference(x, W, b, A, B, alpha), what=what,
                       mistakes=mistakes, rtol=1e-5, atol=1e-5,
                       hint="y = x W^T + b + (alpha / r) (x A^T) B^T with r = A.shape[0].")  # fmt: skip
    passed(ex, "a LoRA layer's forward pass")


# --- 14.3 ----------------------------------------------------------------------------------


def check_dpo_losses(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.3: the DPO loss of each pair from the four arrays of log-probabilities."""
    ex = "14.3"
    rng = np.random.default_rng(seed)
    cases = [
        ("one pair, policy = reference (every log-ratio 0), beta 0.1",
         np.array([-3.0]), np.array([-5.0]), np.array([-3.0]), np.array([-5.0]), 0.1),
        ("two pairs, beta 0.5", np.array([-1.0, -2.0]), np.array([-6.0, -1.0]),
         np.array([-3.0, -2.5]), np.array([-3.0, -1.5]), 0.5),
        ("six random pairs, random beta", *(-10 * rng.random((4, 6))),
         float(rng.uniform(0.05, 1.0))),
    ]  # fmt: skip
    for what, pc, pr, rc, rr, beta in cases:
        got = call_student(ex, student_fn, pc.copy(), pr.copy(), rc.copy(), rr.copy(), beta)
        if isinstance(got, torch.Tensor):
            got = got.detach().double().numpy()
        as_t = [torch.tensor(v) for v in (pc, pr, rc, rr)]
        expected = dpo_loss(*as_t, beta=beta)[0].numpy()
        margin = (pc - rc) - (pr - rr)

        def nll(z):
            return np.log1p(np.exp(-z))

        mistakes = {
            "subtract the REFERENCE's log-probabilities: DPO compares log pi / pi_ref of the "
            "chosen answer with that of the rejected one.": nll(beta * (pc - pr)),
            "multiply the margin by beta INSIDE the sigmoid: -log sigmoid(beta * margin).":
                beta * nll(margin),
            "the sign: the loss is small when the CHOSEN answer gained more than the rejected "
            "one, -log sigmoid(+beta * margin).": nll(-beta * margin),
            "return one loss per pair (the mean is taken when training).":
                np.full_like(pc, nll(beta * margin).mean()),
            "the loss is -log sigmoid(...), not 1 - sigmoid(...).":
                1 - 1 / (1 + np.exp(-beta * margin)),
        }  # fmt: skip
        if np.ndim(got) == 0 and pc.size == 1:  # one pair: a number is its loss
            got = np.reshape(np.asarray(got, dtype=float), (1,))
        if np.ndim(got) == 0 and pc.size > 1:
            raise ExerciseError(ex, f"{what}: expected {pc.size} losses, got one number {got!r:.40}.",
                                "return one loss per pair (the mean is taken when training).")  # fmt: skip
        check_mistakes(ex, got, expected, what=what, mistakes=mistakes, rtol=1e-5, atol=1e-6,
                       hint="loss = -log sigmoid(beta * ((pc - rc) - (pr - rr))) per pair.")  # fmt: skip
    passed(ex, "the DPO loss")


# --- 14.4 ----------------------------------------------------------------------------------

_ONE_ANSWER = ("first", "last", "count")
_FIXED_CASE = ("unseen_words", ("first", "last", "count"), 4)


@functools.cache
def _tuned_assistant():
    """The tuned assistant and its tokenizer, loaded once per process (the grader's)."""
    return load_assistant("tuned")[0], load_chat_tokenizer()


@functools.cache
def _accuracy(kind: str, families: tuple[str, ...], per_family: int) -> float:
    """The tuned assistant's exact-match accuracy, computed once per process for each case (a
    generation costs about a second: the grader computes it once a class, not once a notebook)."""
    model, tok = _tuned_assistant()
    items = [x for x in held_out_instructions(kind, per_family) if x.family in families]
    replies = generate_replies(model, tok, [x.prompt for x in items])
    return float(np.mean([exact_match(r, x.answer) for r, x in zip(replies, items, strict=True)]))


def _accuracy_cases(seed: int) -> list[tuple[str, tuple[str, ...], int]]:
    """Seed 0: the fixed case and the case of seed 0; a hidden seed: its own case only (the
    fixed one was asked at seed 0: a second generation of it would only cost time)."""
    rng = np.random.default_rng(seed)
    kinds = list(HELD_OUT_KINDS)
    drawn = (kinds[int(rng.integers(3))],
             tuple(FAMILIES[int(i)] for i in sorted(rng.choice(5, size=2, replace=False))), 3)  # fmt: skip
    return [_FIXED_CASE, drawn] if seed == 0 else [drawn]


def precompute() -> None:
    """What every lecture-14 notebook's checks compare with: the grader calls this once before
    it grades a class (forked workers share it), so a notebook costs only its hidden case."""
    for case in _accuracy_cases(0):
        _accuracy(*case)


def check_accuracy(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.4: the tuned assistant's exact-match accuracy on a held-out kind."""
    ex = "14.4"
    for kind, families, per_family in _accuracy_cases(seed):
        families = list(families)
        what = f"accuracy on {kind!r}, families {families}, {per_family} per family"
        got = call_student(ex, student_fn, kind, list(families), per_family)
        if isinstance(got, bool) or not isinstance(got, (int, float, np.floating, np.integer)):
            raise ExerciseError(ex, f"{what}: expected a number between 0 and 1, got "
                                f"{type(got).__name__} {got!r:.60}.")  # fmt: skip
        expected = _accuracy(kind, tuple(families), per_family)
        if abs(float(got) - expected) < 1e-9:
            continue
        hint = "generate the tuned model's replies to the prompts of exactly these families and "
        hint += "count the exact matches (exact_match) over all of them."
        if abs(float(got) - 100 * expected) < 1e-6:
            hint = "return a fraction between 0 and 1, not a percentage."
        elif abs(float(got) - _accuracy(kind, tuple(FAMILIES), per_family)) < 1e-9:
            hint = "keep only the instructions of the families asked for (x.family in families)."
        raise ExerciseError(ex, f"{what}:\n  expected {expected:.4f}\n  got      {got}", hint)
    passed(ex, "the tuned assistant, measured")


# --- 14.5 ----------------------------------------------------------------------------------


def lora_break_even(out_features: int, in_features: int) -> int:
    """The smallest rank r at which LoRA on one (out, in) linear layer trains at least as many
    parameters as fine-tuning that layer fully: r (in + out) >= out in + out (the weight and the
    bias; LoRA's A is (r, in), B is (out, r), and the frozen bias stays frozen)."""
    full = out_features * in_features + out_features
    return -(-full // (in_features + out_features))  # ceil


def check_lora_break_even(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.5 (predict, then measure): ``lora_break_even(out_features, in_features)``,
    worked out, not measured: the rank from which LoRA saves nothing. Seed 0: the lecture's
    128 x 128 maps and a GPT-2 MLP's 3072 x 768; other seeds hidden shapes. A wrong answer is
    told too low or too high and why, never the value."""
    ex = "14.5"
    shapes = [(128, 128), (3072, 768), (1, 1)]
    if seed:
        rng = hidden_rng(seed, 145)
        shapes = [(int(o), int(i)) for o, i in rng.integers(1, 5000, size=(3, 2))]
    for out_f, in_f in shapes:
        got = call_student(ex, student_fn, out_f, in_f)
        want = lora_break_even(out_f, in_f)
        hints = {
            (out_f * in_f + out_f) // (in_f + out_f): "round UP: at the floor LoRA still trains "
            "fewer parameters than the layer (whose bias, out numbers, full fine-tuning trains "
            "too, while LoRA leaves it frozen).",
            min(out_f, in_f): "that is where LoRA's update stops being low-rank (a full-rank "
            "B A), not where its parameter count catches up: count r (in + out) against out in "
            "+ out.",
            -(-(out_f * in_f + out_f) // in_f): "LoRA trains A (r x in) AND B (out x r): r (in + "
            "out) parameters, not r in.",
        }
        hints.pop(want, None)
        check_prediction(
            ex, got, want,
            what=f"lora_break_even({out_f}, {in_f}), the smallest rank at which LoRA trains as "
            "many parameters as the full layer",
            too_low="at that rank LoRA's A and B still hold fewer numbers than the layer's weight "
            "and bias: r (in + out) < out in + out.",
            too_high="a smaller rank already trains as many parameters: r (in + out) >= out in + "
            "out.",
            hints=hints, not_int="return the rank, a Python int.",
        )  # fmt: skip
    passed(ex, "where LoRA stops saving parameters")
