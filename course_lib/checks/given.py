"""What the exercise notebooks are GIVEN from the checks' modules: fixed inputs, shipped data,
and the factories of :class:`~course_lib.checks.Built` recipes that build a check's input where
the student's code runs (numpy only; the torch ones are in :mod:`.given_torch`).

The grader's sandbox gets this module and :mod:`.given_torch`, and only stubs of the check modules
(``tools/grading/course.py``): nothing here computes an answer an exercise asks for, and nothing
here imports a check.
"""

from __future__ import annotations

import functools

import numpy as np

from ..positional import positional_encoding
from ..softmax import softmax

__all__ = ["read_only", "halves_encoding", "REFERENCE", "PARAPHRASE", "mystery_attention",
           "shipped_sweep", "shipped_test_predictions", "SAMPLER_FAULTS", "mystery_sampler",
           "sampler_keeps", "SAMPLING_POSITIONS", "ROPE_FAULTS", "mystery_rope", "rope_with_fault"]  # fmt: skip


def read_only(data, dtype: str = "float64") -> np.ndarray:
    """A numpy array the student's function may read but not change (a :class:`Built` factory).

    ``Built("course_lib.checks.given:read_only", data=x.tolist(), dtype="float64")`` builds it where
    the student's code runs, so that an answer that writes into its input fails loudly there.
    """
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"dtype must be a numpy dtype name such as 'float64', got {dtype!r}"
        ) from None
    try:
        arr = np.array(data, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError(f"data must be a (nested) list of numbers of dtype {dtype}") from None
    arr.setflags(write=False)
    return arr


def halves_encoding(num_positions: int, d_model: int) -> np.ndarray:
    """The 'halves' layout of tensor2tensor: all sines, then all cosines (same angles)."""
    pe = positional_encoding(num_positions, d_model)
    return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)


REFERENCE = "the meeting was cancelled because the manager was ill"


PARAPHRASE = "the manager was sick , so the meeting was called off"


def mystery_attention(seed: int = 0, layers: int = 2, heads: int = 3, n: int = 10) -> np.ndarray:
    """Attention weights ``(layers, heads, n, n)`` of a made-up model, for exercise 9.4.

    Position 0 is [CLS] and position n - 1 is [SEP]. Six heads have one job each (plus noise):
    [SEP], next token, itself, [CLS], previous token, a local window; any other head is noise.
    The [SEP] head is the sharper sink, so that exercise 9.2's share ([CLS] + [SEP]) picks it,
    on the notebook's model as on the hidden ones: a [CLS] finder built on 9.2 fails visibly.
    Seed 0 (the notebook's model) places them in this order on 2 layers x 3 heads; another seed
    places them at random (the grader's hidden models).
    """
    if layers * heads < 6 or n < 4:
        raise ValueError(f"need layers * heads >= 6 and n >= 4, got {layers} x {heads}, n={n}")
    rng = np.random.default_rng(94 if seed == 0 else [94, seed])
    i, j = np.indices((n, n))
    jobs = [5.0 * (j == n - 1),  # looks at [SEP], more than the [CLS] head looks at [CLS]
            4.0 * (j == i + 1),  # next token
            1.0 * (j == i),  # mostly itself, broad
            4.0 * (j == 0),  # looks at [CLS]
            3.0 * (j == i - 1),  # previous token
            2.0 * (np.abs(i - j) <= 2)]  # a local window  # fmt: skip
    logits = 0.5 * rng.normal(size=(layers, heads, n, n))
    slots = np.arange(layers * heads) if seed == 0 else rng.permutation(layers * heads)
    for slot, pattern in zip(slots, jobs, strict=False):
        logits[divmod(int(slot), heads)] += pattern
    return softmax(logits, axis=-1)


@functools.lru_cache(maxsize=1)
def _topic_checkpoint() -> dict:
    """Lecture 12's checkpoint as saved by ``tools/training/fine_tune_minilm.py`` (``weights_only``),
    read once per process (its callers return copies)."""
    import torch

    from ..configs import current_names
    from ..pretrained import TOPIC_CLASSIFIER_FILE

    return current_names(torch.load(TOPIC_CLASSIFIER_FILE, map_location="cpu", weights_only=True))


def shipped_sweep() -> list[dict]:
    """The learning-rate sweep stored in lecture 12's checkpoint (lr, epoch, validation, loss)."""
    return [dict(r) for r in _topic_checkpoint()["sweep"]]


