"""Checks for the exercises of lecture 14 (response-only mask, LoRA forward, DPO loss, what the
shipped assistant answers past the lists it was tuned on, LoRA's break-even rank).

Each check compares the student's answer with the course library on fixed cases and on random
inputs drawn from its keyword-only ``seed``; when the answer is wrong it tries the usual mistakes
on the same input and names the one that matches.
"""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import torch

from ..data.chat import load_chat_tokenizer, render_chat
from ..data.instructions import MAX_WORDS, PHRASINGS, instruction_words
from ..models.assistant import generate_replies, load_assistant
from ..models.dpo import dpo_loss
from . import ExerciseError, call_student, check_mistakes, check_prediction, hidden_rng, passed

__all__ = ["check_response_mask", "check_lora_forward", "check_dpo_losses", "check_count_replies",
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
                       hint="go through the ids of the first case one by one: which tokens does "
                            "the model read, and which must it learn to write?")  # fmt: skip
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
            "you scaled the update by alpha alone, as LLMs-from-scratch's LoRA did until its PR "
            "#823 of September 2025; peft and the LoRA paper scale it so that its size does not "
            "grow with the rank (with r = 1 the two agree, so the check uses r > 1).":
                base + alpha * update,
            "your update is not scaled at all: you left LoRA's scaling out.": base + update,
            "your scaling is upside down: you divided the rank by alpha.":
                base + (r / alpha) * update,
            "you returned the update alone: the frozen layer's output stays, and the update is "
            "added to it.": (alpha / r) * update,
            "the frozen layer has a bias b: add it.": x @ W.T + (alpha / r) * update,
        }  # fmt: skip
        check_mistakes(ex, got, _lora_reference(x, W, b, A, B, alpha), what=what,
                       mistakes=mistakes, rtol=1e-5, atol=1e-5,
                       hint="compare with the lecture's LoRALinear on the first case (B = 0 gives "
                            "the frozen layer alone), then on a case with B != 0.")  # fmt: skip
    passed(ex, "a LoRA layer's forward pass")


# --- 14.3 ----------------------------------------------------------------------------------


def _nll(z: np.ndarray) -> np.ndarray:
    """-log sigmoid(z), written as a student would without thinking of overflow (the mistakes)."""
    with np.errstate(over="ignore"):
        return np.log1p(np.exp(-z))


