"""tools/check_python_versions.py judges dependencies for the target platform, not this machine."""

from __future__ import annotations

from pathlib import Path

from tools import check_python_versions as cpv

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
