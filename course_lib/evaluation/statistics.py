"""How sure is a benchmark score? A Wilson interval for one model, a paired bootstrap for two.

One model: ``k`` right of ``n`` items is a binomial proportion; its 95 % interval is lecture 12's
:func:`~course_lib.accuracy_ci` (Wilson's, which stays inside [0, 1] and is honest for small ``n``).

Two models on the SAME items: their scores are not independent (an easy item is easy for both),
so compare them item by item. Resample the items with replacement, ``n_resamples`` times, and
recompute the difference of the two accuracies on each resample::

    d_b = mean(a[idx_b]) - mean(b[idx_b])          idx_b: n indices drawn with replacement
    interval = the 2.5 % and 97.5 % percentiles of d_1 .. d_B

The interval excludes 0 when one model is better on these items beyond resampling noise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive_int, check_probability

__all__ = ["correct_array", "paired_bootstrap"]


def correct_array(correct: ArrayLike, name: str = "correct") -> np.ndarray:
    """``correct`` (0/1 or False/True per item, at least one) as a float array."""
    try:
        c = np.asarray(correct, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must hold 0/1 (or False/True) per item, got {correct!r:.60}"
        ) from None
    if c.ndim != 1 or c.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D list of 0/1 per item, got shape {c.shape}"
        )
    if not np.isin(c, (0.0, 1.0)).all():
        raise ValueError(
            f"{name} must hold 0/1 (or False/True) per item, got values {c[:5].tolist()}"
        )
    return c


def paired_bootstrap(
    correct_a: ArrayLike,
    correct_b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """Model A minus model B on the same items: ``{"difference", "low", "high", "p_a_not_better"}``.

    ``difference`` is ``mean(a) - mean(b)``; ``low``/``high`` the percentile interval of the
    resampled differences; ``p_a_not_better`` the fraction of resamples where A is not ahead
    (``d_b <= 0``), a one-sided bootstrap p-value. Deterministic for a given ``seed``.
    """
    a = correct_array(correct_a, "correct_a")
    b = correct_array(correct_b, "correct_b")
    if a.shape != b.shape:
        raise ValueError(
            f"correct_a and correct_b must score the same items, got {a.size} and {b.size} items"
        )
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    confidence = check_probability(confidence, "confidence")
    rng = np.random.default_rng(check_positive_int(seed, "seed", allow_zero=True))
    idx = rng.integers(0, a.size, size=(n_resamples, a.size))  # (B, n): one resample per row
    diffs = a[idx].mean(axis=1) - b[idx].mean(axis=1)  # (B,)
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(diffs, [tail, 1.0 - tail])
    return {
        "difference": float(a.mean() - b.mean()),
        "low": float(low),
        "high": float(high),
        "p_a_not_better": float((diffs <= 0).mean()),
    }
