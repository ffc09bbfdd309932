"""Interactive attention views (bertviz's head and model views) that work with no network.

Stock bertviz 1.4.1 loads require.js, d3 and jquery from a CDN: offline its views stay empty,
and in JupyterLab 4 they fail with "require is not defined". Here the same bertviz drawing code
runs inside a sandboxed ``<iframe srcdoc>``: a small self-contained page with every library
inlined from ``course_lib/viz/static/`` (pinned copies from npm, with their licences). The page
does not depend on the notebook front end, so it draws the same in JupyterLab, the classic
notebook, VS Code and an exported HTML file, and it fetches nothing. tests/test_browser_views.py
checks this in headless Chromium with no network for an exported HTML page, JupyterLab 4 and the
classic notebook interface (Jupyter Notebook 7).

The iframe's id is derived from its content, so the same attention gives the same HTML on
every run. The HTML is still large (~450 kB a view, mostly d3), so lecture notebooks do not
commit these outputs.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from functools import cache
from importlib import resources

import numpy as np

from .._validation import check_flag, check_index
from ._inputs import as_attention_stack, check_indices, check_tokens

__all__ = ["AttentionView", "head_view", "model_view"]

# Libraries in the order the page loads them: jquery and d3 first, as plain globals (no
# `define` exists yet); then require.js, which bertviz's scripts call.
_LIBRARIES = ("jquery-2.2.4.min.js", "d3-5.7.0.min.js", "require-2.3.6.js")
# bertviz's scripts open with a licence comment and a require.config() pointing at the CDN;
# everything before the first `requirejs([` is replaced by modules defined from the globals.
_AMD_SHIM = (
    "define('jquery', [], function () { return window.jQuery; });\n"
    "define('d3', [], function () { return window.d3; });\n"
)
_PAGE_STYLE = (
    "html,body{margin:0;padding:4px;background:#fff;color:#000;"
    "font-family:'Helvetica Neue',Helvetica,Arial,sans-serif;font-size:14px}"
    "select{font-size:14px}"
)


@cache
def _static(name: str) -> str:
    text = resources.files("course_lib.viz").joinpath("static", name).read_text(encoding="utf-8")
    if "</script" in text.lower():  # would end the inline <script> early
        raise RuntimeError(f"static/{name} contains '</script' and cannot be inlined")
    return text


@cache
def _bertviz_script(view: str) -> str:
    """bertviz's ``{view}.js`` with its CDN ``require.config`` replaced by the inlined modules."""
    text = _static(f"bertviz_{view}.js")
    start = text.index("requirejs([")
    text = _AMD_SHIM + text[start:]
    if view == "model_view":
        # bertviz draws the grid 970 px wide whatever the room: in a narrow notebook (JupyterLab
        # at 1400 px with its file browser open) the right-hand heads were cut off. A viewBox
        # lets the drawing shrink to the frame's width, keeping its proportions.
        fixed = ".append('svg')\n                .attr(\"width\", DIV_WIDTH)"
        if fixed not in text:
            raise RuntimeError("bertviz model_view.js changed: cannot make its drawing fit")
        text = text.replace(
            fixed,
            ".append('svg')\n"
            '                .attr("viewBox", `0 0 ${DIV_WIDTH} ${config.divHeight}`)\n'
            '                .style("max-width", "100%").style("height", "auto")\n'
            '                .attr("width", DIV_WIDTH)',
        )
    return text


def _prettify(tokens: list[str]) -> list[str]:
    # The same clean-up bertviz does: byte-level BPE (Ġ), SentencePiece (▁), and </w> markers.
    return [t.replace("Ġ", " ").replace("▁", " ").replace("</w>", "") for t in tokens]


