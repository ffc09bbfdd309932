"""tools/dev/check_python_versions.py judges dependencies for the target platform, not this machine."""

from __future__ import annotations

from pathlib import Path

from tools.dev import check_python_versions as cpv

ROOT = Path(__file__).resolve().parents[1]

REPORT = {
    "install": [
        {
            "metadata": {
                "name": "ipykernel",
                "requires_dist": [
                    "appnope>=0.1.2; platform_system == 'Darwin'",
                    "pywin32>=300; sys_platform == 'win32'",
                    "tornado>=6.4",
                    "traitlets>=5.4",
                    "pytest; extra == 'test'",
                    "tomli; python_version < '3.11'",
                ],
            }
        }
    ]
}
PINS = {"tornado": "6.6.1", "traitlets": "5.3.0"}


def test_markers_are_evaluated_for_the_target_platform_and_python():
    assert cpv.unpinned_dependencies(REPORT, PINS, "3.12.0", "linux") == [
        "traitlets>=5.4 (pinned: 5.3.0)"
    ]
    assert cpv.unpinned_dependencies(REPORT, PINS, "3.12.0", "macos") == [
        "appnope",
        "traitlets>=5.4 (pinned: 5.3.0)",
    ]
    assert cpv.unpinned_dependencies(REPORT, PINS, "3.10.0", "windows") == [
        "pywin32",
        "tomli",
        "traitlets>=5.4 (pinned: 5.3.0)",
    ]


def test_the_supported_versions_are_the_ones_readme_states():
    readme = (ROOT / "README.md").read_text()
    assert "CPython 3.11 (3.11.5 or newer), 3.12 or 3.13" in readme
    assert cpv.SUPPORTED == ("3.11", "3.12", "3.13") and cpv.PATCH["3.11"] == "3.11.5"


def test_contributing_states_the_pin_count_of_requirements_txt():
    """CONTRIBUTING's table of `make check-pythons` results counts the pins; a pin added or
    removed without re-running the check (and updating the table) fails here."""
    import re

    pins = cpv.pinned_requirements()
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==\S+", p) for p in pins)
    section = (ROOT / "CONTRIBUTING.md").read_text().split("### Supported Python versions")[1]
    results = section.split("Results on ")[1].split("3.11.0–3.11.4")[0]  # the run and its table
    stated = re.findall(r"\ball (\d+)\b", results) + re.findall(r"^[^|]*?(\d+) pins\b", results)
    assert len(stated) >= 13, f"the pin counts were not found in CONTRIBUTING.md: {results[:200]}"
    assert set(map(int, stated)) == {len(pins)}, (
        f"CONTRIBUTING.md's table says {sorted(set(stated))} pins, requirements.txt has "
        f"{len(pins)}: re-run `make check-pythons` and update the table"
    )
