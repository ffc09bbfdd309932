"""Static plots: each panel shows exactly the matrix it was given, labelled as promised."""

import math

import matplotlib

matplotlib.use("Agg")  # no display needed; must come before pyplot is imported

import matplotlib.axes
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_lib.viz import (
    plot_alignment,
    plot_attention,
    plot_attention_grid,
    plot_heatmap,
    plot_positional_encoding,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _image(ax) -> np.ndarray:
    return np.asarray(ax.images[0].get_array())


def _weights(layers=2, heads=3, n=4):
    x = np.random.default_rng(0).random((layers, heads, n, n))
    return x / x.sum(-1, keepdims=True)


def test_grid_draws_every_layer_and_head_in_place():
    w = _weights()
    fig = plot_attention_grid(torch.from_numpy(w), ["a", "b", "c", "d"])
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2 * 3
    for k, ax in enumerate(panels):  # row-major: layer k // 3, head k % 3
        np.testing.assert_array_equal(_image(ax), w[k // 3, k % 3])
    assert panels[0].get_title() == "head 0" and panels[3].get_ylabel() == "layer 1"
    assert [t.get_text() for t in panels[3].get_yticklabels()] == ["a", "b", "c", "d"]
    # one shared colour scale for all panels
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, w.max())}


def test_grid_selects_layers_and_heads_and_takes_hf_lists():
    w = _weights()
    hf = [torch.from_numpy(layer[None]) for layer in w]  # outputs.attentions layout
    fig = plot_attention_grid(hf, layers=[1], heads=[2, 0], title="t")
    panels = [ax for ax in fig.axes if ax.images]
    np.testing.assert_array_equal(_image(panels[0]), w[1, 2])
    np.testing.assert_array_equal(_image(panels[1]), w[1, 0])
    assert panels[0].get_title() == "head 2" and panels[0].get_ylabel() == "layer 1"


def test_grid_reads_a_torch_modules_weights_as_a_batch_not_as_layers():
    from course_lib.nn import MultiHeadAttention

    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(0))
    mha(x, x, x)
    with pytest.raises(ValueError, match=r"with a batch of 2, not as \(layers"):
        plot_attention_grid(mha.attention_weights)  # (batch=2, heads=2, 4, 4)
    mha(x, causal=True)  # GPT's call stores its weights the same way
    with pytest.raises(ValueError, match=r"with a batch of 2, not as \(layers"):
        plot_attention_grid(mha.attention_weights)
    mha(x[1:], x[1:], x[1:])
    fig = plot_attention_grid(mha.attention_weights)  # a batch of one: one row of heads
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2  # not two rows
    for head, ax in enumerate(panels):
        np.testing.assert_array_equal(_image(ax), mha.attention_weights[0, head].numpy())
    fig = plot_attention_grid(mha.attention_weights[0])  # one sequence picked by index
    assert len([ax for ax in fig.axes if ax.images]) == 2


def test_grid_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"tokens has 2 tokens but the attention has 4"):
        plot_attention_grid(_weights(), ["a", "b"])
    with pytest.raises(ValueError, match=r"heads\[0\] must be in 0..2, got 5"):
        plot_attention_grid(_weights(), heads=[5])


def test_positional_encoding_heatmap_shows_the_matrix_centred_on_zero():
    pos = np.arange(10)[:, None]
    pe = np.sin(pos / 10 ** (np.arange(8)[None] / 8))  # any (n_positions, d_model) matrix
    ax = plot_positional_encoding(pe)
    np.testing.assert_array_equal(_image(ax), pe)
    lo, hi = ax.images[0].get_clim()
    assert lo == -hi == -np.abs(pe).max()
    assert "column" in ax.get_xlabel() and ax.get_ylabel() == "position pos"
    with pytest.raises(ValueError, match=r"encoding must be 2-D .* got shape \(3,\)"):
        plot_positional_encoding(np.zeros(3))


def test_alignment_marks_each_rows_maximum():
    w = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])  # target word 0 -> source 0; 1 -> 2
    ax = plot_alignment(w, ["the", "cat", "sat"], ["le", "chat"])
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), [[0, 0], [2, 1]])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "sat"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["le", "chat"]
    with pytest.raises(ValueError, match=r"source_tokens has 2 labels but weights has 3 source"):
        plot_alignment(w, ["the", "cat"], ["le", "chat"])


def test_existing_signatures_still_work():
    w = _weights()[0, 0]
    ax = plot_attention(w, ["a", "b", "c", "d"], annotate=True)
    np.testing.assert_array_equal(_image(ax), w)
    ax = plot_heatmap(w, x_labels=list("abcd"), y_labels=list("wxyz"), title="m")
    assert ax.get_title() == "m"


# --- plot_attention / plot_heatmap: tick labels, orientation, errors -----------------------


def _labels(ticks) -> list[str]:
    return [t.get_text() for t in ticks]


