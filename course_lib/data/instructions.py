"""Lecture 14's instruction data: tasks whose answers a program can check, and preference pairs.

Every instruction asks for something about a short list of words (3 to 6) taken from the
course's documentation corpus (the words lecture 11's GPT was pretrained on). Five **families**:

    first    "What is the first word of: open file read?"      -> "open"
    last     ... the last word                                   -> "read"
    count    "How many words are in: open file read?"          -> "3"
    reverse  "Reverse the order of the words: open file read"  -> "read file open"
    commas   "Join the words with commas: open file read"      -> "open, file, read"

The first three have a one-word answer (**one-answer families**); the last two rewrite the whole
list. Each family has three **training phrasings** and one **held-out phrasing** never used in
tuning. The 3,146 lowercase words of 3-10 letters in lecture 11's training documents are
split once: 3,046 **training words**, 100 **unseen words** (never in an
instruction the model is tuned on; the pretrained model has read them in the corpus).

Three held-out kinds, kept apart (:func:`held_out_instructions`):

* ``"new_combinations"``: training words and phrasings, in word lists never used in training;
* ``"unseen_words"``: only unseen words, training phrasings;
* ``"unseen_phrasing"``: training words (new lists), the held-out phrasing.

:func:`validation_instructions` is carved from the **training side** (training words and
phrasings, new lists, drawn as ``"new_combinations"`` is but with its own seed): it is where
settings are chosen (lecture 14's DPO settings), so that the held-out sets are measured once,
never tuned on. :func:`training_instructions` never yields a word list of a held-out or the
validation set. Answers are scored by
exact match after stripping spaces (:func:`exact_match`). :func:`preference_pair` gives the
right answer (chosen) and a typical wrong one (rejected), by rule: the other end of the list for
first/last, a count off by one, the list unreversed, the words without commas.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .._validation import check_choice, check_positive_int, check_str, check_token_sequence
from .language_modeling import lm_documents

__all__ = [
    "FAMILIES",
    "ONE_ANSWER_FAMILIES",
    "HELD_OUT_KINDS",
    "PHRASINGS",
    "Instruction",
    "instruction_words",
    "solve",
    "make_instruction",
    "training_instructions",
    "held_out_instructions",
    "validation_instructions",
    "preference_pair",
    "exact_match",
]

# Training phrasings first; the last one of each family is the held-out phrasing.
PHRASINGS = {
    "first": (
        "What is the first word of: {words}?",
        "Give the first word in this list: {words}",
        "{words} -- which word comes first?",
        "Name the word at the start of: {words}",
    ),
    "last": (
        "What is the last word of: {words}?",
        "Give the last word in this list: {words}",
        "{words} -- which word comes last?",
        "Name the word at the end of: {words}",
    ),
    "count": (
        "How many words are in: {words}?",
        "Count the words in this list: {words}",
        "{words} -- how many words is that?",
        "Tell me the number of words in: {words}",
    ),
    "reverse": (
        "Reverse the order of the words: {words}",
        "Write these words backwards: {words}",
        "{words} -- say it in reverse order.",
        "Put the words in the opposite order: {words}",
    ),
    "commas": (
        "Join the words with commas: {words}",
        "Separate these words by commas: {words}",
        "{words} -- put commas between the words.",
        "List the words with a comma after each but the last: {words}",
    ),
}
FAMILIES = tuple(PHRASINGS)
ONE_ANSWER_FAMILIES = ("first", "last", "count")
HELD_OUT_KINDS = ("new_combinations", "unseen_words", "unseen_phrasing")
N_TRAINING_PHRASINGS = 3
MIN_WORDS, MAX_WORDS = 3, 6
MIN_COUNT, N_UNSEEN = 1, 100


class Instruction(NamedTuple):
    """One task: its family, phrasing number (3 = held out), word list, prompt and answer."""

    family: str
    phrasing: int
    words: tuple[str, ...]
    prompt: str
    answer: str


@functools.lru_cache(maxsize=1)
def instruction_words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(training_words, unseen_words)``: the lowercase words of 3-10 letters in lecture 11's
    training documents (alphabetical), split by a fixed shuffle into 3,046 and 100."""
    counts = Counter(w for d in lm_documents()[0] for w in re.findall(r"\b[a-z]{3,10}\b", d))
    top = sorted(w for w, n in counts.items() if n >= MIN_COUNT)
    order = np.random.default_rng(0).permutation(len(top))
    shuffled = [top[i] for i in order]
    return tuple(shuffled[N_UNSEEN:]), tuple(shuffled[:N_UNSEEN])


def _check_words(words) -> tuple[str, ...]:
    words = check_token_sequence(words, "words")
    for i, w in enumerate(words):
        check_str(w, f"words[{i}]")
        if not w or w.split() != [w]:
            raise ValueError(f"words[{i}] must be one word without spaces, got {w!r}")
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        raise ValueError(f"words must hold {MIN_WORDS} to {MAX_WORDS} words, got {len(words)}")
    return tuple(words)


def solve(family: str, words: Sequence[str]) -> str:
    """The right answer, computed by program: what every reply is checked against."""
    check_choice(family, "family", FAMILIES)
    words = _check_words(words)
    if family == "first":
        return words[0]
    if family == "last":
        return words[-1]
    if family == "count":
        return str(len(words))
    if family == "reverse":
        return " ".join(reversed(words))
    return ", ".join(words)  # commas


