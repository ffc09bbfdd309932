"""Lecture 12's data: sentences of Python's standard-library docstrings, labelled by topic.

Real English written by people, shipped with every Python (PSF licence), frozen into
``docstring_topics.tsv`` by ``tools/training/make_docstring_corpus.py``. Each sentence is labelled by the
topic of the module whose docstring it comes from -- six topics::

    files        os, shutil, pathlib, tempfile, zipfile, io, ...
    network      socket, ssl, http, urllib, smtplib, ipaddress, ...
    concurrency  threading, multiprocessing, asyncio, subprocess, queue, ...
    formats      json, csv, pickle, sqlite3, xml, email, configparser, ...
    numbers      math, decimal, fractions, statistics, random, ...
    debugging    unittest, doctest, pdb, inspect, logging, traceback, ...

A sentence often does not name its module ("Wait until the child terminates." is concurrency),
so the label has to be read from what the sentence is about. Whole docstrings go to one split
(train / validation / test, by a hash of the docstring's name), so no test sentence comes from a
docstring seen in training. Sizes: 3,322 / 720 / 2,550 sentences; the topics are not equally
common (formats has the most sentences, numbers the fewest).

Lecture 12 trains on small **labelled samples** -- ``load_topic_sentences("train",
per_topic=64)`` -- as a project would that can label only a few hundred sentences; the samples
are nested (the 32 of each topic are the first 32 of the 64), so a learning curve adds labels
without changing the ones it had.

Also :func:`sentence_pairs`, BERT's ``[CLS] A [SEP] B [SEP]`` task "does B follow A?", built
from consecutive sentences of the same docstring (positive) or a sentence of another docstring
of the same split (negative).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .._validation import check_positive_int

__all__ = ["TOPICS", "SPLITS", "load_topic_sentences", "topic_documents", "sentence_pairs"]

DATA_FILE = Path(__file__).resolve().with_name("docstring_topics.tsv")
TOPICS = ("files", "network", "concurrency", "formats", "numbers", "debugging")
SPLITS = ("train", "validation", "test")


@functools.lru_cache(maxsize=1)
def _rows() -> tuple[tuple[str, str, str, str], ...]:
    rows = []
    for line in DATA_FILE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            split, topic, doc, sentence = line.split("\t")
            rows.append((split, topic, doc, sentence))
    return tuple(rows)


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def load_topic_sentences(split: str, per_topic: int | None = None) -> tuple[list[str], np.ndarray]:
    """``(sentences, labels)`` of one split; ``labels[i]`` indexes :data:`TOPICS`.

    ``per_topic``: keep only that many sentences of each topic, a fixed random sample (the same
    on every machine), nested: the sample of ``k`` is part of every larger sample. ``None``
    keeps the whole split. The rows stay in file order.
    """
    _check_split(split)
    rows = [r for r in _rows() if r[0] == split]
    if per_topic is not None:
        per_topic = check_positive_int(per_topic, "per_topic")
        where = {t: [i for i, r in enumerate(rows) if r[1] == t] for t in TOPICS}
        smallest = min(TOPICS, key=lambda t: len(where[t]))
        if per_topic > len(where[smallest]):
            raise ValueError(
                f"per_topic must be at most {len(where[smallest])} for the {split} split (its "
                f"topic {smallest!r} has {len(where[smallest])} sentences), got {per_topic}"
            )
        rng = np.random.default_rng(0)
        keep = []
        for topic in TOPICS:  # the first per_topic of a fixed shuffle: samples are nested
            keep += [where[topic][i] for i in rng.permutation(len(where[topic]))[:per_topic]]
        rows = [rows[i] for i in sorted(keep)]
    return [r[3] for r in rows], np.array([TOPICS.index(r[1]) for r in rows], dtype=np.int64)


def topic_documents(split: str) -> dict[str, list[str]]:
    """The docstrings of one split: ``{name: [sentences in order]}``."""
    _check_split(split)
    docs: dict[str, list[str]] = {}
    for r in _rows():
        if r[0] == split:
            docs.setdefault(r[2], []).append(r[3])
    return docs


def sentence_pairs(split: str, seed: int = 0) -> tuple[list[tuple[str, str]], np.ndarray]:
    """``(pairs, labels)``: label 1 if B is the sentence after A in its docstring, else 0.

    One pair per consecutive sentence pair of the split's docstrings; with probability 1/2 B is
    replaced by a random sentence of *another* docstring of the same split (label 0).
    """
    rng = np.random.default_rng(check_positive_int(seed, "seed", allow_zero=True))
    docs = topic_documents(split)
    names = sorted(docs)
    pairs, labels = [], []
    for name in names:
        sents = docs[name]
        for a, b in zip(sents, sents[1:], strict=False):
            if rng.random() < 0.5:
                pairs.append((a, b))
                labels.append(1)
            else:
                other = names[rng.integers(len(names))]
                while other == name:
                    other = names[rng.integers(len(names))]
                pairs.append((a, docs[other][rng.integers(len(docs[other]))]))
                labels.append(0)
    return pairs, np.array(labels, dtype=np.int64)
