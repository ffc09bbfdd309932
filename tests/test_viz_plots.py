"""Static plots: each panel shows exactly the matrix it was given, labelled as promised."""

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
    assert ax.get_xlabel() == "dimension i" and ax.get_ylabel() == "position pos"
    with pytest.raises(ValueError, match=r"encoding must be 2-D .* got shape \(3,\)"):
        plot_positional_encoding(np.zeros(3))


def test_alignment_marks_each_rows_maximum():
    w = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])  # target word 0 -> source 0; 1 -> 2
    ax = plot_alignment(w, ["the", "cat", "sat"], ["le", "chat"])
    np.testing.assert_array_equal(ax.collections[0].get_offsets(), [[0, 0], [2, 1]])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "sat"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["le", "chat"]
    with pytest.raises(ValueError, match=r"x_labels has 2 labels but the matrix has 3"):
        plot_alignment(w, ["the", "cat"], ["le", "chat"])


def test_existing_signatures_still_work():
    w = _weights()[0, 0]
    ax = plot_attention(w, ["a", "b", "c", "d"], annotate=True)
    np.testing.assert_array_equal(_image(ax), w)
    ax = plot_heatmap(w, x_labels=list("abcd"), y_labels=list("wxyz"), title="m")
    assert ax.get_title() == "m"
