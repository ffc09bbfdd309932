"""Lecture 08 checks: pass the reference, fail plausible wrong answers and stubs."""

import numpy as np
import pytest

from course_lib.checks import ExerciseError
from course_lib.checks.lecture08 import (
    check_bpe_merge_step,
    check_mlm_masking,
    check_nsp_example,
)
from course_lib.data.pretraining import make_nsp_pair, mask_tokens, pair_input
from course_lib.tokenization import count_pairs, merge_pair


def stub(*args, **kwargs):
    raise NotImplementedError("replace this line with your code")


# ----------------------------------------------------------------------------------- 8.1


def ref_mask(ids, special, rng, mask_id=4, vocab_size=1000):
    return mask_tokens(ids, rng, mask_id=mask_id, vocab_size=vocab_size, special_ids=range(5))


def all_mask(ids, special, rng, mask_id=4, vocab_size=1000):
    picked = (rng.random(ids.shape) < 0.15) & ~special
    return np.where(picked, mask_id, ids), np.where(picked, ids, -100)


def masks_specials_too(ids, special, rng, mask_id=4, vocab_size=1000):
    picked = rng.random(ids.shape) < 0.15
    return np.where(picked, mask_id, ids), np.where(picked, ids, -100)


def labels_from_another_draw(ids, special, rng, mask_id=4, vocab_size=1000):
    masked, _ = ref_mask(ids, special, rng)
    _, labels = ref_mask(ids, special, rng)  # labels no longer match the masked positions
    return masked, labels


def test_masking_check(capsys):
    check_mlm_masking(ref_mask)
    assert "Exercise 8.1 passed" in capsys.readouterr().out
    with pytest.raises(
        ExerciseError, match=r"(?s)expected about 0.80 \[MASK\].*got 1.000 \[MASK\]"
    ):
        check_mlm_masking(all_mask)
    with pytest.raises(ExerciseError, match="special token"):
        check_mlm_masking(masks_specials_too)
    with pytest.raises(ExerciseError, match="not picked"):
        check_mlm_masking(labels_from_another_draw)
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_mlm_masking(stub)


# ----------------------------------------------------------------------------------- 8.2


def ref_nsp(documents, doc, index, rng):
    a, b, is_next = make_nsp_pair(documents, doc, index, rng)
    tokens, segments = pair_input(a, b)
    return tokens, segments, is_next


def nsp_same_segment(documents, doc, index, rng):
    tokens, segments, is_next = ref_nsp(documents, doc, index, rng)
    return tokens, [0] * len(tokens), is_next


def nsp_random_from_any_document(documents, doc, index, rng):
    a = documents[doc][index]
    if rng.random() < 0.5:
        b, is_next = documents[doc][index + 1], 1
    else:
        other = int(rng.integers(len(documents)))  # may pick the same document
        b, is_next = documents[other][int(rng.integers(len(documents[other])))], 0
    return (*pair_input(a, b), is_next)


def nsp_always_true(documents, doc, index, rng):
    return (*pair_input(documents[doc][index], documents[doc][index + 1]), 1)


def test_nsp_check(capsys):
    check_nsp_example(ref_nsp)
    assert "Exercise 8.2 passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="(?s)segment ids.*expected.*got"):
        check_nsp_example(nsp_same_segment)
    with pytest.raises(ExerciseError, match="ANOTHER document"):
        check_nsp_example(nsp_random_from_any_document)
    with pytest.raises(ExerciseError, match="half of the time"):
        check_nsp_example(nsp_always_true)
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_nsp_example(stub)


# ----------------------------------------------------------------------------------- 8.3


def ref_step(words):
    pairs = count_pairs(words)
    best = min(pairs, key=lambda p: (-pairs[p], p))
    return best, {merge_pair(w, best): c for w, c in words.items()}


def step_with_str_replace(words):
    # Joins symbols into a string and replaces: breaks on overlaps and on merged symbols.
    best, _ = ref_step(words)
    new = {}
    for w, c in words.items():
        s = " ".join(w).replace(" ".join(best), "".join(best))
        new[tuple(s.split(" "))] = c
    return best, new


def step_ignoring_counts(words):
    pairs = count_pairs({w: 1 for w in words})
    best = min(pairs, key=lambda p: (-pairs[p], p))
    return best, {merge_pair(w, best): c for w, c in words.items()}


def test_bpe_check(capsys):
    check_bpe_merge_step(ref_step)
    assert "Exercise 8.3 passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="(?s)merged pair.*expected.*got"):
        check_bpe_merge_step(step_ignoring_counts)
    with pytest.raises(ExerciseError, match="(?s)words after the merge.*expected.*got"):
        check_bpe_merge_step(step_with_str_replace)
    with pytest.raises(ExerciseError, match="NotImplementedError"):
        check_bpe_merge_step(stub)
