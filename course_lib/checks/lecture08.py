"""Checks for the exercises of lecture 08 (BERT: masking rule, NSP pairs, a BPE merge step)."""

from __future__ import annotations

import numpy as np

from ..data.pretraining import IGNORE_INDEX, pair_input
from ..tokenization import count_pairs, merge_pair
from . import (
    Built,
    ExerciseError,
    call_student,
    call_student_frozen,
    check_value,
    frozen,
    hidden_rng,
    passed,
    within,
)

__all__ = [
    "check_mlm_masking",
    "check_nsp_example",
    "check_bpe_merge_step",
    "check_masking_statistics",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "8.1": (
        "course_lib.data.pretraining.mask_tokens",
        "course_lib.data.pretraining.PretrainingData",
    ),
    "8.2": (
        "course_lib.data.pretraining.make_nsp_pair",
        "course_lib.data.pretraining.pair_input",
        "course_lib.data.pretraining.truncate_pair",
    ),
    "8.3": (
        "course_lib.tokenization.bpe.count_pairs",
        "course_lib.tokenization.bpe.merge_pair",
        "course_lib.tokenization.bpe_training.train_bpe",
        "course_lib.tokenization.bpe_training.train_bpe_with_history",
    ),
    "8.4": (
        "course_lib.data.pretraining.mask_tokens",
        "course_lib.data.pretraining.PretrainingData",
    ),
}


def _rng(*seed) -> Built:
    """The recipe of a numpy Generator, built where the student's code runs."""
    flat = [int(v) for s in seed for v in (s if isinstance(s, tuple) else (s,))]
    return Built("numpy.random:default_rng", seed=flat)


MASK_ID, VOCAB_SIZE, N_SPECIAL = 4, 1000, 5


def _masking_call(ex, student_fn, ids, special, seed, *extra):
    """Call the answer on read-only inputs (an answer that writes into ``ids`` fails)."""
    got = call_student_frozen(ex, student_fn, frozen(ids), frozen(special), _rng(81, seed), *extra)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise ExerciseError(
            ex, f"expected a tuple (masked, labels), got {type(got).__name__}.",
            "end with `return masked, labels`.",
        )  # fmt: skip
    return tuple(np.asarray(x) for x in got)


