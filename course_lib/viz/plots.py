"""Static matplotlib figures shared by every lecture: heatmaps with token labels.

Notebooks call these instead of writing plotting code, so every attention picture in the
course reads the same way: rows are queries (who looks), columns are keys (who is looked at).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .._validation import as_float_array, check_token_sequence
from ._inputs import (
    as_attention_stack,
    check_indices,
    check_plot_options,
    check_tokens,
    check_weights,
)

__all__ = [
    "plot_alignment",
    "plot_attention",
    "plot_attention_grid",
    "plot_heatmap",
    "plot_positional_encoding",
]


def _matrix(x, name: str, layout: str) -> np.ndarray:
    m = as_float_array(x, name)
    if m.ndim != 2:
        raise ValueError(f"{name} must be 2-D {layout}, got shape {m.shape}")
    return m


def _labels(labels, name: str, n: int, what: str) -> list | None:
    """``None`` or ``n`` labels (a list, not a str) for the ``what`` of ``weights``."""
    if labels is not None and len(labels := check_token_sequence(labels, name)) != n:
        raise ValueError(f"{name} has {len(labels)} labels but weights has {n} {what}")
    return labels


def _relative_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour with channels in [0, 1]."""
    c = np.asarray(rgb, dtype=float)[:3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def _text_colour_on(rgba) -> str:
    """Black or white, whichever contrasts more with a cell painted ``rgba``.

    Black text on luminance L has contrast (L + 0.05) / 0.05, white (1.05) / (L + 0.05); they
    are equal at L = 0.179, so either choice gives a contrast ratio of at least 4.58 : 1.
    A cell with no colour (NaN, alpha 0) shows the white axes background: black.
    """
    if rgba[3] == 0:
        return "black"
    return "black" if _relative_luminance(rgba) > 0.179 else "white"


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
    check_plot_options(title=title, xlabel=xlabel, ylabel=ylabel, cmap=cmap, annotate=annotate,
                       vmin=vmin, vmax=vmax, ax=ax)  # fmt: skip
    m = as_float_array(matrix, "matrix")
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D (rows, cols), got shape {m.shape}")
    for name, labels, size in (
        ("x_labels", x_labels, m.shape[1]),
        ("y_labels", y_labels, m.shape[0]),
    ):
        if labels is not None and len(check_token_sequence(labels, name)) != size:
            raise ValueError(f"{name} has {len(labels)} labels but the matrix has {size} there")
    if ax is None:  # about half an inch per cell, but never wider than a page (9 x 7.5 inches)
        size = (min(0.5 * m.shape[1] + 2.5, 9.0), min(0.45 * m.shape[0] + 1.5, 7.5))
        _, ax = plt.subplots(figsize=size)
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if x_labels is not None:
        ax.set_xticks(range(m.shape[1]), labels=list(x_labels), rotation=60, ha="right")
    if y_labels is not None:
        ax.set_yticks(range(m.shape[0]), labels=list(y_labels))
    if annotate:
        # The text colour follows the colour the cell is actually painted (its luminance),
        # not the value: a high value is dark in Blues/Greys but light in viridis.
        cell_rgba = im.cmap(im.norm(m))  # (rows, cols, 4)
        for (i, j), val in np.ndenumerate(m):
            ax.text(
                j,
                i,
                f"{val:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color=_text_colour_on(cell_rgba[i, j]),
            )
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
    for cross-attention, where keys come from another sequence. The weights must be finite and
    non-negative (the colour scale starts at 0); draw scores or other signed values with
    :func:`plot_heatmap`.
    """
    check_plot_options(title=title, annotate=annotate, ax=ax)
    w = check_weights(_matrix(weights, "weights", "(n_q, n_k)"), "weights")
    tokens = _labels(tokens, "tokens", w.shape[0], "query rows")
    key_tokens = (
        tokens
        if key_tokens is None
        else _labels(key_tokens, "key_tokens", w.shape[1], "key columns")
    )
    if key_tokens is not None and len(key_tokens) != w.shape[1]:
        raise ValueError(
            f"tokens label the keys too (self-attention), but weights has {w.shape[1]} key "
            f"columns and {len(key_tokens)} tokens; pass key_tokens for cross-attention"
        )
    return plot_heatmap(
        w,
        x_labels=key_tokens,
        y_labels=tokens,
        title=title,
        xlabel="key (attended to)",
        ylabel="query (attending)",
        cmap="Blues",
        annotate=annotate,
        vmin=0.0,
        ax=ax,
    )


def plot_attention_grid(
    attention,
    tokens: Sequence[str] | None = None,
    key_tokens: Sequence[str] | None = None,
    *,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    title: str | None = None,
    cell_size: float = 1.6,
):
    """A grid of attention heatmaps: one row per layer, one column per head; return the Figure.

    ``attention`` is anything the interactive views take: ``(n_q, n_k)``, ``(heads, n_q, n_k)``,
    ``(layers, heads, n_q, n_k)``, ``(layers, 1, heads, n_q, n_k)`` or a list with one
    ``(heads, n_q, n_k)`` / ``(1, heads, n_q, n_k)`` entry per layer, numpy or torch.
    A torch module's weights ``(batch, heads, n_q, n_k)`` (``MultiHeadAttention``'s
    ``attention_weights``) are refused unless the batch is 1: pick one sequence with ``[i]``.
    ``layers`` / ``heads`` pick which rows / columns to draw (default all). Every panel shares
    one colour scale from 0 to the largest weight shown, so panels compare at a glance.
    Token labels are drawn on the left column and bottom row only.
    """
    check_plot_options(title=title, cell_size=cell_size)
    att = as_attention_stack(attention)
    if tokens is not None:
        tokens = check_tokens(tokens, att.shape[2], "tokens", "query", att.shape)
        if key_tokens is None and att.shape[2] == att.shape[3]:
            key_tokens = tokens
    if key_tokens is not None:
        key_tokens = check_tokens(key_tokens, att.shape[3], "key_tokens", "key", att.shape)
    layer_ids = check_indices(layers, att.shape[0], "layers") or list(range(att.shape[0]))
    head_ids = check_indices(heads, att.shape[1], "heads") or list(range(att.shape[1]))
    shown = att[np.ix_(layer_ids, head_ids)]
    n_rows, n_cols = len(layer_ids), len(head_ids)
    # Fixed margins instead of constrained layout: with 72 panels the layout solver takes
    # tens of seconds, and the grid's geometry is simple enough to place by hand. No shared
    # axes either: sharing would give all 72 panels every tick (slow), not just the edge ones.
    room = 0.9 if tokens is not None or key_tokens is not None else 0.3  # for token labels
    width, height = cell_size * n_cols + room + 1.2, cell_size * n_rows + room + 0.8
    margins = {
        "left": (room + 0.3) / width,
        "right": 1 - 1.1 / width,
        "bottom": room / height,
        "top": 1 - 0.7 / height,
        "wspace": 0.08,
        "hspace": 0.08,
    }
    fig, axes = plt.subplots(
        n_rows, n_cols, squeeze=False, figsize=(width, height),
        gridspec_kw=margins,
    )  # fmt: skip
    vmax = float(shown.max()) or 1.0
    for r, layer in enumerate(layer_ids):
        for c, head in enumerate(head_ids):
            ax = axes[r, c]
            im = ax.imshow(shown[r, c], cmap="Blues", vmin=0.0, vmax=vmax, aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"head {head}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=9)
    # Labels only when they fit; with long sentences the grid is for patterns, not words.
    size = min(7.0, 0.8 * cell_size * 72 / max(att.shape[2], att.shape[3]))  # points per row
    if tokens is not None and att.shape[2] <= 16:
        for r in range(n_rows):
            axes[r, 0].set_yticks(range(att.shape[2]), labels=tokens, fontsize=size)
    if key_tokens is not None and att.shape[3] <= 16:
        for c in range(n_cols):
            axes[-1, c].set_xticks(
                range(att.shape[3]), labels=key_tokens, fontsize=size, rotation=90
            )
    fig.colorbar(im, cax=fig.add_axes((1 - 0.9 / width, 0.25, 0.15 / width, 0.5)), label="weight")
    if title:
        fig.suptitle(title)
    return fig


def plot_positional_encoding(
    encoding,
    *,
    title: str | None = "positional encoding",
    ax=None,
):
    """Heatmap of a positional encoding ``(n_positions, d_model)``: one row per position.

    Sinusoidal encodings show fast-changing stripes in the first dimensions and slow ones in
    the last; the colour scale is centred on 0 (values lie in [-1, 1]).
    """
    check_plot_options(title=title, ax=ax)
    pe = as_float_array(encoding, "encoding")
    if pe.ndim != 2:
        raise ValueError(f"encoding must be 2-D (n_positions, d_model), got shape {pe.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    lim = float(np.abs(pe).max()) or 1.0
    im = ax.imshow(pe, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    ax.set_xlabel("column of the encoding (2i and 2i + 1 share a frequency)")
    ax.set_ylabel("position pos")
    if title:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_alignment(
    weights,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    title: str | None = "alignment",
    mark_max: bool = True,
    annotate: bool = False,
    ax=None,
):
    """Alignment matrix of a translation: row t = where output word t looked in the source.

    ``weights``: ``(n_target, n_source)`` cross-attention (or a seq2seq model's attention);
    ``mark_max`` puts a dot on each row's largest weight, the source word it "aligned" to.
    """
    check_plot_options(title=title, mark_max=mark_max, annotate=annotate, ax=ax)
    w = _matrix(weights, "weights", "(n_target, n_source)")
    ax = plot_heatmap(
        w,
        x_labels=_labels(source_tokens, "source_tokens", w.shape[1], "source columns"),
        y_labels=_labels(target_tokens, "target_tokens", w.shape[0], "target rows"),
        title=title,
        xlabel="source",
        ylabel="target (generated)",
        cmap="Greys",
        annotate=annotate,
        vmin=0.0,
        ax=ax,
    )
    if mark_max:
        rows = np.arange(w.shape[0])
        ax.scatter(w.argmax(axis=1), rows, s=18, c="tab:red", marker="o", label="row maximum")
    return ax