class AttentionView:
    """An interactive view, shown by Jupyter through ``_repr_html_``.

    ``html`` is what a notebook displays (a ``<div>`` holding the sandboxed iframe); ``page``
    is the standalone page inside it, which ``save(path)`` writes to a file a browser opens.
    """

    def __init__(self, kind: str, page: str, view_id: str, height: int, summary: str = ""):
        self.kind = kind
        self.page = page
        self.view_id = view_id
        self.height = height
        self.summary = summary  # what the view shows, in words: its text/plain stand-in

    @property
    def html(self) -> str:
        # The output starts with <div>, not <iframe>: IPython warns on stderr for HTML that
        # starts with <iframe>, and nbval would see that warning.
        # sandbox="allow-scripts" (no allow-same-origin): the page runs its own scripts but
        # cannot touch the notebook that embeds it.
        return (
            f'<div class="course-lib-attention-view" data-view="{self.kind}">'
            f'<iframe id="{self.view_id}" title="attention {self.kind} view" '
            f'sandbox="allow-scripts" style="width:100%;height:{self.height}px;border:0" '
            f'srcdoc="{html.escape(self.page, quote=True)}"></iframe></div>'
        )

    def _repr_html_(self) -> str:
        return self.html

    def save(self, path) -> None:
        """Write the standalone page (open it in any browser, no network needed)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.page)

    def __repr__(self) -> str:
        # The text a saved notebook shows where the interactive page is not kept (GitHub,
        # nbviewer, lecture notebooks that leave the ~450 kB page out).
        about = f": {self.summary}" if self.summary else ""
        return (
            f"<AttentionView {self.kind} {self.view_id}{about}; interactive, drawn when the cell "
            "runs in Jupyter>"
        )


def _prepare(attention, tokens, key_tokens, prettify_tokens: bool):
    check_flag(prettify_tokens, "prettify_tokens")
    att = as_attention_stack(attention)
    tokens = check_tokens(tokens, att.shape[2], "tokens", "query", att.shape)
    if key_tokens is None:
        if att.shape[2] != att.shape[3]:
            raise ValueError(
                f"attention is not square: {att.shape[2]} queries and {att.shape[3]} keys "
                f"(shape {att.shape}); pass key_tokens for cross-attention"
            )
        key_tokens = tokens
    else:
        key_tokens = check_tokens(key_tokens, att.shape[3], "key_tokens", "key", att.shape)
    if prettify_tokens:
        tokens, key_tokens = _prettify(tokens), _prettify(key_tokens)
    return att, tokens, key_tokens


def _attn_data(att: np.ndarray, tokens, key_tokens, sentence_b_start: int | None) -> list[dict]:
    """bertviz's list of attention "filters": everything, plus sentence A/B slices for pairs."""

    def entry(name, q, k):
        # Rounded to 4 decimals: invisible in the drawing, and it keeps the page smaller.
        attn = np.round(att[:, :, q, k], 4).tolist()
        return {"name": name, "attn": attn, "left_text": tokens[q], "right_text": key_tokens[k]}

    everything = slice(None)
    if sentence_b_start is None:
        return [entry(None, everything, everything)]
    if tokens != key_tokens:
        raise ValueError(
            "sentence_b_start is for self-attention; it cannot be used with key_tokens"
        )
    b = check_index(sentence_b_start, "sentence_b_start", len(tokens))
    if b == 0:
        raise ValueError("sentence_b_start must be >= 1 (sentence A needs at least one token)")
    a_, b_ = slice(0, b), slice(b, None)
    return [
        entry("All", everything, everything),
        entry("Sentence A -> Sentence A", a_, a_),
        entry("Sentence B -> Sentence B", b_, b_),
        entry("Sentence A -> Sentence B", a_, b_),
        entry("Sentence B -> Sentence A", b_, a_),
    ]


def _page(kind: str, params: dict, attn_data: list[dict], controls: str) -> tuple[str, str]:
    """The standalone page and its content-derived id."""
    digest_src = json.dumps([kind, params, attn_data], sort_keys=True)
    view_id = "bertviz-" + hashlib.sha1(digest_src.encode()).hexdigest()[:16]
    params = {**params, "attention": attn_data, "root_div_id": view_id, "default_filter": "0"}
    if len(attn_data) > 1:
        options = "".join(
            f'<option value="{i}">{html.escape(d["name"])}</option>'
            for i, d in enumerate(attn_data)
        )
        controls += f' Attention: <select id="filter">{options}</select>'
    # "</" inside a JSON string is escaped so a token like "</script>" cannot end the script.
    params_js = json.dumps(params).replace("</", "<\\/")
    script = _bertviz_script(kind).replace("PYTHON_PARAMS", params_js)
    libs = "".join(f"<script>{_static(name)}</script>\n" for name in _LIBRARIES)
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>attention {kind} view</title><style>{_PAGE_STYLE}</style></head><body>\n"
        f'<div id="{view_id}"><span style="user-select:none">{controls}</span>'
        '<div id="vis"></div></div>\n'
        f"{libs}<script>{script}</script>\n</body></html>\n"
    )
    return page, view_id


