"""Checks for the exercises of lecture 18 (scoring benchmarks as the harness does).

Each check calls the student's function on fixed cases and on hidden inputs drawn from its
keyword-only ``seed``; a wrong answer is tried against the usual mistakes on the same input and
the matching one is named.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..evaluation import choose, encode_pair
from ..models.classifier import accuracy_ci
from . import Built, ExerciseError, call_student, check_mistakes, hidden_rng, passed

__all__ = ["check_acc_norm", "check_wilson", "check_paired", "check_continuation_ids"]

REFERENCES = {
    "18.1": ("course_lib.evaluation.multiple_choice.choose",
             "course_lib.evaluation.multiple_choice.choice_scores",
             "course_lib.evaluation.multiple_choice.is_correct"),
    "18.2": ("course_lib.models.classifier.accuracy_ci",),
    "18.3": ("course_lib.evaluation.statistics.paired_bootstrap",),
    "18.4": ("course_lib.evaluation.loglikelihood.encode_pair",
             "course_lib.evaluation.loglikelihood.loglikelihood"),
}  # fmt: skip

WORDS = ["cat", "the sun", "élan", "photosynthesis", "a", "carbon dioxide", "ice", "naïve",
         "stop and start the flow of current.", "42", "it melts", "über", "no"]  # fmt: skip


# --- 18.1 ----------------------------------------------------------------------------------


def _as_index(ex: str, got, what: str, n: int) -> int:
    if isinstance(got, np.integer):
        got = int(got)
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        raise ExerciseError(
            ex, f"{what}: expected the index of a choice (an int), got {type(got).__name__} "
            f"{got!r:.40}.", "return an int such as int(np.argmax(scores)).",
        )  # fmt: skip
    if not 0 <= got < n:
        raise ExerciseError(ex, f"{what}: expected an index in [0, {n}), got {got}.")
    return int(got)


def _acc_norm_cases(seed: int):
    rng = hidden_rng(seed, 181)
    cases = [
        ("a short choice with the higher total vs a long one with the higher per character",
         [-6.0, -15.0], ["ice", "it melts into water"]),
        ("a tie per character (the first one wins, as numpy.argmax)", [-4.0, -8.0],
         ["ab", "abcd"]),
        ("non-ASCII choices (characters, not bytes)", [-11.0, -5.0], ["naïve élan", "ubers"]),
        ("four choices of 1 to 23 characters", [-11.5, -10.6, -28.4, -6.8],
         ["ice", "it melts", "stop and start the flow", "a"]),
    ]  # fmt: skip
    for k in range(4):
        n = int(rng.integers(2, 6))
        choices = [str(w) for w in rng.choice(WORDS, size=n, replace=False)]
        ll = (-rng.uniform(0.5, 3.0, size=n) * np.array([len(c) for c in choices])).round(3)
        cases.append((f"hidden item {k + 1} ({n} choices)", ll.tolist(), choices))
    return cases


def check_acc_norm(student_fn, *, seed: int = 0) -> None:
    """Exercise 18.1: the choice lm-eval's ``acc_norm`` picks."""
    ex = "18.1"
    for what, ll, choices in _acc_norm_cases(seed):
        got = _as_index(ex, call_student(ex, student_fn, list(ll), list(choices)), what,
                        len(choices))  # fmt: skip
        want = choose(ll, choices, "acc_norm")
        if got == want:
            continue
        lls = np.asarray(ll)
        mistakes = [
            (int(np.argmax(lls)), "that is acc: divide each log-likelihood by len(choice), the "
                                  "number of characters, before taking the largest."),
            (int(np.argmax(lls / np.array([len(" " + c) for c in choices]))),
             "lm-eval divides by the length of the choice WITHOUT the leading space it adds to "
             "the request."),
            (int(np.argmax(lls / np.array([len(c.encode()) for c in choices]))),
             "that divides by bytes (acc_bytes); acc_norm counts characters: len(choice)."),
            (int(np.argmin(lls / np.array([len(c) for c in choices]))),
             "log-likelihoods are negative: the best choice has the LARGEST value per "
             "character (closest to 0), not the smallest."),
            (len(choices) - 1 - int(np.argmax((lls / np.array([len(c) for c in choices]))[::-1])),
             "on a tie the FIRST choice wins (numpy.argmax), not the last."),
        ]  # fmt: skip
        hint = next((h for wrong, h in mistakes if wrong == got),
                    "score each choice by log-likelihood / len(choice) and take the largest.")  # fmt: skip
        raise ExerciseError(
            ex, f"{what}: choices {choices}, log-likelihoods {list(ll)}: expected {want}, got "
            f"{got}.", hint,
        )  # fmt: skip
    passed(ex, "the acc_norm decision")


