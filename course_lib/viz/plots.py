"""Static matplotlib figures shared by every lecture: heatmaps with token labels.

Notebooks call these instead of writing plotting code, so every attention picture in the
course reads the same way: rows are queries (who looks), columns are keys (who is looked at).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .._validation import as_float_array

__all__ = ["plot_attention", "plot_heatmap"]


def plot_heatmap(
    matrix,
    *,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    cmap: str = "viridis",
    annotate: bool = False,
    vmin: float | None = None,
    vmax: float | None = None,
    ax=None,
):
    """Draw a 2-D ``matrix`` ``(rows, cols)`` as a heatmap with optional labels; return the Axes."""
    m = as_float_array(matrix, "matrix")
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D (rows, cols), got shape {m.shape}")
    for name, labels, size in (("x_labels", x_labels, m.shape[1]), ("y_labels", y_labels, m.shape[0])):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{name} has {len(labels)} labels but the matrix has {size} there")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.5 * m.shape[1] + 2.5, 0.45 * m.shape[0] + 1.5))
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if x_labels is not None:
        ax.set_xticks(range(m.shape[1]), labels=list(x_labels), rotation=60, ha="right")
    if y_labels is not None:
        ax.set_yticks(range(m.shape[0]), labels=list(y_labels))
    if annotate:
        mid = (np.nanmax(m) + np.nanmin(m)) / 2
        for (i, j), val in np.ndenumerate(m):
            ax.text(j, i, f"{val:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if val > mid else "white")  # fmt: skip
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_attention(
    weights,
    tokens: Sequence[str] | None = None,
    key_tokens: Sequence[str] | None = None,
    *,
    title: str | None = "attention weights",
    annotate: bool = False,
    ax=None,
):
    """Heatmap of attention ``weights`` ``(n_q, n_k)``: row i shows where query i looks.

    ``tokens`` label the queries (and the keys too, for self-attention); pass ``key_tokens``
    for cross-attention, where keys come from another sequence.
    """
    key_tokens = tokens if key_tokens is None else key_tokens
    return plot_heatmap(
        weights, x_labels=key_tokens, y_labels=tokens, title=title, xlabel="key (attended to)",
        ylabel="query (attending)", cmap="Blues", annotate=annotate, vmin=0.0, ax=ax,
    )  # fmt: skip