def head_view(
    attention,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    include_layers: Sequence[int] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
) -> AttentionView:
    """bertviz's head view: lines from each query token (left) to the keys it attends to (right).

    ``attention``: numpy array or torch tensor ``(n_q, n_k)``, ``(heads, n_q, n_k)``,
    ``(layers, heads, n_q, n_k)`` or ``(layers, 1, heads, n_q, n_k)``, or a list with one
    ``(heads, n_q, n_k)`` / ``(1, heads, n_q, n_k)`` entry per layer (``outputs.attentions``).
    ``tokens``: ``n_q`` strings; ``key_tokens``: ``n_k`` strings for cross-attention (default:
    ``tokens``). ``layer``: the layer shown first; ``heads``: heads switched on at first (click
    the coloured squares to toggle, double-click to show one head alone);
    ``include_layers``: the layers offered in the Layer menu (default all).
    ``sentence_b_start``: index of the first token of sentence B, for a sentence pair.
    """
    att, tokens, key_tokens = _prepare(attention, tokens, key_tokens, prettify_tokens)
    n_layers, n_heads = att.shape[:2]
    layers = check_indices(include_layers, n_layers, "include_layers") or list(range(n_layers))
    if layer is not None:
        check_index(layer, "layer", n_layers)
        if layer not in layers:
            raise ValueError(f"layer {layer} is not in include_layers {layers}")
    heads = check_indices(heads, n_heads, "heads")
    data = _attn_data(att[layers], tokens, key_tokens, sentence_b_start)
    params = {"layer": layer, "heads": heads, "include_layers": layers}
    page, view_id = _page("head_view", params, data, 'Layer: <select id="layer"></select>')
    # bertviz draws one 22.5 px row per token below a 30 px band of head squares.
    height = int(max(len(tokens), len(key_tokens)) * 22.5 + 30 + 60)
    shown = f"layer {layers[0] if layer is None else layer}"
    shown += f", heads {', '.join(map(str, heads))} switched on" if heads else ", all heads"
    summary = (
        f"head view of {len(layers)} layer(s) x {n_heads} heads, {len(tokens)} tokens; {shown}"
    )
    return AttentionView("head", page, view_id, height, summary)


def model_view(
    attention,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    include_layers: Sequence[int] | None = None,
    include_heads: Sequence[int] | None = None,
    sentence_b_start: int | None = None,
    display_mode: str = "light",
    prettify_tokens: bool = True,
) -> AttentionView:
    """bertviz's model view: a thumbnail of every head in every layer; click one to enlarge it.

    ``attention`` and ``tokens`` as in :func:`head_view`. ``include_layers`` /
    ``include_heads`` select rows / columns of the grid (default all);
    ``display_mode`` is ``"light"`` or ``"dark"``.
    """
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode must be 'light' or 'dark', got {display_mode!r}")
    att, tokens, key_tokens = _prepare(attention, tokens, key_tokens, prettify_tokens)
    n_layers, n_heads = att.shape[:2]
    layers = check_indices(include_layers, n_layers, "include_layers") or list(range(n_layers))
    heads = check_indices(include_heads, n_heads, "include_heads") or list(range(n_heads))
    data = _attn_data(att[np.ix_(layers, heads)], tokens, key_tokens, sentence_b_start)
    params = {
        "display_mode": display_mode,
        "include_layers": layers,
        "include_heads": heads,
        "total_heads": n_heads,
    }
    page, view_id = _page("model_view", params, data, "")
    # The same geometry bertviz computes in model_view.js (thumbnails vs. the detail panel).
    n = max(len(tokens), len(key_tokens))
    thumb = n * 7 * (12 / n_heads) + 10
    axis = 15 + 5 + 13 + 5
    height = int(max(len(layers) * thumb + axis, n * 18 + 30 + 25) + 40)
    summary = f"model view of {len(layers)} layer(s) x {len(heads)} heads, {n} tokens"
    return AttentionView("model", page, view_id, height, summary)


# Used by tests: every library the page inlines, to check nothing else refers to the web.
def _inlined_library_texts() -> list[str]:
    return [_static(name) for name in _LIBRARIES]
