"""Offline attention views: same data as stock bertviz, no external URL, stable output."""

import html
import json
import re
from importlib import resources
from pathlib import Path

import bertviz
import numpy as np
import pytest
import torch

from course_lib.viz import AttentionView, head_view, model_view
from course_lib.viz.views import _inlined_library_texts

PARAMS = re.compile(r"const params = (.*?); // HACK", re.S)


def _weights(layers=3, heads=2, n_q=4, n_k=None, seed=0):
    """Random rows that sum to 1, as a softmax would give."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(layers, heads, n_q, n_k or n_q, generator=g)
    return x / x.sum(-1, keepdim=True)


def _params(page: str) -> dict:
    return json.loads(PARAMS.search(page).group(1))


def _bertviz_params(fn, attention, tokens, **kw) -> dict:
    """What stock bertviz 1.4.1 would hand its script: the independent reference."""
    return _params(fn(attention, tokens, html_action="return", **kw).data)


def _same_attention(ours: list[dict], theirs: list[dict]):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a["name"] == b["name"]
        assert a["left_text"] == b["left_text"] and a["right_text"] == b["right_text"]
        np.testing.assert_allclose(a["attn"], b["attn"], atol=5e-5)  # we round to 4 places


TOKENS = ["[CLS]", "the", "cat", "[SEP]"]


def test_head_view_matches_stock_bertviz():
    w = _weights()
    ours = _params(head_view(w.numpy(), TOKENS, layer=1, heads=[0]).page)
    theirs = _bertviz_params(bertviz.head_view, list(w[:, None]), TOKENS, layer=1, heads=[0])
    _same_attention(ours["attention"], theirs["attention"])
    for key in ("layer", "heads", "include_layers", "default_filter"):
        assert ours[key] == theirs[key]


def test_head_view_sentence_pair_and_layer_subset_match_bertviz():
    w = _weights(layers=4, n_q=5)
    tokens = ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    kw = {"sentence_b_start": 3, "include_layers": [1, 3]}
    ours = _params(head_view(w, tokens, **kw).page)
    theirs = _bertviz_params(bertviz.head_view, list(w[:, None]), tokens, **kw)
    _same_attention(ours["attention"], theirs["attention"])
    assert ours["include_layers"] == [1, 3]


def test_model_view_matches_stock_bertviz():
    w = _weights(layers=3, heads=4)
    kw = {"include_layers": [0, 2], "include_heads": [1, 3]}
    ours = _params(model_view(list(w[:, None]), TOKENS, **kw).page)
    theirs = _bertviz_params(bertviz.model_view, list(w[:, None]), TOKENS, **kw)
    _same_attention(ours["attention"], theirs["attention"])
    for key in ("include_layers", "include_heads", "total_heads"):
        assert ours[key] == theirs[key]


@pytest.mark.parametrize(
    "make",
    [
        lambda w: w,  # (layers, heads, n, n) torch
        lambda w: w.numpy(),  # the same in numpy
        lambda w: list(w[:, None]),  # Hugging Face: one (1, heads, n, n) per layer
        lambda w: tuple(x.numpy() for x in w),  # one (heads, n, n) per layer
        lambda w: w[:, None].numpy(),  # torch.stack(outputs.attentions): (layers, 1, heads, n, n)
        lambda w: w.requires_grad_(True) * 1.0,  # still attached to the autograd graph
    ],
)
def test_accepts_every_layout_the_course_produces(make):
    w = _weights()
    assert _params(head_view(make(w.clone()), TOKENS).page) == _params(head_view(w, TOKENS).page)


def test_single_head_and_single_layer_inputs():
    w = _weights(layers=1, heads=1)
    one = _params(head_view(w[0, 0].numpy(), TOKENS).page)["attention"][0]["attn"]
    assert np.asarray(one).shape == (1, 1, 4, 4)
    heads = _params(model_view(_weights(1, 3)[0], TOKENS).page)["attention"][0]["attn"]
    assert np.asarray(heads).shape == (1, 3, 4, 4)


def test_cross_attention_uses_key_tokens():
    w = _weights(layers=1, heads=2, n_q=2, n_k=3)
    data = _params(head_view(w, ["le", "chat"], key_tokens=["the", "cat", "<eos>"]).page)
    assert data["attention"][0]["left_text"] == ["le", "chat"]
    assert data["attention"][0]["right_text"] == ["the", "cat", "<eos>"]


@pytest.mark.parametrize(
    ("attention", "tokens", "kwargs", "error", "match"),
    [
        (_weights(), TOKENS[:3], {}, ValueError, r"tokens has 3 tokens but the attention has 4"),
        (torch.rand(2, 3, 4, 4).unsqueeze(1).expand(2, 2, 3, 4, 4), TOKENS, {}, ValueError,
         r"batch of 2"),
        ([torch.rand(2, 3, 4, 4)], TOKENS, {}, ValueError, r"attention\[0\] has shape .*batch of 2"),
        ([torch.rand(3, 4, 4), torch.rand(2, 4, 4)], TOKENS, {}, ValueError,
         r"same \(heads, n_q, n_k\)"),
        (_weights(n_k=5), TOKENS, {}, ValueError, r"not square.*pass key_tokens"),
        (_weights(n_k=5), TOKENS, {"key_tokens": ["a"]}, ValueError, r"key_tokens has 1 tokens"),
        (_weights() - 0.5, TOKENS, {}, ValueError, r"negative entries.*not the scores"),
        (_weights() * float("nan"), TOKENS, {}, ValueError, r"nan or inf"),
        (np.ones((1, 1, 1, 1, 4, 4)), TOKENS, {}, ValueError, r"has shape \(1, 1, 1, 1, 4, 4\)"),
        ([], TOKENS, {}, ValueError, r"empty list"),
        (np.array([["a"]]), ["a"], {}, TypeError, r"real numbers"),
        (_weights(), "the cat", {}, TypeError, r"list of strings.*convert_ids_to_tokens"),
        (_weights(), TOKENS, {"layer": 3}, ValueError, r"layer must be in 0..2, got 3"),
        (_weights(), TOKENS, {"layer": 0, "include_layers": [1, 2]}, ValueError,
         r"layer 0 is not in include_layers"),
        (_weights(), TOKENS, {"heads": [0, 0]}, ValueError, r"heads has repeated entries"),
        (_weights(), TOKENS, {"heads": [2]}, ValueError, r"heads\[0\] must be in 0..1"),
        (_weights(), TOKENS, {"sentence_b_start": 0}, ValueError, r"sentence_b_start must be >= 1"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_clear_error(attention, tokens, kwargs, error, match):
    with pytest.raises(error, match=match):
        head_view(attention, tokens, **kwargs)


def test_model_view_rejects_unknown_display_mode():
    with pytest.raises(ValueError, match=r"display_mode must be 'light' or 'dark', got 'blue'"):
        model_view(_weights(), TOKENS, display_mode="blue")


def _outside_libraries(view: AttentionView) -> str:
    """The displayed HTML with the srcdoc decoded and the vendored libraries cut out."""
    outer = view.html
    srcdoc = re.search(r'srcdoc="([^"]*)"', outer).group(1)
    assert html.unescape(srcdoc) == view.page
    rest = outer.replace(srcdoc, "") + view.page
    for lib in _inlined_library_texts():
        assert lib in view.page  # inlined whole...
        rest = rest.replace(lib, "")  # ...and they refer to nothing (checked in a browser test)
    return rest


@pytest.mark.parametrize("fn", [head_view, model_view])
def test_html_references_no_external_url(fn):
    rest = _outside_libraries(fn(_weights(), TOKENS, sentence_b_start=2))
    for needle in ("http:", "https:", "//cdn", "cdnjs", "src=", "href=", "@import", "url("):
        assert needle not in rest.lower(), f"{needle!r} found in the view's HTML"
    assert "require.config" not in rest  # bertviz's CDN configuration is gone


def test_libraries_never_load_anything_by_url():
    # The vendored files may contain URLs in licence comments or SVG namespaces, but nothing
    # that would make a browser fetch: no <script src>, no require paths to a CDN.
    for lib in _inlined_library_texts():
        assert "cdnjs" not in lib and "<script src" not in lib.lower()


def test_output_is_deterministic_and_id_follows_content():
    w = _weights()
    a, b = head_view(w, TOKENS), head_view(w.clone(), TOKENS)
    assert a.html == b.html
    assert a.view_id == b.view_id and re.fullmatch(r"bertviz-[0-9a-f]{16}", a.view_id)
    assert head_view(_weights(seed=1), TOKENS).view_id != a.view_id
    assert model_view(w, TOKENS).view_id != a.view_id


def test_display_html_starts_with_div_not_iframe():
    # IPython warns on stderr for HTML that starts with <iframe>; nbval would see it.
    view = head_view(_weights(), TOKENS)
    assert view._repr_html_().startswith('<div class="course-lib-attention-view"')
    assert 'sandbox="allow-scripts"' in view.html and "allow-same-origin" not in view.html


def test_hostile_token_cannot_break_out_of_the_script():
    view = head_view(_weights(), ["[CLS]", "</script><b>", "x", "[SEP]"])
    assert "</script><b>" not in view.page
    assert _params(view.page)["attention"][0]["left_text"][1] == "</script><b>"


def test_prettify_removes_subword_markers_like_bertviz():
    data = _params(head_view(_weights(), ["Ġthe", "▁cat", "sat</w>", "x"]).page)
    assert data["attention"][0]["left_text"] == [" the", " cat", "sat", "x"]
    raw = _params(head_view(_weights(), ["Ġthe", "b", "c", "d"], prettify_tokens=False).page)
    assert raw["attention"][0]["left_text"][0] == "Ġthe"


def test_save_writes_the_standalone_page(tmp_path):
    view = model_view(_weights(), TOKENS)
    view.save(tmp_path / "v.html")
    assert (tmp_path / "v.html").read_text(encoding="utf-8") == view.page


def test_vendored_bertviz_scripts_are_the_pinned_release():
    static = resources.files("course_lib.viz").joinpath("static")
    installed = Path(bertviz.__file__).parent
    for name in ("head_view.js", "model_view.js"):
        assert static.joinpath(f"bertviz_{name}").read_text() == (installed / name).read_text()
    assert "RequireJS 2.3.6" in static.joinpath("require-2.3.6.js").read_text()[:300]
    assert "d3js.org v5.7.0" in static.joinpath("d3-5.7.0.min.js").read_text()[:100]
    assert "jQuery v2.2.4" in static.joinpath("jquery-2.2.4.min.js").read_text()[:100]
    for lic in ("bertviz", "d3", "jquery", "requirejs"):
        assert static.joinpath(f"LICENSE-{lic}.txt").is_file()


def test_a_views_text_version_says_what_it_shows():
    """A saved notebook that leaves the page out keeps this line (tools.notebooks.nbbuild, strip-output)."""
    tokens = ["a", "b", "c", "d"]
    view = head_view(_weights(), tokens, layer=2, heads=[1])
    assert "head view of 3 layer(s) x 2 heads, 4 tokens; layer 2, heads 1 switched on" in repr(view)
    assert "all heads" in repr(head_view(_weights(), tokens))
    assert "model view of 3 layer(s) x 2 heads, 4 tokens" in repr(model_view(_weights(), tokens))


def test_nbbuild_keeps_only_the_text_of_a_stripped_view(monkeypatch, tmp_path):
    import nbformat

    import tools.notebooks.nbbuild as nbbuild

    view = head_view(_weights(), ["a", "b", "c", "d"])

    def fake_run(nb, folder, timeout=600):  # what nbclient stores for `head_view(...)`
        nb.cells[0].outputs = [
            nbformat.v4.new_output(
                "execute_result",
                data={"text/html": view.html, "text/plain": repr(view)},
                execution_count=1,
            )
        ]

    monkeypatch.setattr(nbbuild, "run_notebook", fake_run)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("head_view(w, tokens)"))
    nb.cells[0].metadata["tags"] = ["nbval-ignore-output", "strip-output"]
    nbbuild.execute(nb, tmp_path)
    (out,) = nb.cells[0].outputs
    assert out["data"] == {"text/plain": repr(view)} and out["output_type"] == "display_data"