def check_mlm_masking(student_fn, *, seed: int = 0) -> None:
    """Exercise 8.1: ``mask_for_mlm(ids, special, rng) -> (masked, labels)`` with BERT's rule."""
    ex = "8.1"
    rng = np.random.default_rng((81, seed))
    ids = rng.integers(N_SPECIAL, VOCAB_SIZE, size=(300, 40))
    ids[:, 0], ids[:, 20], ids[:, 30:] = 2, 3, 0  # [CLS], [SEP], padding
    special = ids < N_SPECIAL
    masked, labels = _masking_call(ex, student_fn, ids, special, seed)
    check_value(ex, masked.shape, ids.shape, what="shape of masked")
    check_value(ex, labels.shape, ids.shape, what="shape of labels")
    picked = labels != IGNORE_INDEX
    if picked.mean() > 0.5:
        raise ExerciseError(
            ex,
            f"{picked.mean():.0%} of the labels are not -100.",
            "labels hold the original id ONLY at picked positions and -100 everywhere else "
            "(the loss ignores -100): labels = np.where(picked, ids, -100).",
        )
    if picked[special].any() or (masked[special] != ids[special]).any():
        raise ExerciseError(
            ex,
            "a special token ([CLS], [SEP] or [PAD]) was picked or changed.",
            "pick only where `special` is False: `picked = (rng.random(shape) < 0.15) & ~special`.",
        )
    if (labels[picked] != ids[picked]).any():
        raise ExerciseError(
            ex,
            "at a picked position the label must be the ORIGINAL token id.",
            "labels = np.where(picked, ids, -100), computed from the ids before replacing.",
        )
    if (masked[~picked] != ids[~picked]).any():
        raise ExerciseError(
            ex,
            "a position that was not picked (label -100) was changed.",
            "only picked positions may become [MASK] or a random token.",
        )
    # The rates are judged on several draws pooled (five calls with other rng seeds, about
    # 42,000 tokens) at 4 sigma: a 0.14 pick rate or a 75/15/10 split is more than 5 sigma off.
    n_normal, n_picked = int((~special).sum()), int(picked.sum())
    n_mask = int((masked[picked] == MASK_ID).sum())
    n_same = int((masked[picked] == ids[picked]).sum())
    for draw in range(1, 5):
        m2, l2 = _masking_call(ex, student_fn, ids, special, (seed, draw))
        p2 = l2 != IGNORE_INDEX
        n_normal, n_picked = n_normal + int((~special).sum()), n_picked + int(p2.sum())
        n_mask += int((m2[p2] == MASK_ID).sum())
        n_same += int((m2[p2] == ids[p2]).sum())
    rate = n_picked / n_normal
    if not within(n_picked, n_normal, 0.15, sigmas=4):
        raise ExerciseError(
            ex,
            f"picked rate: expected about 0.150 of the non-special tokens, got {rate:.3f}.",
            "each non-special token is picked with probability 0.15.",
        )
    to_mask, unchanged = n_mask / n_picked, n_same / n_picked
    to_random = 1 - to_mask - unchanged
    if not (
        within(n_mask, n_picked, 0.8, sigmas=4)
        and within(n_same, n_picked, 0.1 + 0.1 / (VOCAB_SIZE - N_SPECIAL), sigmas=4)
    ):
        raise ExerciseError(
            ex,
            "of the picked tokens, expected about 0.80 [MASK] / 0.10 random / 0.10 unchanged,\n"
            f"  got {to_mask:.3f} [MASK] / {to_random:.3f} random / {unchanged:.3f} unchanged.",
            "draw one more uniform number u per picked token: u < 0.8 -> [MASK] (id 4), "
            "0.8 <= u < 0.9 -> a random id in [5, vocab_size), else keep the token.",
        )
    again = _masking_call(ex, student_fn, ids, special, seed)
    if not (np.array_equal(again[0], masked) and np.array_equal(again[1], labels)):
        raise ExerciseError(
            ex,
            "two calls with the same rng seed gave different results.",
            "draw every random number from the rng you are given (rng.random, rng.integers), "
            "not from np.random.* or the random module: runs must be reproducible.",
        )
    # A vocabulary of 10 ids (5 of them special): random replacements drawn from [0, 10)
    # would be special ids half of the time.
    small = rng.integers(N_SPECIAL, 10, size=(200, 50))
    small[:, 0] = 2
    masked, labels = _masking_call(ex, student_fn, small, small < N_SPECIAL, seed, MASK_ID, 10)
    picked = labels != IGNORE_INDEX
    replaced = masked[picked & (masked != MASK_ID) & (masked != small)]
    bad = (replaced < N_SPECIAL) | (replaced >= 10)
    if bad.any() or (masked[~picked] != small[~picked]).any():
        raise ExerciseError(
            ex,
            f"with vocab_size=10, random replacements must be normal token ids in [5, 10), "
            f"got ids such as {sorted(set(replaced[bad].tolist()))[:5]}.",
            "random replacements never use the special ids 0-4 ([PAD], [UNK], [CLS], [SEP], "
            "[MASK]): rng.integers(5, vocab_size, size=...), and use the vocab_size argument.",
        )
    passed(ex, "BERT's masking rule (15 %; 80/10/10; specials untouched)")


def _docs():
    words = "the a cat dog sat ran on under mat log big small red blue".split()
    rng = np.random.default_rng(82)
    return [
        [[str(x) for x in rng.choice(words, size=int(rng.integers(2, 6)))] + [f"d{d}s{s}"]
         for s in range(int(rng.integers(2, 5)))]
        for d in range(12)
    ]  # fmt: skip


