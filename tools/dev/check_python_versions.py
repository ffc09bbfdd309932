"""Does the pinned set (requirements.txt) install on each CPython version and platform? (maintainers)

    python tools/dev/check_python_versions.py                 # 3.10-3.14 x Linux, macOS, Windows
    python tools/dev/check_python_versions.py --python 3.12 --platform linux

For every combination pip looks for a wheel of every pin (``pip install --dry-run --no-deps
--ignore-installed --only-binary=:all: --python-version X --platform TAG``) on PyPI only,
ignoring this machine's pip configuration (local mirrors, constraints), so the answer is what a
student's ``make venv`` would get. Wheels only: a package that would need compiling on the
student's machine counts as not installable. ``--no-deps`` because pip evaluates environment
markers (``sys_platform == "linux"``) for the machine it runs on, not for ``--platform``: instead
the dependencies each pinned wheel declares are evaluated here for the target platform, and any
that requirements.txt does not pin (or pins at a version outside the range) are listed — pip
would pick their newest version at install time. Prints a table; exits 1 if a version the course
claims to support (SUPPORTED) has a pin without a wheel. Needs the network.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED = ("3.11", "3.12", "3.13")  # keep in sync with README.md ("Set-up")
PYTHONS = ("3.10", *SUPPORTED, "3.14")
# pip takes "3.11" for 3.11.0; the pins need at least these patch releases (Requires-Python).
PATCH = {"3.11": "3.11.5"}
PLATFORMS = {  # the wheel platform tags a typical machine of each kind accepts
    "linux": [f"manylinux_2_{m}_x86_64" for m in range(17, 36)] + ["manylinux2014_x86_64"],
    "macos": [f"macosx_{v}_0_{a}" for v in range(11, 16) for a in ("arm64", "universal2")],
    "windows": ["win_amd64"],
}
# Pins PyPI has no wheel of at all, only a source archive of pure Python (lm-eval's
# dependencies): pip builds each into a wheel on any machine without a compiler, so they are
# left out of the wheels-only dry run and listed apart.
PURE_PYTHON_SDISTS = {"rouge-score", "sqlitedict", "word2number"}
_MISSING = re.compile(r"(?:No matching distribution found for|satisfies the requirement) (\S+)")


MARKERS = {  # environment markers of a typical machine of each kind
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
              "platform_machine": "x86_64"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix",
              "platform_machine": "arm64"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt",
                "platform_machine": "AMD64"},
}  # fmt: skip


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pip_dry_run(pins: list[str], python: str, platform: str, index_url: str):
    """pip's dry run of ``pins`` without dependencies: (returncode, stderr, report or None)."""
    with tempfile.TemporaryDirectory() as tmp:
        req, report = Path(tmp) / "requirements.txt", Path(tmp) / "report.json"
        req.write_text("\n".join(pins) + "\n")
        cmd = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--quiet"]
        cmd += ["--no-deps", "--ignore-installed", "--only-binary=:all:"]
        cmd += ["--python-version", python, "--implementation", "cp"]
        cmd += ["--index-url", index_url, "--report", str(report)]
        for tag in PLATFORMS[platform]:
            cmd += ["--platform", tag]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull  # PyPI only: no local mirror, no local constraints
        out = subprocess.run([*cmd, "-r", str(req)], capture_output=True, text=True, env=env)
        data = json.loads(report.read_text()) if out.returncode == 0 else None
        return out.returncode, out.stderr, data


def unpinned_dependencies(report: dict, pins: dict[str, str], python: str, platform: str):
    """Dependencies the pinned wheels declare for this platform that the pins do not satisfy."""
    from packaging.requirements import Requirement

    env = dict(MARKERS[platform], python_version=".".join(python.split(".")[:2]))
    env.update(python_full_version=python, implementation_name="cpython", extra="")
    env["platform_python_implementation"] = "CPython"
    loose = set()
    for item in report["install"]:
        for text in item["metadata"].get("requires_dist", []):
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            pinned = pins.get(_name(req.name))
            if pinned is None or not req.specifier.contains(pinned, prereleases=True):
                loose.add(f"{req.name}{req.specifier} (pinned: {pinned})" if pinned else req.name)
    return sorted(loose)


def pinned_requirements() -> list[str]:
    """The pins of requirements.txt (``name==version``), in file order."""
    return [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def resolve(python: str, platform: str, index_url: str) -> tuple[bool, str]:
    """(every pin has a wheel?, detail): what is missing, and unpinned dependencies if any.

    pip stops at the first pin it cannot satisfy; that pin is set aside and the rest tried
    again (the index pages are cached by then), so that every missing wheel is listed.
    """
    pins = pinned_requirements()
    versions = {_name(p.partition("==")[0]): p.partition("==")[2] for p in pins}
    sdists = [p for p in pins if _name(p.partition("==")[0]) in PURE_PYTHON_SDISTS]
    pins = [p for p in pins if p not in sdists]
    missing = []
    while True:
        code, stderr, report = _pip_dry_run(pins, python, platform, index_url)
        if code == 0:
            break
        found = _MISSING.findall(stderr)
        if not found or found[0] not in pins:
            lines = [ln for ln in stderr.splitlines() if "ERROR" in ln]
            return False, " | ".join([*missing, *lines[:3]]) or stderr.strip()[-300:]
        pin = found[0]
        version = pin.partition("==")[2]
        needs = re.findall(rf"[ :]{re.escape(version)} Requires-Python ([^;\s]+)", stderr)
        missing.append(f"{pin} ({'needs Python ' + needs[0] if needs else 'no wheel'})")
        pins.remove(pin)
    loose = unpinned_dependencies(report, versions, python, platform)
    detail = f"{len(report['install'])} wheels + {len(sdists)} pure-Python sdists"
    if missing:
        detail = "no wheel: " + "; ".join(missing)
    if loose:
        detail += f"; not pinned here: {', '.join(loose)}"
    return not missing, detail


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help="e.g. 3.12 (repeatable)")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS))
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    args = parser.parse_args(argv)
    failed_supported = []
    print(f"{len(pinned_requirements())} pins in requirements.txt")
    print(f"{'python':7} {'platform':8} result")
    for python in args.python or PYTHONS:
        for platform in args.platform or PLATFORMS:
            ok, detail = resolve(PATCH.get(python, python), platform, args.index_url)
            print(f"{python:7} {platform:8} {'ok  ' if ok else 'FAIL'} {detail}", flush=True)
            if not ok and python in SUPPORTED:
                failed_supported.append(f"{python}/{platform}")
    if failed_supported:
        print(f"supported but not installable: {', '.join(failed_supported)}")
    return 1 if failed_supported else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
