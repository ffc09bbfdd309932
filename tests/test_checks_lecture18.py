"""Lecture 18 checks: right answers (two ways each, written without course_lib) pass on several
hidden seeds; the usual mistakes get their hint; the stub fails."""

import math

import numpy as np
import pytest
from _exercise_stub import STUB_MESSAGE
from _exercise_stub import stub as _stub
from scipy.stats import norm

from course_lib.checks import ExerciseError
from course_lib.checks.lecture18 import (
    check_acc_norm,
    check_continuation_ids,
    check_paired,
    check_wilson,
)

# --- right answers, written independently of course_lib ------------------------------------


def acc_norm_loop(lls, choices):
    best, best_score = 0, -math.inf
    for i, (ll, c) in enumerate(zip(lls, choices, strict=True)):
        if ll / len(c) > best_score:
            best, best_score = i, ll / len(c)
    return best


def acc_norm_numpy32(lls, choices):
    scores = np.asarray(lls, dtype=np.float32) / np.array([len(c) for c in choices], np.float32)
    return np.argmax(scores)  # a numpy integer is an int too


def wilson_formula(k, n):
    z = 1.96
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def wilson_quadratic(k, n):
    # The roots in p of (k/n - p)^2 = z^2 p (1 - p) / n.
    z = 1.96
    a, b, c = 1 + z * z / n, -(2 * k / n + z * z / n), (k / n) ** 2
    disc = math.sqrt(b * b - 4 * a * c)
    return np.float32((-b - disc) / (2 * a)), np.float32((-b + disc) / (2 * a))


def paired_numpy(a, b):
    d = np.subtract(a, b, dtype=float)
    half = 1.96 * np.std(d, ddof=1) / np.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def paired_scipy(a, b):
    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = norm.ppf(0.975).round(2) * sd / math.sqrt(n)
    return [mean, mean - half, mean + half]


def continuation_strip(tokenizer, context, continuation):
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    return tokenizer.encode(stripped + continuation)[len(tokenizer.encode(stripped)) :]


def continuation_loop(tokenizer, context, continuation):
    while context.endswith(" "):
        context, continuation = context[:-1], " " + continuation
    ids = tokenizer.encode(context + continuation)
    return ids[len(tokenizer.encode(context)) :]


RIGHT = [
    (check_acc_norm, acc_norm_loop, acc_norm_numpy32, "18.1"),
    (check_wilson, wilson_formula, wilson_quadratic, "18.2"),
    (check_paired, paired_numpy, paired_scipy, "18.3"),
    (check_continuation_ids, continuation_strip, continuation_loop, "18.4"),
]


@pytest.mark.parametrize("check, first, second, ex", RIGHT, ids=[r[3] for r in RIGHT])
def test_right_answers_pass_for_several_seeds(check, first, second, ex, capsys):
    for seed in (0, 1, 7, 123):
        check(first, seed=seed)
        check(second, seed=seed)
    assert f"Exercise {ex} passed" in capsys.readouterr().out


# --- the usual mistakes ---------------------------------------------------------------------


def acc_norm_with_space(lls, choices):
    return int(np.argmax(np.asarray(lls) / np.array([len(" " + c) for c in choices])))


def wald(k, n):
    p = k / n
    half = 1.96 * math.sqrt(p * (1 - p) / n)
    return p - half, p + half


def unpaired(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = len(a)
    half = 1.96 * math.sqrt(a.mean() * (1 - a.mean()) / n + b.mean() * (1 - b.mean()) / n)
    return a.mean() - b.mean(), a.mean() - b.mean() - half, a.mean() - b.mean() + half


MISTAKES = [
    (check_acc_norm, lambda lls, choices: int(np.argmax(lls)), "that is acc"),
    (check_acc_norm, acc_norm_with_space, "WITHOUT the leading space"),
    (check_acc_norm, lambda lls, ch: int(np.argmax(np.asarray(lls) / [len(c.encode()) for c in ch])),
     "divides by bytes"),
    (check_wilson, wald, "normal (Wald) interval"),
    (check_paired, unpaired, "independent samples"),
    (check_paired, lambda a, b: paired_numpy(b, a), "B - A"),
    (check_continuation_ids, lambda tok, ctx, cont: tok.encode(cont), "on its own"),
    (check_continuation_ids,
     lambda tok, ctx, cont: tok.encode(ctx + cont)[len(tok.encode(ctx)) :], "trailing spaces"),
]  # fmt: skip


@pytest.mark.parametrize("check, wrong, fragment", MISTAKES)
def test_mistakes_get_their_hint(check, wrong, fragment):
    with pytest.raises(ExerciseError) as err:
        check(wrong)
    assert fragment in str(err.value)


@pytest.mark.parametrize("check", [r[0] for r in RIGHT])
def test_stub_fails(check):
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check(_stub)