# --- 18.2 ----------------------------------------------------------------------------------


def _wilson_cases(seed: int):
    rng = hidden_rng(seed, 182)
    cases = [("80 right of 100", 80, 100), ("0 right of 20", 0, 20), ("20 right of 20", 20, 20),
             ("1 right of 4 (chance on a 4-choice item)", 1, 4)]  # fmt: skip
    for k in range(3):
        n = int(rng.integers(10, 1000))
        cases.append((f"hidden count {k + 1}", int(rng.integers(0, n + 1)), n))
    return cases


def check_wilson(student_fn, *, seed: int = 0) -> None:
    """Exercise 18.2: the Wilson 95 % interval of ``k`` right of ``n``."""
    ex = "18.2"
    z = 1.96
    for what, k, n in _wilson_cases(seed):
        got = call_student(ex, student_fn, k, n)
        _, low, high = accuracy_ci(np.arange(n) < k, z)
        p = k / n
        wald = z * math.sqrt(p * (1 - p) / n)
        no_shift = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        check_mistakes(
            ex, got, [low, high], what=f"{what} (low, high)",
            hint="centre (p + z²/2n) / (1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²) / "
                 "(1 + z²/n), with z = 1.96.",
            mistakes={
                "that is the normal (Wald) interval p ± z·sqrt(p(1-p)/n); Wilson's is centred "
                "at (p + z²/2n) / (1 + z²/n), which is why it never leaves [0, 1]":
                    [p - wald, p + wald],
                "the Wald interval clipped to [0, 1] is still not Wilson's":
                    [max(0.0, p - wald), min(1.0, p + wald)],
                "the centre moves too: (p + z²/2n) / (1 + z²/n), not p": [p - no_shift, p + no_shift],
            },
        )  # fmt: skip
    passed(ex, "a Wilson interval")


# --- 18.3 ----------------------------------------------------------------------------------


def _paired_cases(seed: int):
    rng = hidden_rng(seed, 183)
    a = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 1])
    cases = [("ten items, B wrong exactly where A is wrong and on item 2", a,
              np.array([1, 0, 0, 1, 0, 1, 1, 0, 1, 1]))]  # fmt: skip
    for k in range(3):
        n = int(rng.integers(40, 400))
        a = (rng.random(n) < rng.uniform(0.3, 0.8)).astype(int)
        b = np.where(rng.random(n) < rng.uniform(0.6, 0.95), a, 1 - a)  # correlated with a
        cases.append((f"hidden pair {k + 1} ({n} items)", a, b))
    return cases


