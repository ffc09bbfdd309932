"""Multiple choice scored by log-likelihood: one request per choice, then a rule picks one.

lm-eval asks ``(context, " " + choice)`` for every choice (the leading space: the answer is a
new word after ``"Answer:"``) and picks the choice with the highest score. The rules differ
only in what they divide the log-likelihood by::

    acc        ll                        lm-eval's acc: longer answers pay for every token
    acc_norm   ll / len(choice)          lm-eval's acc_norm: per character of the choice
                                         (the choice WITHOUT the leading space)
    per_byte   ll / len(choice in UTF-8) lm-eval's acc_bytes
    per_token  ll / (number of tokens)   nanochat's CORE: the mean per-token loss, smallest wins

Ties go to the first choice (``numpy.argmax``), as in lm-eval.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_float_array, check_choice, check_str, check_token_sequence

__all__ = ["RULES", "choice_requests", "choice_scores", "choose", "is_correct", "correct_per_item"]

RULES = ("acc", "acc_norm", "per_byte", "per_token")


def check_choices(choices, gold=None) -> list[str]:
    """``choices`` as a list of str (at least one), and ``gold`` a valid index into it."""
    if isinstance(choices, str) or not isinstance(choices, Sequence):
        raise TypeError(f"choices must be a list of str, got {type(choices).__name__}")
    if len(choices) == 0:
        raise ValueError("choices is empty: an item needs at least one choice to score")
    for i, c in enumerate(choices):
        check_str(c, f"choices[{i}]")
    if gold is not None and (
        isinstance(gold, bool) or not isinstance(gold, numbers.Integral)
        or not 0 <= gold < len(choices)
    ):  # fmt: skip
        raise ValueError(
            f"gold must be the index of the right choice, in [0, {len(choices)}), got {gold!r}"
        )
    return list(choices)


def choice_requests(
    context: str, choices: Sequence[str], delimiter: str = " "
) -> list[tuple[str, str]]:
    """lm-eval's requests for one item: ``(context, delimiter + choice)`` per choice.

    The delimiter (lm-eval's ``target_delimiter``, a space by default) is the leading-space
    convention: ``"Answer:"`` + ``" Paris"``. Without it the choice's first token is the
    word-piece that starts a word glued to the colon, a token the model has rarely seen there.
    """
    check_str(context, "context")
    check_str(delimiter, "delimiter")
    return [(context, delimiter + c) for c in check_choices(choices)]


def choice_scores(
    loglikelihoods: ArrayLike,
    choices: Sequence[str],
    rule: str = "acc",
    token_counts: ArrayLike | None = None,
) -> np.ndarray:
    """``(n_choices,)``: the number each rule maximises (see the module docstring)."""
    choices = check_choices(choices)
    check_choice(rule, "rule", RULES)
    ll = as_float_array(loglikelihoods, "loglikelihoods", min_ndim=1)
    if ll.shape != (len(choices),):
        raise ValueError(
            f"loglikelihoods must hold one number per choice ({len(choices)}), got shape {ll.shape}"
        )
    if rule == "acc":
        return ll
    if rule == "acc_norm":
        return ll / np.array([float(len(c)) for c in choices])
    if rule == "per_byte":
        return ll / np.array([float(len(c.encode("utf-8"))) for c in choices])
    if token_counts is None:
        raise ValueError("rule 'per_token' needs token_counts (the tokens of each continuation)")
    counts = as_float_array(token_counts, "token_counts", min_ndim=1)
    if counts.shape != ll.shape or (counts <= 0).any():
        raise ValueError(
            f"token_counts must hold one positive count per choice, got {counts.tolist()}"
        )
    return ll / counts


def choose(
    loglikelihoods: ArrayLike,
    choices: Sequence[str],
    rule: str = "acc",
    token_counts: ArrayLike | None = None,
) -> int:
    """The index of the chosen answer: the argmax of :func:`choice_scores`, first on a tie."""
    return int(np.argmax(choice_scores(loglikelihoods, choices, rule, token_counts)))


def is_correct(
    loglikelihoods: ArrayLike,
    choices: Sequence[str],
    gold: int,
    rule: str = "acc",
    token_counts: ArrayLike | None = None,
) -> bool:
    """Whether ``rule`` picks the gold choice: one item's 0/1 score."""
    if gold is None:
        raise ValueError("gold must be the index of the right choice, got None")
    check_choices(choices, gold)
    return choose(loglikelihoods, choices, rule, token_counts) == gold


def correct_per_item(
    loglikelihoods: Sequence,
    choices: Sequence,
    gold: Sequence,
    rule: str = "acc",
    token_counts: Sequence | None = None,
) -> np.ndarray:
    """``(n_items,)`` booleans: :func:`is_correct` of every item; each argument holds one entry
    per item (``token_counts`` only for ``"per_token"``)."""
    for name, value in (("loglikelihoods", loglikelihoods), ("choices", choices), ("gold", gold)):
        if isinstance(value, str) or not isinstance(value, (Sequence, np.ndarray)):
            raise TypeError(
                f"{name} must be a list with one entry per item, got {type(value).__name__}"
            )
    n = len(loglikelihoods)
    if token_counts is not None:
        token_counts = check_token_sequence(token_counts, "token_counts")
    if not len(choices) == len(gold) == n or (token_counts is not None and len(token_counts) != n):
        raise ValueError(
            "loglikelihoods, choices, gold (and token_counts) must hold one entry per item, got "
            f"{n}, {len(choices)}, {len(gold)}"
        )
    counts = token_counts if token_counts is not None else [None] * n
    return np.array([is_correct(ll, c, g, rule, k)
                     for ll, c, g, k in zip(loglikelihoods, choices, gold, counts, strict=True)])  # fmt: skip