def test_plot_attention_labels_queries_on_rows_and_keys_on_columns():
    w = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5]])  # 2 queries, 3 keys (cross-attention)
    ax = plot_attention(w, ["le", "chat"], ["the", "cat", "sat"], title=None)
    assert isinstance(ax, matplotlib.axes.Axes)
    np.testing.assert_array_equal(_image(ax), w)  # row i = query i, not transposed
    assert _labels(ax.get_yticklabels()) == ["le", "chat"]
    assert _labels(ax.get_xticklabels()) == ["the", "cat", "sat"]
    assert ax.get_ylabel() == "query (attending)" and ax.get_xlabel() == "key (attended to)"
    assert ax.get_title() == "" and ax.images[0].get_clim()[0] == 0.0


def test_plot_attention_self_attention_uses_tokens_for_both_axes():
    tokens = ["the", "cat", "sat"]
    ax = plot_attention(np.eye(3), tokens, annotate=True)
    assert _labels(ax.get_xticklabels()) == tokens and _labels(ax.get_yticklabels()) == tokens
    assert ax.get_title() == "attention weights"
    assert sorted(t.get_text() for t in ax.texts) == ["0.00"] * 6 + ["1.00"] * 3


def test_plot_attention_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    ax = plot_attention(np.full((2, 2), 0.5), ["a", "b"], ax=right)
    assert ax is right and not left.images


def test_plot_heatmap_labels_titles_and_unlabelled_default():
    m = np.arange(6.0).reshape(2, 3)
    ax = plot_heatmap(
        m, x_labels=["x", "y", "z"], y_labels=["r0", "r1"], xlabel="cols", ylabel="rows"
    )
    assert isinstance(ax, matplotlib.axes.Axes)
    assert _labels(ax.get_xticklabels()) == ["x", "y", "z"]
    assert _labels(ax.get_yticklabels()) == ["r0", "r1"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("cols", "rows")
    np.testing.assert_array_equal(_image(ax), m)
    plain = plot_heatmap(m)
    assert "x" not in _labels(plain.get_xticklabels())


def test_label_count_mismatch_raises():
    w = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"tokens label the keys too .* weights has 3 key columns"):
        plot_attention(w, ["a", "b"])  # self-attention labels for a 2x3 matrix: keys miscounted
    with pytest.raises(ValueError, match=r"tokens has 3 labels but weights has 2 query rows"):
        plot_attention(w, ["a", "b", "c"], ["x", "y", "z"])
    with pytest.raises(ValueError, match=r"x_labels has 4 labels but the matrix has 3 there"):
        plot_heatmap(w, x_labels=list("abcd"))


def test_plot_heatmap_input_errors_name_the_argument():
    with pytest.raises(
        ValueError, match=r"matrix must be 2-D \(rows, cols\), got shape \(2, 2, 2\)"
    ):
        plot_heatmap(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match=r"matrix must contain real numbers"):
        plot_heatmap([["a", "b"]])
    with pytest.raises(ValueError, match=r"weights must be 2-D \(n_q, n_k\), got shape \(3,\)"):
        plot_attention(np.zeros(3))


# --- widgets: temperature plots with a static fallback ------------------------------------


def test_plot_temperatures_draws_softmax_of_scores_over_t():
    from course_lib.viz import plot_temperatures

    scores = [14.0, 12.0]
    fig = plot_temperatures(scores, temperatures=(1.0, 2.0), labels=["w1", "w2"])
    assert [ax.get_title() for ax in fig.axes] == ["T = 1", "T = 2"]
    for ax, t in zip(fig.axes, (1.0, 2.0), strict=True):
        heights = [bar.get_height() for bar in ax.patches]
        e = [math.exp(s / t) for s in scores]  # by hand, independent of course_lib
        np.testing.assert_allclose(heights, [v / sum(e) for v in e], rtol=1e-12)
    assert _labels(fig.axes[0].get_xticklabels()) == ["w1", "w2"]
    assert round(fig.axes[0].patches[0].get_height(), 2) == 0.88  # the notes' example at T = 1


def test_plot_temperatures_top_k_draws_true_probabilities_and_the_rest_as_one_bar():
    from course_lib.viz import plot_temperatures

    scores = [0.0, 3.0, 1.0, 2.0, -1.0]
    fig = plot_temperatures(scores, temperatures=(1.0, 0.5), labels=list("abcde"), top=2)
    for ax, t in zip(fig.axes, (1.0, 0.5), strict=True):
        e = [math.exp(s / t) for s in scores]  # by hand: nothing renormalised over the top 2
        p = [v / sum(e) for v in e]
        heights = [bar.get_height() for bar in ax.patches]
        np.testing.assert_allclose(heights, [p[1], p[3], 1 - p[1] - p[3]], rtol=1e-12)
        assert ax.get_title() == f"T = {t:g}: top 2 hold {p[1] + p[3]:.0%}"
        assert _labels(ax.get_xticklabels()) == ["b", "d", "other 3"]
        assert all(label.get_rotation() == 70 for label in ax.get_xticklabels())  # every panel
    with pytest.raises(ValueError, match="top must be smaller than the number of scores 5"):
        plot_temperatures(scores, top=5)