def check_dpo_losses(student_fn, *, seed: int = 0) -> None:
    """Exercise 14.3: the DPO loss of each pair from the four arrays of log-probabilities, finite
    and accurate for margins of +-1000 too (a stable answer is required, as in exercise 12.2)."""
    ex = "14.3"
    rng = np.random.default_rng(seed)
    cases = [
        ("one pair, policy = reference (every log-ratio 0), beta 0.1",
         np.array([-3.0]), np.array([-5.0]), np.array([-3.0]), np.array([-5.0]), 0.1),
        ("two pairs, beta 0.5", np.array([-1.0, -2.0]), np.array([-6.0, -1.0]),
         np.array([-3.0, -2.5]), np.array([-3.0, -1.5]), 0.5),
        ("six random pairs, random beta", *(-10 * rng.random((4, 6))),
         float(rng.uniform(0.05, 1.0))),
        ("two pairs with margins of about +1000 and -1000 (long answers), beta 1",
         np.array([-5.0, -2010.0]), np.array([-2000.0, -4.0]), np.array([-1000.0, -1010.0]),
         np.array([-1995.0, -4.0]) + rng.uniform(-1, 1, 2), 1.0),
    ]  # fmt: skip
    for what, pc, pr, rc, rr, beta in cases:
        got = call_student(ex, student_fn, pc.copy(), pr.copy(), rc.copy(), rr.copy(), beta)
        if isinstance(got, torch.Tensor):
            got = got.detach().numpy()
        as_t = [torch.tensor(v) for v in (pc, pr, rc, rr)]
        expected = dpo_loss(*as_t, beta=beta)[0].numpy()
        margin = (pc - rc) - (pr - rr)
        mistakes = {
            "your loss ignores the REFERENCE model: DPO compares how much more the policy than "
            "the reference prefers the chosen answer.": _nll(beta * (pc - pr)),
            "you multiplied the loss by beta: beta scales the margin before the sigmoid, not "
            "the loss after it.": beta * _nll(margin),
            "the sign: your loss is small when the REJECTED answer gained more than the chosen "
            "one.": _nll(-beta * margin),
            "return one loss per pair (the mean is taken when training).":
                np.full_like(pc, _nll(beta * margin).mean()),
            "that is 1 - sigmoid of the scaled margin: DPO's loss is the negative log-likelihood "
            "of the preference.": 1 - 1 / (1 + np.exp(np.clip(-beta * margin, -700, 700))),
        }  # fmt: skip
        if np.ndim(got) == 0 and pc.size == 1:  # one pair: a number is its loss
            got = np.reshape(np.asarray(got, dtype=float), (1,))
        if np.ndim(got) == 0 and pc.size > 1:
            raise ExerciseError(ex, f"{what}: expected {pc.size} losses, got one number {got!r:.40}.",
                                "return one loss per pair (the mean is taken when training).")  # fmt: skip
        try:
            unstable = np.shape(got) == pc.shape and not np.all(np.isfinite(np.asarray(got, float)))
        except (TypeError, ValueError):
            unstable = False
        if unstable:
            raise ExerciseError(ex, f"{what}: your losses are {np.asarray(got, float).tolist()}: "
                                "inf or nan where the loss is finite.",
                                "not stable: an exp of a large positive number overflows (exp(z) "
                                "is inf in float64 from z = 710). Rewrite the loss so that no exp "
                                "ever gets a large positive argument, as exercise 12.2 did.")  # fmt: skip
        check_mistakes(ex, got, expected, what=what, mistakes=mistakes, rtol=1e-5, atol=1e-6,
                       hint="work the first case by hand: with the policy equal to the "
                            "reference, the loss of every pair is the same number, whatever the "
                            "log-probabilities.")  # fmt: skip
    passed(ex, "the DPO loss")


# --- 14.4 ----------------------------------------------------------------------------------

LONG_LIST = MAX_WORDS + 2  # words in each list asked about: two more than any list tuned on
_LISTS = 12  # lists per case
COUNT_PROMPT = PHRASINGS["count"][0]  # "How many words are in: {words}?"


def _long_lists(seed: int) -> tuple[tuple[str, ...], ...]:
    """The notebook's lists (seed 0) or hidden ones: ``_LISTS`` lists of ``LONG_LIST`` distinct
    training words (words the assistant was tuned on, in lists it never saw)."""
    rng = np.random.default_rng([144, 0]) if seed == 0 else hidden_rng(seed, 144)
    words = instruction_words()[0]
    picks = [rng.choice(len(words), size=LONG_LIST, replace=False) for _ in range(_LISTS)]
    return tuple(tuple(words[int(i)] for i in p) for p in picks)


@functools.cache
def _assistant(name: str = "tuned"):
    """A shipped assistant and the chat tokenizer, loaded once per process (the grader's)."""
    return load_assistant(name)[0], load_chat_tokenizer()


@functools.cache
def _count_tally(lists: tuple[tuple[str, ...], ...], name: str = "tuned") -> dict[str, int]:
    """How often the assistant gives each reply to "How many words are in: ...?" over ``lists``
    (computed once per process for each case: the grader computes seed 0's once a class)."""
    model, tok = _assistant(name)
    prompts = [COUNT_PROMPT.format(words=" ".join(words)) for words in lists]
    return dict(Counter(generate_replies(model, tok, prompts)))


def precompute() -> None:
    """What every lecture-14 notebook's checks compare with: the grader calls this once before
    it grades a class (forked workers share it), so a notebook costs only its hidden case."""
    _count_tally(_long_lists(0))


