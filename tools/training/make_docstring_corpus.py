"""Maintainer's tool: extract prose sentences from CPython's standard-library source (PSF licence).

    python -m tools.training.make_docstring_corpus          # rewrites course_lib/data/docstring_topics.tsv
    python -m tools.training.make_docstring_corpus --mlm /tmp/mlm_corpus.txt   # also the MLM-head corpus

It parses (never imports) every ``Lib/**/*.py`` of the running interpreter and keeps the prose
sentences of every docstring -- module, class, function and method, public or private -- with
the sentence filter of ``tools/training/make_pretraining_corpus.py`` (unindented paragraphs, 5-50 words,
no code, no doctests), skipping exact repeats. Two products:

* ``course_lib/data/docstring_topics.tsv`` (shipped, lecture 12): every sentence of the
  modules of six topics, one per line as ``split<TAB>topic<TAB>document<TAB>sentence``. Whole
  documents (one docstring) go to one split, chosen by a hash of the document's name, so no
  docstring is cut between training and test. The test split takes 40 % of the documents:
  lecture 12 trains on small labelled samples of the training split, and a large test split
  gives narrow confidence intervals.
* ``--mlm PATH`` (not shipped, ~470k words): every sentence of every module plus the Language
  Reference help topics (``pydoc_data.topics``), plus -- to have more text of the same kind --
  the docstrings of the pinned numpy, scipy and scikit-learn (BSD-3-Clause licences), as
  '= document' blocks, for ``tools/training/train_mlm_head.py``. Only the head trained on it ships.

The text is copyright (c) 2001-2023 Python Software Foundation, used under the PSF License
Agreement (it ships with every Python). Run with the pinned interpreter (.venv, Python 3.11) to
reproduce the committed file: another Python version has other docstrings.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import sysconfig
from pathlib import Path

from tools.training.make_pretraining_corpus import prose_sentences

ROOT = Path(__file__).resolve().parents[2]

OUT = ROOT / "course_lib" / "data" / "docstring_topics.tsv"
SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
             "site-packages", "pydoc_data", "__pycache__", "venv", "unittest/test"}  # fmt: skip

# Eight topics, each a handful of standard-library modules (first component of the dotted name).
TOPICS = {
    "files": ["os", "posixpath", "genericpath", "shutil", "pathlib", "tempfile", "glob",
              "fnmatch", "filecmp", "fileinput", "stat", "zipfile", "tarfile", "gzip", "bz2",
              "lzma", "io", "_pyio"],
    "network": ["socket", "ssl", "http", "urllib", "smtplib", "imaplib", "poplib", "ftplib",
                "socketserver", "xmlrpc", "ipaddress", "nntplib", "telnetlib", "wsgiref"],
    "concurrency": ["threading", "multiprocessing", "asyncio", "concurrent", "queue",
                    "subprocess", "sched", "selectors", "signal", "_threading_local"],
    "text": ["re", "string", "textwrap", "difflib", "unicodedata", "codecs", "locale",
             "gettext", "html", "shlex", "stringprep", "encodings"],
    "numbers": ["math", "cmath", "decimal", "_pydecimal", "fractions", "statistics", "random",
                "numbers"],
    "formats": ["json", "csv", "pickle", "shelve", "dbm", "sqlite3", "xml", "plistlib",
                "configparser", "base64", "binascii", "struct", "marshal", "email", "mailbox",
                "quopri", "uu", "netrc", "tomllib"],
    "time": ["datetime", "_pydatetime", "time", "calendar", "zoneinfo", "_strptime"],
    "debugging": ["unittest", "doctest", "pdb", "bdb", "inspect", "traceback", "logging",
                  "warnings", "trace", "profile", "cProfile", "pstats", "timeit", "dis",
                  "faulthandler", "tracemalloc"],
}  # fmt: skip
MODULE_TOPIC = {m: t for t, mods in TOPICS.items() for m in mods}
SPLITS = (("test", 0.4), ("validation", 0.1), ("train", 0.5))
USED_TOPICS = ("files", "network", "concurrency", "formats", "numbers", "debugging")
EXTRA_PACKAGES = ("numpy", "scipy", "sklearn")  # BSD-3-Clause; only for the MLM corpus


def module_files() -> list[tuple[str, Path]]:
    """``(dotted module name, path)`` of every standard-library source file, sorted."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in sorted(lib.rglob("*.py")):
        rel = path.relative_to(lib)
        if any(part in SKIP_DIRS for part in rel.parts[:-1]) or "test" in rel.parts[0]:
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out.append((".".join(parts), path))
    return out


def docstrings(name: str, path: Path) -> list[tuple[str, str]]:
    """``(document name, docstring)`` of the module and every class/function in it, in order."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    out = [(name, ast.get_docstring(tree) or "")]

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}.{child.name}"
                out.append((qual, ast.get_docstring(child) or ""))
                visit(child, qual)

    visit(tree, name)
    return out


def split_of(document: str) -> str:
    """Split of a document, from a hash of its name (stable across runs and machines)."""
    u = int(hashlib.sha256(document.encode()).hexdigest()[:8], 16) / 16**8
    acc = 0.0
    for split, share in SPLITS:
        acc += share
        if u < acc:
            return split
    return SPLITS[-1][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mlm", type=Path, help="also write the MLM-head corpus here")
    args = parser.parse_args()
    seen: set[str] = set()
    rows, mlm_docs = [], []
    for name, path in module_files():
        topic = MODULE_TOPIC.get(name.split(".")[0])
        for doc, text in docstrings(name, path):
            sents = prose_sentences(text, seen)
            if sents:
                mlm_docs.append((doc, sents))
            if topic in USED_TOPICS:
                rows += [(split_of(doc), topic, doc, s) for s in sents]
    header = [
        "# Lecture 12's sentence-topic data (course_lib.data.docstrings). Prose sentences of the",
        "# Python 3.11 standard-library docstrings, labelled by the topic of their module.",
        "# Copyright (c) 2001-2023 Python Software Foundation; used under the PSF License",
        "# Agreement. Generated by tools/training/make_docstring_corpus.py.",
        "# Columns: split, topic, document (the docstring's owner), sentence.",
    ]
    order = {split: k for k, (split, _) in enumerate(SPLITS)}
    rows.sort(key=lambda r: (order[r[0]], USED_TOPICS.index(r[1])))  # stable: document order kept
    body = ["\t".join(r) for r in rows]
    OUT.write_text("\n".join(header + body) + "\n", encoding="utf-8")
    print(f"{OUT.name}: {len(body)} sentences")
    if args.mlm:
        from pydoc_data.topics import topics

        for key in sorted(topics):
            sents = prose_sentences(topics[key], seen)
            if sents:
                mlm_docs.append((f"help:{key}", sents))
        import importlib.util

        for pkg in EXTRA_PACKAGES:
            root = Path(importlib.util.find_spec(pkg).origin).parent
            for path in sorted(root.rglob("*.py")):
                if "tests" in path.relative_to(root).parts:
                    continue
                name = ".".join((pkg, *path.relative_to(root).with_suffix("").parts))
                for doc, text in docstrings(name, path):
                    sents = prose_sentences(text, seen)
                    if sents:
                        mlm_docs.append((doc, sents))
        lines = []
        for doc, sents in mlm_docs:
            lines += ["", f"= {doc}", *sents]
        args.mlm.write_text("\n".join(lines) + "\n", encoding="utf-8")
        n_words = sum(len(s.split()) for _, ss in mlm_docs for s in ss)
        print(f"{args.mlm}: {len(mlm_docs)} documents, {n_words} words")


if __name__ == "__main__":
    main()