def shipped_test_predictions() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(labels, budget, all)``: lecture 12's test labels and the test predictions of its two
    fine-tuned checkpoints (on 384 labelled sentences, on all 3,322), as the script saved them."""
    from ..data.docstrings import load_topic_sentences

    preds = _topic_checkpoint()["test_predictions"]
    _, labels = load_topic_sentences("test")
    return labels, preds["budget"].numpy().astype(np.int64), preds["all"].numpy().astype(np.int64)


# Exercise 11.5: made-up next-token scores (12 tokens) of a position where the model is sure of
# the next token and of one where it is not.
SAMPLING_POSITIONS = {
    "confident": (6.0, 3.6, 3.1, 2.2, 1.4, 1.0, 0.6, 0.1, -0.3, -0.7, -1.2, -2.0),
    "unsure": (2.1, 1.9, 1.8, 1.6, 1.5, 1.3, 1.1, 1.0, 0.8, 0.5, 0.3, 0.0),
}


# Exercise 11.4: top-p filters, one right and four with a bug students write. Each takes
# (probs, p) and returns the boolean mask of the tokens it keeps.
SAMPLER_FAULTS = ("ok", "drops_crossing", "ascending", "ignores_p", "unsorted")


def _keep_until(probs: np.ndarray, order: np.ndarray, p: float) -> np.ndarray:
    """Keep tokens in ``order`` while the total of those before them is below ``p``."""
    before = np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[before < p]] = True
    return keep


def sampler_keeps(fault: str, probs: np.ndarray, p: float) -> np.ndarray:
    """The tokens a top-p filter with ``fault`` keeps for ``probs`` (1-D) and ``p``: a mask."""
    down = np.argsort(-probs, kind="stable")
    if fault == "ok":
        return _keep_until(probs, down, p)
    if fault == "drops_crossing":  # cumsum <= p: the token that crosses p is dropped
        keep = np.zeros(len(probs), dtype=bool)
        keep[down[np.cumsum(probs[down]) <= p]] = True
        return keep
    if fault == "ascending":  # sorted the wrong way: the least probable tokens first
        return _keep_until(probs, down[::-1], p)
    if fault == "ignores_p":  # a top-2 filter: p never used
        keep = np.zeros(len(probs), dtype=bool)
        keep[down[:2]] = True
        return keep
    if fault == "unsorted":  # forgot to sort: adds tokens in vocabulary order
        return _keep_until(probs, np.arange(len(probs)), p)
    raise ValueError(f"fault must be one of {SAMPLER_FAULTS}, got {fault!r}")


class _Sampler:
    """A top-p filter of exercise 11.4, perhaps broken: ``sampler(probs, p) -> keep mask``."""

    __slots__ = ("_fault",)

    def __init__(self, fault: str):
        self._fault = fault

    def __call__(self, probs, p) -> np.ndarray:
        probs = np.asarray(probs, dtype=float)
        if probs.ndim != 1 or not np.all(np.isfinite(probs)):
            raise ValueError(f"probs must be a 1-D array of probabilities, got shape {probs.shape}")
        return sampler_keeps(self._fault, probs, float(p))

    def __repr__(self) -> str:
        return "<a top-p sampler: call it as sampler(probs, p)>"


def mystery_sampler(fault: str) -> _Sampler:
    """The sampler of exercise 11.4 with ``fault`` (one of ``SAMPLER_FAULTS``): a
    :class:`course_lib.checks.Built` factory, built where the student's code runs. (Its fault is
    not a secret from code that inspects the object; the exercise asks to find it by calling it.)"""
    if fault not in SAMPLER_FAULTS:
        raise ValueError(f"fault must be one of {SAMPLER_FAULTS}, got {fault!r}")
    return _Sampler(fault)


# Exercise 13.5: rotary position functions, one right and four with a bug students write. Each
# takes x (n, d) and integer positions (n,) and returns the rotated x, as exercise 13.1's does.
ROPE_FAULTS = ("ok", "halves", "clockwise", "exponent_i_over_d", "positions_from_1")


def rope_with_fault(fault: str, x: np.ndarray, positions, theta: float = 10000.0) -> np.ndarray:
    """RoPE of exercise 13.1 (neighbouring pairs (2i, 2i+1), counter-clockwise, angle
    m * theta**(-2i/d)), or the same with ``fault`` (one of ``ROPE_FAULTS``)."""
    x = np.asarray(x, dtype=float)
    n, d = x.shape
    i = np.arange(d // 2)
    exponent = -i / d if fault == "exponent_i_over_d" else -2 * i / d
    m = np.asarray(positions, dtype=float) + (1 if fault == "positions_from_1" else 0)
    angle = m[:, None] * theta**exponent  # (n, d/2)
    if fault == "clockwise":
        angle = -angle
    a, b = (x[:, : d // 2], x[:, d // 2 :]) if fault == "halves" else (x[:, 0::2], x[:, 1::2])
    ra, rb = a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)
    if fault == "halves":
        return np.concatenate([ra, rb], axis=1)
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = ra, rb
    return out


class _Rope:
    """A rotary position function of exercise 13.5, perhaps broken: ``rope(x, positions)``."""

    __slots__ = ("_fault",)

    def __init__(self, fault: str):
        self._fault = fault

    def __call__(self, x, positions) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] % 2 or len(np.asarray(positions)) != x.shape[0]:
            raise ValueError(f"x must be (n, d) with d even and positions (n,), got {x.shape}")
        return rope_with_fault(self._fault, x, positions)

    def __repr__(self) -> str:
        return "<a rotary position function: call it as rope(x, positions)>"


def mystery_rope(fault: str) -> _Rope:
    """The RoPE of exercise 13.5 with ``fault`` (one of ``ROPE_FAULTS``): a Built factory."""
    if fault not in ROPE_FAULTS:
        raise ValueError(f"fault must be one of {ROPE_FAULTS}, got {fault!r}")
    return _Rope(fault)