def check_nsp_example(student_fn, *, seed: int = 0) -> None:
    """Exercise 8.2: ``nsp_example(documents, doc, index, rng) -> (tokens, segments, is_next)``.

    Each call gets a fresh generator (seeded with the call number), so the statistics over
    many calls hold wherever the student's code runs.
    """
    ex = "8.2"
    docs = _docs()
    positions = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
    n, n_true, other_docs = 600, 0, set()
    repeats = [positions[(k * 3) % len(positions)] for k in range(10)]
    if any(
        call_student(ex, student_fn, docs, d, i, _rng(82, seed, 10_000 + k))
        != call_student(ex, student_fn, docs, d, i, _rng(82, seed, 10_000 + k))
        for k, (d, i) in enumerate(repeats)
    ):
        raise ExerciseError(
            ex,
            "two calls with the same rng seed gave different results.",
            "draw every random choice from the rng you are given (rng.random, rng.integers), "
            "not from np.random.* or the random module.",
        )
    for k in range(n):
        d, i = positions[k % len(positions)]
        got = call_student(ex, student_fn, docs, d, i, _rng(82, seed, k))
        if not (isinstance(got, tuple) and len(got) == 3):
            raise ExerciseError(
                ex, f"expected a tuple (tokens, segments, is_next), got {type(got).__name__}.",
                "end with `return tokens, segments, is_next`.",
            )  # fmt: skip
        tokens, segments, is_next = list(got[0]), list(got[1]), got[2]
        if is_next not in (0, 1):
            raise ExerciseError(ex, f"is_next must be 1 or 0, got {is_next!r}.")
        a = docs[d][i]
        if tokens[: len(a) + 2] != ["[CLS]", *a, "[SEP]"] or tokens[-1:] != ["[SEP]"]:
            raise ExerciseError(
                ex,
                f"for doc={d}, index={i}: expected the tokens to start with "
                f"{['[CLS]', *a, '[SEP]']} and end with '[SEP]', got {tokens}.",
                "[CLS] + A + [SEP] + B + [SEP]",
            )
        if is_next:
            b = docs[d][i + 1]
        else:
            if "[SEP]" not in tokens[len(a) + 1 :]:
                raise ExerciseError(ex, f"no [SEP] after sentence A in {tokens}.")
            b = tokens[len(a) + 2 : -1]
            homes = [j for j, doc in enumerate(docs) if b in doc]
            if not homes or d in homes:
                raise ExerciseError(
                    ex,
                    f"with is_next=0, B must be a sentence of ANOTHER document; for doc={d}, "
                    f"index={i} got B={b}.",
                    "pick a random document other than `doc`, then a random sentence in it.",
                )
            other_docs.add(homes[0])
        want_tokens, want_segments = pair_input(a, b)
        check_value(ex, tokens, want_tokens,
                    what=f"tokens for doc={d}, index={i}, is_next={is_next}",
                    hint="[CLS] + A + [SEP] + B + [SEP]")  # fmt: skip
        check_value(ex, segments, want_segments,
                    what=f"segment ids for doc={d}, index={i}",
                    hint="0 for [CLS], A and the FIRST [SEP]; 1 for B and the last [SEP] "
                    "(len(A) + 2 zeros, then len(B) + 1 ones).")  # fmt: skip
        n_true += int(is_next)
    if not within(n_true, n, 0.5):
        raise ExerciseError(
            ex,
            f"is_next=1 should happen half of the time; got {n_true} of {n} ({n_true / n:.2f}).",
            "use the rng: `if rng.random() < 0.5:` true next sentence, else a random one.",
        )
    if len(other_docs) < 5:
        raise ExerciseError(
            ex,
            f"random B sentences came from only {len(other_docs)} different documents.",
            "choose the other document at random with the rng each time.",
        )
    passed(ex, "NSP examples: [CLS] A [SEP] B [SEP], segments, 50 % true pairs")


def _reference_step(words: dict) -> tuple[tuple[str, str], dict]:
    pairs = count_pairs(words)
    best = min(pairs, key=lambda p: (-pairs[p], p))
    return best, {merge_pair(w, best): c for w, c in words.items()}


def _bpe_mistakes(words: dict) -> dict:
    """The pair each usual mistake picks, keyed by the hint naming it."""
    pairs = count_pairs(words)
    unweighted = count_pairs({w: 1 for w in words})
    no_overlap: dict = {}
    for w, c in words.items():
        seen, i = [], 0
        while i < len(w) - 1:
            seen.append((w[i], w[i + 1]))
            i += 2 if w[i] == w[i + 1] else 1  # "a a a" counted once
        for p in seen:
            no_overlap[p] = no_overlap.get(p, 0) + c
    return {
        "on a tie take the alphabetically SMALLEST pair: min(pairs, key=lambda p: (-count, p)).": (
            max(pairs, key=lambda p: (pairs[p], p))
        ),
        "weight each occurrence by the word's count (a word seen 5 times counts 5 times).": min(
            unweighted, key=lambda p: (-unweighted[p], p)
        ),
        "overlapping occurrences count: ('a', 'a', 'a') holds ('a', 'a') twice.": min(
            no_overlap, key=lambda p: (-no_overlap[p], p)
        ),
    }


def _random_words(rng: np.random.Generator) -> dict:
    """A hidden corpus: words over a small alphabet (so pairs repeat and overlap) with counts."""
    words = {}
    while len(words) < 6:
        word = tuple(str(c) for c in rng.choice(list("abcd"), size=int(rng.integers(2, 6))))
        words[word] = int(rng.integers(1, 6))
    return words