def make_instruction(family: str, words: Sequence[str], phrasing: int = 0) -> Instruction:
    """The instruction of ``family`` about ``words`` in phrasing ``phrasing`` (0-2 training,
    3 held out), with its answer."""
    check_choice(family, "family", FAMILIES)
    words = _check_words(words)
    if isinstance(phrasing, bool) or not isinstance(phrasing, int) or not 0 <= phrasing <= 3:
        raise ValueError(f"phrasing must be 0, 1, 2 (training) or 3 (held out), got {phrasing!r}")
    prompt = PHRASINGS[family][phrasing].format(words=" ".join(words))
    return Instruction(family, phrasing, words, prompt, solve(family, words))


def _random_words(rng: np.random.Generator, vocabulary: Sequence[str]) -> tuple[str, ...]:
    n = int(rng.integers(MIN_WORDS, MAX_WORDS + 1))
    return tuple(vocabulary[i] for i in rng.choice(len(vocabulary), size=n, replace=False))


_SEEDS = {"new_combinations": 1, "unseen_words": 2, "unseen_phrasing": 3, "validation": 4}


@functools.lru_cache(maxsize=8)
def _held_out(kind: str, per_family: int) -> tuple[Instruction, ...]:
    """``per_family`` instructions of each family of one held-out kind, or of ``"validation"``
    (drawn as ``"new_combinations"`` is, with its own seed)."""
    train_words, unseen = instruction_words()
    seed = _SEEDS[kind]
    rng = np.random.default_rng(seed)
    out = []
    for family in FAMILIES:
        for i in range(per_family):
            words = _random_words(rng, unseen if kind == "unseen_words" else train_words)
            phrasing = 3 if kind == "unseen_phrasing" else i % N_TRAINING_PHRASINGS
            out.append(make_instruction(family, words, phrasing))
    return tuple(out)


HELD_OUT_PER_FAMILY = 60


def held_out_instructions(kind: str, per_family: int = HELD_OUT_PER_FAMILY) -> list[Instruction]:
    """``per_family`` held-out instructions of each family, of one kind of
    :data:`HELD_OUT_KINDS` (fixed seeds: the same on every machine)."""
    check_choice(kind, "kind", HELD_OUT_KINDS)
    per_family = check_positive_int(per_family, "per_family")
    if per_family > HELD_OUT_PER_FAMILY:
        raise ValueError(f"per_family must be <= {HELD_OUT_PER_FAMILY}, got {per_family}")
    full = _held_out(kind, HELD_OUT_PER_FAMILY)
    return [x for i, x in enumerate(full) if i % HELD_OUT_PER_FAMILY < per_family]


@functools.lru_cache(maxsize=1)
def _held_out_lists() -> frozenset[tuple[str, ...]]:
    return frozenset(x.words for k in HELD_OUT_KINDS for x in _held_out(k, HELD_OUT_PER_FAMILY))


VALIDATION_PER_FAMILY = 200


def validation_instructions(per_family: int = VALIDATION_PER_FAMILY) -> list[Instruction]:
    """``per_family`` validation instructions of each family: training words and training
    phrasings (cycled, as in ``"new_combinations"``) in word lists that are in no held-out set
    and that :func:`training_instructions` never yields. Choose settings on these, never on
    the held-out sets."""
    per_family = check_positive_int(per_family, "per_family")
    if per_family > VALIDATION_PER_FAMILY:
        raise ValueError(f"per_family must be <= {VALIDATION_PER_FAMILY}, got {per_family}")
    full = _held_out("validation", VALIDATION_PER_FAMILY)
    if {x.words for x in full} & _held_out_lists():  # fixed seeds: never, but say so if it did
        raise RuntimeError("a validation word list is also in a held-out set")
    return [x for i, x in enumerate(full) if i % VALIDATION_PER_FAMILY < per_family]


@functools.lru_cache(maxsize=1)
def _avoided_lists() -> frozenset[tuple[str, ...]]:
    """The lists training never uses: every held-out list and every validation list."""
    validation = _held_out("validation", VALIDATION_PER_FAMILY)
    return _held_out_lists() | frozenset(x.words for x in validation)


def training_instructions(n: int, seed: int = 0) -> list[Instruction]:
    """``n`` training instructions: a random family, training phrasing and list of training
    words each (a list that is in a held-out or the validation set is drawn again)."""
    n = check_positive_int(n, "n")
    rng = np.random.default_rng(check_positive_int(seed, "seed", allow_zero=True))
    train_words, _ = instruction_words()
    avoid = _avoided_lists()
    out = []
    while len(out) < n:
        family = FAMILIES[int(rng.integers(len(FAMILIES)))]
        phrasing = int(rng.integers(N_TRAINING_PHRASINGS))
        words = _random_words(rng, train_words)
        if words not in avoid:
            out.append(make_instruction(family, words, phrasing))
    return out


def preference_pair(instruction: Instruction) -> tuple[str, str]:
    """``(chosen, rejected)`` for one instruction: the right answer and a typical wrong one."""
    if not isinstance(instruction, Instruction):
        raise TypeError(
            f"instruction must be an Instruction (make_instruction), got {type(instruction).__name__}"
        )
    family, words = instruction.family, instruction.words
    rejected = {
        "first": words[-1],  # the wrong slot
        "last": words[0],
        "count": str(len(words) + 1),  # off by one
        "reverse": " ".join(words),  # not reversed
        "commas": " ".join(words),  # no commas
    }[family]
    chosen = solve(family, words)
    if rejected == chosen:  # e.g. "first" of ("cat", "dog", "cat"): the slip gives the answer
        raise ValueError(
            f"instruction: the typical mistake for {family!r} on {list(words)} gives the right "
            f"answer {chosen!r}, so there is no preference between them; use distinct words"
        )
    return chosen, rejected


def exact_match(reply: str, answer: str) -> bool:
    """True if the reply is the answer, ignoring spaces at either end."""
    return check_str(reply, "reply").strip() == check_str(answer, "answer").strip()
