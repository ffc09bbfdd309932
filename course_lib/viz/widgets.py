"""Interactive helpers with a static fallback, so every lecture also works where widgets can't."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .._validation import (
    as_finite_array,
    check_labels,
    check_positive_int,
    check_positive_number,
)
from ..softmax import softmax

__all__ = ["plot_temperatures", "temperature_slider"]


def _scores_and_labels(scores, labels) -> tuple[np.ndarray, list]:
    """Finite ``scores`` ``(n,)`` and ``n`` bar labels (default ``x1 .. xn``)."""
    s = as_finite_array(scores, "scores", min_ndim=1)
    if s.ndim != 1:
        raise ValueError(f"scores must be one row of logits (n,), got shape {s.shape}")
    if labels is None:
        return s, [f"x{i + 1}" for i in range(s.shape[-1])]
    return s, check_labels(labels, "labels", s.shape[-1], "scores")


def _temperatures(temperatures) -> list[float]:
    """A non-empty list of temperatures T > 0 (T = 0 or T < 0 has no softmax(scores / T))."""
    if isinstance(temperatures, (str, bytes)) or not isinstance(
        temperatures, Sequence | np.ndarray
    ):
        raise TypeError(
            f"temperatures must be a list of numbers > 0, got {type(temperatures).__name__}"
        )
    if len(temperatures) == 0:
        raise ValueError("temperatures is empty; give at least one T > 0")
    return [check_positive_number(t, f"temperatures[{i}]") for i, t in enumerate(temperatures)]


def plot_temperatures(
    scores, temperatures: Sequence[float] = (0.5, 1.0, 2.0, 5.0), labels=None, top=None
):
    """Bar charts of ``softmax(scores / T)`` for several temperatures side by side; returns the Figure.

    The bars are the true probabilities. With ``top=k`` only the ``k`` highest scores get a bar
    each (most probable first) and one last bar, ``other n``, holds the probability of the ``n``
    remaining tokens together; each panel's title gives the share of the ``k`` tokens.
    """
    s, labels = _scores_and_labels(scores, labels)
    temperatures = _temperatures(temperatures)
    if top is not None:
        top = check_positive_int(top, "top")
        if top >= len(s):
            raise ValueError(f"top must be smaller than the number of scores {len(s)}, got {top}")
    fig, axes = plt.subplots(
        1, len(temperatures), figsize=((3 if top is None else 3.4) * len(temperatures), 2.6),
        sharey=True,
    )  # fmt: skip
    order = np.argsort(-s, kind="stable")[:top] if top is not None else None
    for ax, t in zip(np.atleast_1d(axes), temperatures, strict=True):
        probs = softmax(s / t)
        if order is None:
            ax.bar(labels, probs, color="tab:blue")
            ax.set_title(f"T = {t:g}")
        else:
            shown = probs[order]
            names = [labels[i] for i in order] + [f"other {len(s) - top}"]
            colors = ["tab:blue"] * top + ["tab:gray"]
            ax.bar(range(top + 1), [*shown, 1 - shown.sum()], color=colors)
            ax.set_xticks(range(top + 1), names)
            ax.set_title(f"T = {t:g}: top {top} hold {shown.sum():.0%}")
        ax.tick_params(axis="x", labelrotation=70 if top is not None else 0)
        ax.set_ylim(0, 1)
    np.atleast_1d(axes)[0].set_ylabel("probability")
    fig.tight_layout()
    return fig


def temperature_slider(scores, labels=None):
    """A slider for the temperature T of ``softmax(scores / T)``.

    Returns an ipywidgets object when ipywidgets is installed; otherwise draws the static
    :func:`plot_temperatures` figure and returns ``None``.
    """
    s, labels = _scores_and_labels(scores, labels)
    try:
        import ipywidgets as widgets
    except ImportError:
        plot_temperatures(s, labels=labels)
        plt.show()
        return None

    def draw(temperature: float) -> None:
        fig, ax = plt.subplots(figsize=(4, 2.6))
        ax.bar(labels, softmax(s / temperature))
        ax.set_ylim(0, 1)
        ax.set_title(f"softmax(scores / T), T = {temperature:.2f}")
        plt.show()

    class TemperatureSlider(widgets.interactive):
        def __repr__(self) -> str:
            # The text a saved notebook shows where widgets do not run (GitHub, the site).
            return (
                "<temperature slider: drag T from 0.1 to 31.6 to redraw softmax(scores / T); "
                "interactive, it needs a running Python kernel>"
            )

    slider = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1.5, step=0.05, description="T")
    return TemperatureSlider(draw, temperature=slider)
