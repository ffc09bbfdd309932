"""The model view fits a narrow frame: JupyterLab at 1400 px with its file browser open leaves
the output area well under bertviz's 970 px, and the right-hand heads used to be cut off.

Opened in headless Chromium (network off) at several frame widths; skipped where no Chromium
is installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from _browser import Browser

from course_lib.viz import model_view

FIT_JS = """(() => {
  const svg = document.querySelector("svg");
  if (!svg || !svg.querySelector("rect")) return null;  // not drawn yet
  const box = svg.getBoundingClientRect();
  return {right: box.right, height: box.height, width: innerWidth,
          scroll: document.documentElement.scrollWidth,
          rects: svg.querySelectorAll("rect").length};
})()"""


@pytest.mark.slow
def test_model_view_shrinks_to_a_narrow_frame(chromium, tmp_path):
    rng = np.random.default_rng(0)
    att = rng.random((6, 12, 9, 9))
    att /= att.sum(-1, keepdims=True)  # MiniLM's shape: 6 layers of 12 heads
    page = tmp_path / "model_view.html"
    model_view(att, [f"tok{i}" for i in range(9)]).save(page)
    with Browser(chromium) as browser:
        sizes = {}
        for width in (1280, 800, 600):
            browser.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                browser.session,
            )
            browser.navigate(page.as_uri())
            browser.pump(0.5)
            state = browser.wait_for(lambda: browser.evaluate(FIT_JS), 60, "the model view")
            assert state["right"] <= state["width"] + 0.5, (width, state)
            assert state["scroll"] <= state["width"], (width, state)  # no horizontal scrolling
            sizes[width] = state["height"]
        assert not browser.console_errors, browser.console_errors
        assert not browser.external_requests()
    # Full size where there is room (970 px wide grid), scaled down in proportion where not.
    assert sizes[600] < sizes[800] < sizes[1280]