def check_bpe_merge_step(student_fn, *, seed: int = 0) -> None:
    """Exercise 8.3: ``bpe_merge_step(words) -> (pair, new_words)``: one merge of BPE, on fixed
    corpora and (seed > 0) hidden random ones."""
    ex = "8.3"
    cases = {
        "the toy corpus": {
            tuple("low"): 5,
            tuple("lower"): 2,
            tuple("newest"): 6,
            tuple("widest"): 3,
        },  # fmt: skip
        "a tie between two pairs": {tuple("ab"): 2, tuple("cd"): 2},
        "counts that outweigh the number of words": {
            tuple("ab"): 1,
            tuple("abx"): 1,
            tuple("cd"): 5,
        },
        "overlapping pairs (a a a)": {tuple("aaa"): 3, tuple("ab"): 2},
        "overlapping pairs decide the winner": {tuple("aaa"): 2, tuple("bc"): 3},
        "symbols that contain other symbols": {("ab", "c"): 1, ("b", "c"): 3},
        "symbols that are already merged": {
            ("lo", "w"): 5,
            ("lo", "w", "er"): 2,
            ("n", "e", "w"): 1,
        },
    }
    if seed:
        rng = hidden_rng(seed, 83)
        cases = {f"a hidden corpus {i}": _random_words(rng) for i in range(3)}
    for what, words in cases.items():
        got = call_student(ex, student_fn, dict(words))
        if not (isinstance(got, tuple) and len(got) == 2):
            raise ExerciseError(
                ex, f"expected a tuple (pair, new_words), got {type(got).__name__}.",
                "end with `return best, new_words`.",
            )  # fmt: skip
        best, new_words = _reference_step(words)
        hint = ("the most frequent adjacent pair, counted with the word counts; ties: the "
                "alphabetically smallest pair.")  # fmt: skip
        if tuple(got[0]) != best:
            hint = next((h for h, p in _bpe_mistakes(words).items() if tuple(got[0]) == p), hint)
        check_value(ex, tuple(got[0]), best, what=f"merged pair for {what}", hint=hint)
        check_value(ex, dict(got[1]), new_words, what=f"words after the merge for {what}",
                    hint="scan each word left to right; after merging two symbols, continue "
                    "after the second one (so a a a -> aa a).")  # fmt: skip
    passed(ex, "one BPE merge step")


def _expected_fractions(vocab_size: int) -> tuple[float, float]:
    """(changed, visible) of the 15 % / 80-10-10 rule: a random replacement drawn from the
    vocab_size - 5 normal ids is the original token again with probability 1 / (vocab_size - 5)."""
    again = 1 / (vocab_size - N_SPECIAL)
    return 0.15 * (0.8 + 0.1 * (1 - again)), 0.1 + 0.1 * again


STATISTICS_TOKENS = 200_000  # the tokens the check asks the student's measurement to use


def check_masking_statistics(student_fn, *, seed: int = 0) -> None:
    """Exercise 8.4 (predict, then measure): ``masking_statistics(vocab_size, n_tokens, rng) ->
    (changed_fraction, visible_fraction)``, measured with the student's ``mask_for_mlm``.

    ``changed_fraction``: share of the non-special tokens whose input id is changed,
    0.15 * (0.8 + 0.1 * (1 - 1/(V-5))). ``visible_fraction``: share of the predicted positions
    whose input still shows the original token, 0.1 + 0.1/(V-5). The check asks for V = 1000 and
    (seed > 0) a hidden small vocabulary (where a replacement is often the original again), and
    accepts 4.5 standard errors of a 200,000-token measurement. A wrong value is told "too low"
    or "too high" and why, never the value.
    """
    ex = "8.4"
    vocabs = [VOCAB_SIZE]
    if seed:
        vocabs.append(int(hidden_rng(seed, 84).choice([7, 8, 9, 15])))
    for vocab in vocabs:
        got = call_student(ex, student_fn, vocab, STATISTICS_TOKENS, _rng(84, seed, vocab))
        what = f"masking_statistics({vocab}, {STATISTICS_TOKENS}, rng)"
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise ExerciseError(ex, f"{what}: expected a pair (changed_fraction, "
                                f"visible_fraction), got {got!r:.80}.")  # fmt: skip
        changed, visible = _expected_fractions(vocab)
        for name, value, expected, n in (
            ("changed_fraction", got[0], changed, STATISTICS_TOKENS),
            ("visible_fraction", got[1], visible, 0.15 * STATISTICS_TOKENS),
        ):
            if isinstance(value, bool) or not isinstance(
                value, (int, float, np.floating, np.integer)
            ):
                raise ExerciseError(ex, f"{what}: {name} must be a number between 0 and 1, got "
                                    f"{value!r:.60}.")  # fmt: skip
            tol = 4.5 * np.sqrt(expected * (1 - expected) / n)
            if abs(value - expected) <= tol:
                continue
            side = "too low" if value < expected else "too high"
            if name == "changed_fraction":
                hint = ("count the non-special positions where masked != ids, divided by the "
                        "number of non-special positions. ") + (
                    "A picked token that is kept (10 %), or replaced by itself, is not changed."
                    if side == "too high" else
                    "Random replacements change the input too, not only [MASK].")  # fmt: skip
            else:
                hint = ("among the positions with a label (labels != -100), count those where "
                        "masked == ids. ") + (
                    "Is it the share that is NOT visible?" if value > 0.5 else
                    "A random replacement can draw the original token again, more often the "
                    "smaller the vocabulary: measure, do not compute.")  # fmt: skip
            raise ExerciseError(ex, f"{what}: your {name} {float(value):.4f} is {side} (more "
                                f"than {tol:.4f} from what the rule gives).", hint)  # fmt: skip
    passed(ex, "what the masking rule does to the input")
