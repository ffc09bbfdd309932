"""What makes an exported HTML page work offline, in one place for every exporter.

* :data:`DROP_CDN_BLOCKS` — the nbconvert template blocks that would load require.js, mermaid
  and the widget manager from a CDN, emptied; a template extends ``index.html.j2`` with them and
  then decides what to do with MathJax (drop it, or put KaTeX in its place).
* :data:`EXTERNAL` / :func:`check_offline` — an element that makes a browser fetch from another
  site, and the check that none is left in a page.
"""

from __future__ import annotations

import re

__all__ = ["DROP_CDN_BLOCKS", "EXTERNAL", "check_offline", "offline_template"]

DROP_CDN_BLOCKS = """{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
"""

# An element that makes a browser fetch from another site (src or href to http(s): or //).
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*\b(?:src|href)\s*=\s*[\"']?"
    r"(?:https?:)?//",
    re.I,
)


def offline_template(extra_blocks: str = "") -> str:
    """A Jinja template extending nbconvert's ``index.html.j2`` without CDN scripts, plus
    ``extra_blocks`` (e.g. a ``html_head_js_mathjax`` block that loads KaTeX instead)."""
    return "{%- extends 'index.html.j2' -%}\n" + DROP_CDN_BLOCKS + extra_blocks


def check_offline(text: str, where: str) -> None:
    """Raise ``RuntimeError`` naming ``where`` if ``text`` still loads anything from the web."""
    found = EXTERNAL.search(text)
    if found:
        raise RuntimeError(f"{where} still loads from the web: {found.group(0)!r}")