def test_temperature_slider_returns_a_widget_and_fallback_without_ipywidgets(monkeypatch):
    import sys

    from course_lib.viz import temperature_slider

    widget = temperature_slider([1.0, 2.0, 3.0])
    assert widget is not None and widget.children[0].description == "T"
    # A saved notebook read without a kernel shows the text version: it must say what it is.
    text = widget._repr_mimebundle_()["text/plain"]
    assert text.startswith("<temperature slider: drag T from 0.1 to 31.6"), text
    assert widget.children[0].min == -1 and widget.children[0].max == 1.5  # 10^-1 .. 10^1.5
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import ipywidgets -> ImportError
    n_before = len(plt.get_fignums())
    assert temperature_slider([1.0, 2.0, 3.0]) is None
    assert len(plt.get_fignums()) == n_before + 1  # the static figure was drawn
    with pytest.raises(TypeError, match=r"scores must contain real numbers"):
        temperature_slider(["a"])


# --- annotations: readable on every cell, whatever the colour map -------------------------


def _srgb_luminance(rgb) -> float:
    """WCAG 2 relative luminance, written out channel by channel (sRGB in [0, 1])."""

    def lin(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(float(c)) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a, b) -> float:
    hi, lo = sorted((_srgb_luminance(a), _srgb_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_luminance_and_contrast_helpers_match_hand_values():
    # WCAG's extremes: black on white is 21:1; sRGB 0.5 grey has luminance 0.2140.
    assert _contrast((0, 0, 0), (1, 1, 1)) == pytest.approx(21.0)
    assert _srgb_luminance((0.5, 0.5, 0.5)) == pytest.approx(0.2140, abs=1e-4)


_GRADIENT = np.linspace(0.0, 1.0, 20).reshape(4, 5)  # every shade from lightest to darkest
_HEATMAP_KINDS = {
    "plot_heatmap viridis": lambda: plot_heatmap(_GRADIENT, annotate=True),
    "plot_heatmap magma": lambda: plot_heatmap(_GRADIENT, cmap="magma", annotate=True),
    "plot_heatmap RdBu": lambda: plot_heatmap(_GRADIENT - 0.5, cmap="RdBu", annotate=True),
    "plot_attention Blues": lambda: plot_attention(_GRADIENT, annotate=True),
    "plot_alignment Greys": lambda: plot_alignment(
        _GRADIENT, list("abcde"), list("wxyz"), annotate=True, mark_max=False
    ),
}


@pytest.mark.parametrize("kind", list(_HEATMAP_KINDS))
def test_every_annotation_contrasts_with_the_cell_it_is_drawn_on(kind):
    """Render the figure, read each cell's painted colour from the pixels (the median of the
    cell, which the small text barely touches) and require WCAG's 4.5 : 1 for normal text."""
    ax = _HEATMAP_KINDS[kind]()
    fig = ax.figure
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3] / 255.0
    height = pixels.shape[0]
    texts = [t for t in ax.texts if t.get_text()]
    assert len(texts) == _GRADIENT.size
    worst = []
    for t in texts:
        j, i = t.get_position()
        (x0, y0), (x1, y1) = ax.transData.transform([(j - 0.45, i - 0.45), (j + 0.45, i + 0.45)])
        cols = slice(int(min(x0, x1)), int(max(x0, x1)))
        rows = slice(int(height - max(y0, y1)), int(height - min(y0, y1)))  # y counts upwards
        cell = np.median(pixels[rows, cols].reshape(-1, 3), axis=0)
        text_rgb = matplotlib.colors.to_rgb(t.get_color())
        worst.append((_contrast(cell, text_rgb), t.get_text()))
    ratio, label = min(worst)
    assert ratio >= 4.5, f"{kind}: annotation {label} has contrast {ratio:.2f} against its cell"


def test_annotation_colour_follows_the_map_not_the_value():
    # The largest weight is dark in Blues (white text) but light in viridis (black text).
    w = np.array([[0.0, 1.0]])
    blues = plot_attention(w, annotate=True)
    viridis = plot_heatmap(w, annotate=True)
    assert [t.get_color() for t in blues.texts] == ["black", "white"]
    assert [t.get_color() for t in viridis.texts] == ["white", "black"]


def test_a_large_heatmap_stays_page_sized():
    # 40 x 40 cells at half an inch each would be a 22.5 x 19.5 inch figure.
    ax = plot_heatmap(np.ones((40, 40)))
    assert tuple(ax.figure.get_size_inches()) == (9.0, 7.5)
    ax = plot_heatmap(np.ones((2, 3)))
    assert tuple(ax.figure.get_size_inches()) == pytest.approx((4.0, 2.4))