def check_paired(student_fn, *, seed: int = 0) -> None:
    """Exercise 18.3: the paired 95 % interval of accuracy(A) - accuracy(B)."""
    ex = "18.3"
    z = 1.96
    for what, a, b in _paired_cases(seed):
        got = call_student(ex, student_fn, a.tolist(), b.tolist())
        d = (a - b).astype(float)
        n = d.size
        half = z * d.std(ddof=1) / math.sqrt(n)
        pa, pb = a.mean(), b.mean()
        unpaired = z * math.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / n)
        check_mistakes(
            ex, got, [d.mean(), d.mean() - half, d.mean() + half],
            what=f"{what} (difference, low, high)",
            hint="d_i = a_i - b_i per item; difference = mean(d); half-width = 1.96 · "
                 "std(d, ddof=1) / sqrt(n).",
            mistakes={
                "that treats the two models as independent samples (sqrt(pa(1-pa)/n + "
                "pb(1-pb)/n)); they answered the SAME items: use the per-item differences":
                    [d.mean(), d.mean() - unpaired, d.mean() + unpaired],
                "use the sample standard deviation of the differences, ddof=1 (n - 1)":
                    [d.mean(), d.mean() - z * d.std() / math.sqrt(n),
                     d.mean() + z * d.std() / math.sqrt(n)],
                "that is B - A; the exercise asks for A - B": [-d.mean(), -d.mean() - half,
                                                                -d.mean() + half],
            },
        )  # fmt: skip
    passed(ex, "a paired comparison")


# --- 18.4 ----------------------------------------------------------------------------------


def _continuation_cases(seed: int):
    rng = hidden_rng(seed, 184)
    cases = [
        ("a context ending in a space", "Question: Which gas do plants take in?\nAnswer: ",
         "carbon dioxide"),
        ("the usual leading space", "Question: What melts ice?\nAnswer:", " heat"),
        ("a word cut in two", "The photosyn", "thesis of plants"),
    ]  # fmt: skip
    for k in range(3):
        context = " ".join(str(w) for w in rng.choice(WORDS, size=3)) + rng.choice([" ", ":", ""])
        cases.append((f"hidden request {k + 1}", context, " " + str(rng.choice(WORDS))))
    return cases


_TOKENIZER = Built("course_lib.checks.given_torch:lm_tokenizer_512")


def precompute() -> None:
    """What every lecture-18 notebook's checks use: lecture 11's tokenizer (trained on first
    use, then cached), made once by the grader before it grades a class (forked workers share
    it)."""
    _TOKENIZER.build()


def check_continuation_ids(student_fn, *, seed: int = 0) -> None:
    """Exercise 18.4: the continuation's token ids, split as lm-eval splits a request."""
    ex = "18.4"
    recipe = _TOKENIZER
    tokenizer = recipe.build()
    for what, context, continuation in _continuation_cases(seed):
        got = call_student(ex, student_fn, recipe, context, continuation)
        if got is None or isinstance(got, str):
            raise ExerciseError(ex, f"{what}: expected a list of token ids, got {got!r:.40}.")
        try:
            got = [int(i) for i in got]
        except (TypeError, ValueError):
            raise ExerciseError(
                ex, f"{what}: expected a list of token ids, got {got!r:.60}."
            ) from None
        want = encode_pair(tokenizer, context, continuation)[1]
        if got == want:
            continue
        stripped = context.rstrip(" ")
        kept = tokenizer.encode(context + continuation)[len(tokenizer.encode(context)) :]
        mistakes = [
            (tokenizer.encode(continuation),
             "that encodes the continuation on its own; encode context + continuation as one "
             "string and keep the tokens after the context's (a token can span the boundary)."),
            (kept, "move the context's trailing spaces to the front of the continuation first: "
                   "'Answer: ' + 'heat' is scored as 'Answer:' + ' heat'."),
            (tokenizer.encode(stripped + continuation.lstrip(" "))[len(tokenizer.encode(stripped)) :],
             "the space belongs to the continuation: do not drop it."),
        ]  # fmt: skip
        hint = next((h for wrong, h in mistakes if wrong == got),
                    "strip the context's trailing spaces onto the continuation, encode the whole, "
                    "and cut after len(encode(context)) tokens.")  # fmt: skip
        raise ExerciseError(
            ex, f"{what}: context {context!r}, continuation {continuation!r}: expected {want}, "
            f"got {got}.", hint,
        )  # fmt: skip
    passed(ex, "the leading space")