def _check_count_prediction(ex: str, predicted) -> None:
    """The prediction of exercise 14.4, written before the measurement: the reply the tuned
    assistant gives most often to "How many words are in: ...?" on the notebook's lists of
    ``LONG_LIST`` words. Graded against the check's own measurement, never told the answer."""
    if isinstance(predicted, bool) or not isinstance(predicted, (str, int, np.integer)):
        raise ExerciseError(ex, f"predicted: expected the reply you expect, as a string (or an "
                            f"int), got {type(predicted).__name__} {predicted!r:.60}.",
                            "write your prediction down BEFORE you measure: predicted = "
                            "'...'.")  # fmt: skip
    tally = _count_tally(_long_lists(0))
    said = str(predicted).strip()
    if said == max(tally, key=tally.get):
        return
    hint = "measure it (the cells below), and then find the reason in how the model was tuned."
    if said == str(LONG_LIST):
        hint = ("that is the right count: what a rule that counts would say. The assistant learned "
                "from examples instead: which answers did its counting examples have?")  # fmt: skip
    raise ExerciseError(ex, f"your prediction {said!r:.40} is not the reply the tuned assistant "
                        f"gives most often to these lists of {LONG_LIST} words.", hint)  # fmt: skip


def check_count_replies(student_fn, predicted=None, *, seed: int = 0) -> None:
    """Exercise 14.4 (predict, then measure): ``predicted``, written first (see
    :func:`_check_count_prediction`), then ``count_replies(word_lists)``: how often the tuned
    assistant gives each reply to "How many words are in: ...?" over the lists it is given,
    measured live against the shipped checkpoint. Seed 0: the notebook's lists; other seeds
    hidden ones (the reference is computed once per case)."""
    ex = "14.4"
    _check_count_prediction(ex, predicted)
    lists = _long_lists(seed)
    what = f"replies to {len(lists)} lists of {LONG_LIST} words"
    got = call_student(ex, student_fn, [list(words) for words in lists])
    if not isinstance(got, dict) or not all(isinstance(k, str) for k in got):
        raise ExerciseError(ex, f"{what}: expected a dict reply -> how many times (a Counter "
                            f"will do), got {type(got).__name__} {got!r:.60}.",
                            "count the replies, e.g. collections.Counter(replies).")  # fmt: skip
    got = {k.strip(): v for k, v in got.items() if v}
    expected = _count_tally(lists)
    if got == expected:
        passed(ex, "what the assistant answers past its longest lists")
        return
    counts = list(got.values())
    hint = ("ask the tuned assistant (load_assistant('tuned'), generate_replies) the question "
            "of PHRASINGS['count'][0] about each list, and count its replies.")  # fmt: skip
    if got == {str(LONG_LIST): len(lists)}:
        hint = ("that is how many words each list has, not what the model replies: ask the "
                "MODEL, then count its replies.")  # fmt: skip
    elif counts and all(isinstance(c, float) for c in counts) and abs(sum(counts) - 1) < 1e-6:
        hint = "return how many times each reply came (counts), not fractions."
    elif any(got == _count_tally(lists, other) for other in ("lora", "dpo")):
        hint = "those are the replies of another shipped assistant: load the tuned one."
    raise ExerciseError(ex, f"{what}: your tally {dict(sorted(got.items()))!r:.200} is not "
                        "what the tuned assistant replies.", hint)  # fmt: skip


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
            "B A), not where its parameter count catches up: count what A and B hold against "
            "what the layer holds.",
            -(-(out_f * in_f + out_f) // in_f): "LoRA trains A AND B: your count leaves B's "
            "numbers out.",
        }
        hints.pop(want, None)
        check_prediction(
            ex, got, want,
            what=f"lora_break_even({out_f}, {in_f}), the smallest rank at which LoRA trains as "
            "many parameters as the full layer",
            too_low="at that rank LoRA's A and B still hold fewer numbers than the layer's weight "
            "and bias: count both again.",
            too_high="a smaller rank already trains as many parameters as the layer's weight and "
            "bias.",
            hints=hints, not_int="return the rank, a Python int.",
        )  # fmt: skip
    passed(ex, "where LoRA stops saving parameters")
