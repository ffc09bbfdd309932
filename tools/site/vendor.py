"""Front-end packages (KaTeX, reveal.js) from the npm registry: pinned, checked, cached.

``npm pack`` of a pinned version, checked against the registry's sha512 and cached in
``build/vendor/``; only the files the site needs are copied out, with their licences.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .links import ROOT

__all__ = ["AXE", "KATEX", "REVEAL", "NpmPackage", "npm_tarball", "vendor"]

VENDOR_CACHE = ROOT / "build" / "vendor"


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # the registry's sha512, as `npm view NAME@VERSION dist.integrity` prints it
    files: tuple[str, ...]  # what the site needs, relative to the tarball's package/ folder


KATEX = NpmPackage(
    "katex",
    "0.19.1",
    "sha512-jG8uKntjSEcm2EpQOh0XturpPuuC9r3Sq5HLHdsFdWZT27E672SF19QEi+of0/YeOy15lDgRhKvr5614uRrEfA==",
    ("LICENSE", "dist/katex.min.js", "dist/katex.min.css", "dist/contrib/auto-render.min.js",
     "dist/fonts/"),
)  # fmt: skip
REVEAL = NpmPackage(
    "reveal.js",
    "6.0.2",
    "sha512-JYIg5D9aoxoaLeb84O+OvAwsKWdIavVgEDScxtYEXFCT6t6TQrhNtSgogcjdCpdLsWglhJn3zyE3fUOwiH5KEg==",
    ("LICENSE", "dist/reveal.js", "dist/reveal.css", "dist/theme/white.css",
     "dist/plugin/notes.js"),
)  # fmt: skip


# Not shipped in the site: the browser tests inject it into every page and deck to check
# accessibility (tests/test_accessibility.py).
AXE = NpmPackage(
    "axe-core",
    "4.14.1",
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
    ("LICENSE", "axe.min.js"),
)


def _sri(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def npm_tarball(pkg: NpmPackage, cache: Path = VENDOR_CACHE) -> Path:
    """The package's tarball in ``cache``, fetched with ``npm pack`` if needed, integrity-checked."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"{pkg.name.replace('/', '-')}-{pkg.version}.tgz"
    if not tarball.exists() or _sri(tarball) != pkg.integrity:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(
                f"{pkg.name}@{pkg.version} is not in {cache} and npm is not installed: "
                "install Node.js/npm (Debian: apt-get install npm) to fetch it"
            )
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run(
                [npm, "pack", f"{pkg.name}@{pkg.version}", "--json", "--pack-destination", tmp],
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            if out.returncode != 0:
                raise RuntimeError(f"npm pack {pkg.name}@{pkg.version} failed:\n{out.stderr}")
            fetched = Path(tmp) / json.loads(out.stdout)[0]["filename"]
            shutil.move(fetched, tarball)
    if _sri(tarball) != pkg.integrity:
        tarball.unlink()
        raise RuntimeError(f"{pkg.name}@{pkg.version}: the tarball does not match its integrity")
    return tarball


def vendor(pkg: NpmPackage, dest: Path) -> Path:
    """Copy the files the site needs from the package's npm tarball into ``dest/NAME``."""
    target = dest / pkg.name
    if target.exists():
        shutil.rmtree(target)
    with tarfile.open(npm_tarball(pkg)) as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            if not member.isfile() or not any(
                rel == f or (f.endswith("/") and rel.startswith(f)) for f in pkg.files
            ):
                continue
            out = target / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(member).read())
    missing = [f for f in pkg.files if not (target / f).exists()]
    if missing:
        raise RuntimeError(f"{pkg.name}@{pkg.version} has no {missing}")
    return target
