"""Colour maps and colours are readable with colour-vision deficiency.

Every colour map the course draws with (course_lib.viz and the lectures' code) is checked in a
simulation of protanopia and deuteranopia (Machado, Oliveira & Fernandes 2009, severity 1,
applied in linear RGB): a sequential map must stay monotone in luminance, so that its order is
read by lightness alone; a diverging map must be monotone on each side of its centre and keep
its two ends apart. Negative controls: ``jet`` and ``RdYlGn`` fail these checks. No code cell
or plotting function may give meaning by red against green.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

MACHADO = {  # severity 1.0, linear RGB
    "protanopia": np.array(
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ]
    ),  # fmt: skip
    "deuteranopia": np.array(
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ]
    ),  # fmt: skip
}
DIVERGING = {"RdBu", "RdBu_r", "PuOr", "PuOr_r", "BrBG", "BrBG_r", "coolwarm", "RdYlGn"}


def _linear(srgb: np.ndarray) -> np.ndarray:
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _simulated(cmap: str, kind: str, n: int = 64) -> np.ndarray:
    """Linear-RGB colours of ``cmap`` at n points, as seen with ``kind`` (or normal vision)."""
    rgb = _linear(matplotlib.colormaps[cmap](np.linspace(0, 1, n))[:, :3])
    return rgb if kind == "normal" else np.clip(rgb @ MACHADO[kind].T, 0, 1)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    return rgb @ np.array([0.2126, 0.7152, 0.0722])


def readable(cmap: str) -> list[str]:
    """What is wrong with ``cmap`` for colour-blind readers (empty: nothing)."""
    problems = []
    for kind in ("normal", "protanopia", "deuteranopia"):
        rgb = _simulated(cmap, kind)
        lum = _luminance(rgb)
        steps = np.diff(lum)
        if cmap not in DIVERGING:
            if not ((steps > 0).all() or (steps < 0).all()):
                problems.append(f"{kind}: luminance not monotone")
            continue
        mid = len(lum) // 2
        left, right = np.diff(lum[:mid]), np.diff(lum[mid:])
        if not ((left > 0).all() or (left < 0).all()) or not (
            (right > 0).all() or (right < 0).all()
        ):
            problems.append(f"{kind}: luminance not monotone on each side")
        ends = np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * rgb ** (1 / 2.4) - 0.055)
        if np.abs(ends[0] - ends[-1]).max() < 0.25:  # as displayed (sRGB)
            problems.append(f"{kind}: the two ends look alike ({rgb[0]} vs {rgb[-1]})")
    return problems


def _code() -> dict[str, str]:
    """Every piece of plotting code: course_lib.viz modules and the lectures' code cells."""
    found = {
        str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "course_lib/viz").glob("*.py")
    }
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] == "code":
                found[f"{nb.name} cell {i}"] = "".join(cell["source"])
    return found


CODE = _code()
USED = sorted(
    {
        m
        for src in CODE.values()
        for m in re.findall(r"cmap\s*(?::\s*str\s*)?=\s*[\"'](\w+)[\"']", src)
    }
)


def test_the_course_uses_colour_maps():
    assert "viridis" in USED and len(USED) >= 3, USED  # the scan finds them


@pytest.mark.parametrize("cmap", USED)
def test_every_colour_map_reads_with_colour_vision_deficiency(cmap):
    assert not readable(cmap), f"{cmap}: {readable(cmap)}"


@pytest.mark.parametrize("cmap", ["jet", "RdYlGn", "hsv"])
def test_the_simulation_rejects_maps_known_to_be_unsafe(cmap):
    assert readable(cmap), f"{cmap} should fail the colour-vision checks"


def test_no_code_contrasts_red_with_green():
    pair = re.compile(r"""["'](?:red|r|tab:red|#ff0000)["']""", re.I)
    green = re.compile(r"""["'](?:green|g|tab:green|#00ff00|lime)["']""", re.I)
    both = [where for where, src in CODE.items() if pair.search(src) and green.search(src)]
    assert not both, f"red and green together in {both}"
