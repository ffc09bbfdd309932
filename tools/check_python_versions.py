"""Does the pinned set (requirements.txt) install on each CPython version and platform? (maintainers)

    python tools/check_python_versions.py                 # 3.10-3.14 x Linux, macOS, Windows
    python tools/check_python_versions.py --python 3.12 --platform linux

For every combination pip resolves requirements.txt without installing anything (``pip install
--dry-run --ignore-installed --only-binary=:all: --python-version X --platform TAG``) against
PyPI only, ignoring this machine's pip configuration (local mirrors, constraints), so the answer
is what a student's ``make venv`` would get. Wheels only: a package that would need compiling
on the student's machine counts as not installable. Prints a table and the packages that have no
matching wheel; exits 1 if a version the course claims to support (SUPPORTED) fails.
Needs the network; takes a minute or two per combination (pip caches the index pages).
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

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ("3.11", "3.12", "3.13")  # keep in sync with README.md ("Set-up")
PYTHONS = ("3.10", *SUPPORTED, "3.14")
# pip takes "3.11" for 3.11.0; the pins need at least these patch releases (Requires-Python).
PATCH = {"3.11": "3.11.5"}
PLATFORMS = {  # the wheel platform tags a typical machine of each kind accepts
    "linux": [f"manylinux_2_{m}_x86_64" for m in range(17, 36)] + ["manylinux2014_x86_64"],
    "macos": [f"macosx_{v}_0_{a}" for v in range(11, 16) for a in ("arm64", "universal2")],
    "windows": ["win_amd64"],
}
_MISSING = re.compile(r"(?:No matching distribution found for|satisfies the requirement) (\S+)")


def _pip_dry_run(requirements: list[str], python: str, platform: str, index_url: str):
    """pip's dry-run resolution of ``requirements``: (returncode, stderr, report or None)."""
    with tempfile.TemporaryDirectory() as tmp:
        req, report = Path(tmp) / "requirements.txt", Path(tmp) / "report.json"
        req.write_text("\n".join(requirements) + "\n")
        cmd = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--quiet"]
        cmd += ["--ignore-installed", "--only-binary=:all:", "--python-version", python]
        cmd += ["--implementation", "cp", "--index-url", index_url, "--report", str(report)]
        for tag in PLATFORMS[platform]:
            cmd += ["--platform", tag]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull  # PyPI only: no local mirror, no local constraints
        out = subprocess.run([*cmd, "-r", str(req)], capture_output=True, text=True, env=env)
        data = json.loads(report.read_text()) if out.returncode == 0 else None
        return out.returncode, out.stderr, data


def resolve(python: str, platform: str, index_url: str) -> tuple[bool, str]:
    """(resolved?, detail): the number of packages, or every pin without a matching wheel.

    pip stops at the first pin it cannot satisfy; that pin is set aside and the rest resolved
    again (the index pages are cached by then), until everything left resolves.
    """
    pins = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    missing, why = [], {}
    while True:
        code, stderr, report = _pip_dry_run(pins, python, platform, index_url)
        if code == 0:
            if not missing:
                return True, f"{len(report['install'])} packages"
            return False, "; ".join(f"{m} ({why[m]})" for m in missing)
        found = _MISSING.findall(stderr)
        if not found or found[0] not in pins:
            lines = [ln for ln in stderr.splitlines() if "ERROR" in ln or "requires" in ln]
            return False, " | ".join([*missing, *lines[:3]]) or stderr.strip()[-300:]
        pin = found[0]
        needs = re.findall(rf"{re.escape(pin)} Requires-Python (\S+)", stderr)
        why[pin] = f"needs Python {needs[0]}" if needs else "no wheel"
        missing.append(pin)
        pins.remove(pin)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help="e.g. 3.12 (repeatable)")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS))
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    args = parser.parse_args(argv)
    failed_supported = []
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
