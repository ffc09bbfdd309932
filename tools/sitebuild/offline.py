"""The offline check shared by the site, the slides and tools/export_html.py."""

from __future__ import annotations

import re

__all__ = ["EXTERNAL", "check_offline"]

# Anything that would make a browser fetch from another site.
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio)\b[^>]*\b(?:src|href)\s*=\s*[\"']?"
    r"(?:https?:)?//",
    re.I,
)


def check_offline(text: str, where: str) -> None:
    """Raise ``RuntimeError`` if the HTML ``text`` (of ``where``) would load from the web."""
    found = EXTERNAL.search(text)
    if found:
        raise RuntimeError(f"{where} would load from the web: {found.group(0)!r}")
