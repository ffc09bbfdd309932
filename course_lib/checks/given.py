"""What the exercise notebooks are GIVEN from the checks' modules: fixed inputs, shipped data,
and the factories of :class:`~course_lib.checks.Built` recipes that build a check's input where
the student's code runs (numpy only; the torch ones are in :mod:`.given_torch`).

The grader's sandbox gets this module and :mod:`.given_torch`, and only stubs of the check modules
(``tools/grading/course.py``): nothing here computes an answer an exercise asks for, and nothing
here imports a check.
"""

from __future__ import annotations

import numpy as np

from ..positional import positional_encoding
from ..softmax import softmax

__all__ = ["read_only", "halves_encoding", "REFERENCE", "PARAPHRASE", "mystery_attention",
           "shipped_sweep", "shipped_test_predictions"]  # fmt: skip


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
    Seed 0 (the notebook's model) places them in this order on 2 layers x 3 heads; another seed
    places them at random (the grader's hidden models).
    """
    if layers * heads < 6 or n < 4:
        raise ValueError(f"need layers * heads >= 6 and n >= 4, got {layers} x {heads}, n={n}")
    rng = np.random.default_rng(94 if seed == 0 else [94, seed])
    i, j = np.indices((n, n))
    jobs = [4.0 * (j == n - 1),  # looks at [SEP]
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


def _topic_checkpoint() -> dict:
    """Lecture 12's checkpoint as saved by ``tools/training/fine_tune_minilm.py`` (``weights_only``)."""
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
