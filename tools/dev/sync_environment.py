"""Write environment.yml (Binder / conda) from requirements.txt, so the two never disagree.

    python -m tools.dev.sync_environment          # rewrite environment.yml
    python -m tools.dev.sync_environment --check  # exit 1 if environment.yml is out of date

torch comes from conda-forge as ``pytorch-cpu`` (the CPU build, at the pinned version); every
other package is installed by pip at exactly the version pinned in requirements.txt.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = """\
# Generated from requirements.txt by tools/dev/sync_environment.py: edit requirements.txt instead.
# Binder (repo2docker) builds the course from this file.
name: attention-course
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pytorch-cpu={torch}
  - pip:
"""


def read_pins(path: Path = ROOT / "requirements.txt") -> dict[str, str]:
    """``{name: version}`` for every ``name==version`` line of a requirements file."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise ValueError(f"requirements.txt: {line!r} is not pinned with ==")
        pins[name.strip()] = version.strip()
    return pins


def render(pins: dict[str, str]) -> str:
    lines = [HEADER.format(torch=pins["torch"])]
    lines += [f"    - {name}=={version}\n" for name, version in pins.items() if name != "torch"]
    lines.append("    - -e .\n")
    return "".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    text = render(read_pins())
    target = ROOT / "environment.yml"
    if "--check" in argv:
        if not target.exists() or target.read_text() != text:
            print("environment.yml is out of date: run python -m tools.dev.sync_environment")
            return 1
        return 0
    target.write_text(text)
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
