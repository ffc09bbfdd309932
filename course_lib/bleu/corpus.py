"""The public entry points: :func:`corpus_bleu` and :func:`sentence_bleu`, identical to
sacrebleu 2.6's with the same options; they tokenize, gather the corpus statistics once and
apply the formula.

Unlike sacrebleu, references are given **per hypothesis**: ``references[i]`` is a string or a
list of strings for ``hypotheses[i]``, and the number may differ between hypotheses. sacrebleu
takes reference *streams* instead (``refs[k][i]`` is the k-th reference of sentence i); those
are refused with a message, never silently misread.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._validation import check_flag, check_positive_int
from .formula import BLEUScore, check_smoothing, compute_bleu, signature
from .statistics import bleu_statistics
from .tokenizer_13a import check_tokenizer, tokenize_for_bleu

__all__ = ["corpus_bleu", "sentence_bleu"]


def _looks_like_streams(references, n_hyp: int) -> bool:
    """sacrebleu's convention: every entry a list of exactly one reference per hypothesis.

    Ambiguous only when the number of streams equals the number of hypotheses (a square of
    lists); then tuples mark the course's convention (``list(zip(*streams))`` gives tuples).
    """
    return (len(references) != n_hyp or n_hyp >= 2) and all(
        isinstance(r, list) and len(r) == n_hyp and all(isinstance(x, str) for x in r)
        for r in references
    )


def _check_references(references, n_hyp: int) -> list[list[str]]:
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise TypeError(
            "references must be a list with one entry per hypothesis (a str or a list of str), "
            f"got {type(references).__name__}"
        )
    if _looks_like_streams(references, n_hyp):
        raise ValueError(
            f"references looks like sacrebleu's reference streams ({len(references)} lists of "
            f"{n_hyp} str: refs[k][i] is the k-th reference of sentence i). This course takes "
            "them per hypothesis: references[i] is a str or a list of the references of "
            "hypotheses[i], e.g. corpus_bleu(['the cat sat'], [['the cat sat', 'a cat sat']]). "
            "Convert streams with list(zip(*streams)); if you really have "
            f"{n_hyp} references for each of {n_hyp} sentences, give each as a tuple"
        )
    if len(references) != n_hyp:
        raise ValueError(
            f"hypotheses and references must have the same length: got {n_hyp} hypotheses "
            f"and {len(references)} reference entries (references[i] belongs to hypotheses[i])"
        )
    out = []
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            out.append([refs])
            continue
        if not isinstance(refs, (list, tuple)):
            raise TypeError(
                f"references[{i}] must be a str or a list of str, got {type(refs).__name__}"
            )
        if len(refs) == 0:
            raise ValueError(f"references[{i}] is an empty list; give at least one reference")
        for k, r in enumerate(refs):
            if not isinstance(r, str):
                raise TypeError(f"references[{i}][{k}] must be a str, got {type(r).__name__}")
        out.append(list(refs))
    return out


def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[str | Sequence[str]],
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    tokenize: str = "13a",
    use_effective_order: bool = False,
    max_ngram_order: int = 4,
) -> BLEUScore:
    """Corpus BLEU, identical to ``sacrebleu.corpus_bleu`` (2.6) with the same options.

    Args:
        hypotheses: ``S`` system outputs (untokenized strings).
        references: ``S`` entries; ``references[i]`` is one reference string or a list of
            reference strings for ``hypotheses[i]`` (the count may vary). For sacrebleu, turn
            them into streams: ``refs[k][i]`` = k-th reference of sentence i, ``None`` if absent.
        smooth_method: ``"exp"`` (default), ``"floor"``, ``"add-k"`` or ``"none"``
            (see :func:`compute_bleu`); smooth_value: the value for floor / add-k.
        lowercase: lowercase before tokenizing. tokenize: ``"13a"`` (default) or ``"none"``.
        use_effective_order: see :func:`compute_bleu` (off for corpora).
        max_ngram_order: N (4).

    Returns:
        :class:`BLEUScore` (score 0–100, counts, totals, precisions, bp, sys_len, ref_len).
    """
    if isinstance(hypotheses, str) or not isinstance(hypotheses, Sequence):
        raise TypeError(
            f"hypotheses must be a list of str, got {type(hypotheses).__name__} "
            "(for one sentence use sentence_bleu)"
        )
    if len(hypotheses) == 0:
        raise ValueError("hypotheses is empty; BLEU needs at least one sentence")
    for i, h in enumerate(hypotheses):
        if not isinstance(h, str):
            raise TypeError(f"hypotheses[{i}] must be a str, got {type(h).__name__}")
    refs = _check_references(references, len(hypotheses))
    check_tokenizer(tokenize)
    check_smoothing(smooth_method, smooth_value)
    check_positive_int(max_ngram_order, "max_ngram_order")
    check_flag(lowercase, "lowercase"), check_flag(use_effective_order, "use_effective_order")

    def prepare(line: str) -> list[str]:
        return tokenize_for_bleu(line, tokenize, lowercase)

    stats = bleu_statistics(
        [prepare(h) for h in hypotheses],
        [[prepare(r) for r in rs] for rs in refs],
        max_ngram_order,
    )
    nrefs = {len(rs) for rs in refs}
    sig = signature(
        nrefs.pop() if len(nrefs) == 1 else "var",
        lowercase,
        use_effective_order,
        tokenize,
        smooth_method,
        smooth_value,
        max_ngram_order,
    )
    return compute_bleu(
        stats.counts,
        stats.totals,
        stats.sys_len,
        stats.ref_len,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=use_effective_order,
        max_ngram_order=max_ngram_order,
        signature=sig,
    )


def sentence_bleu(
    hypothesis: str,
    references: str | Sequence[str],
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    tokenize: str = "13a",
    use_effective_order: bool = True,
    max_ngram_order: int = 4,
) -> BLEUScore:
    """BLEU of one sentence, identical to ``sacrebleu.sentence_bleu`` (2.6).

    A corpus of one sentence, but with ``use_effective_order=True`` by default, because a
    short sentence often has no matching 4-gram. Sentence BLEU is noisy; report corpus BLEU.

    Args:
        hypothesis: one output string. references: a reference string or a list of them.
        The other arguments as in :func:`corpus_bleu`.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(
            f"hypothesis must be a str, got {type(hypothesis).__name__} "
            "(for a list of sentences use corpus_bleu)"
        )
    if not isinstance(references, (str, list, tuple)):
        raise TypeError(
            f"references must be a str or a list of str, got {type(references).__name__}"
        )
    return corpus_bleu(
        [hypothesis],
        [references],
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        lowercase=lowercase,
        tokenize=tokenize,
        use_effective_order=use_effective_order,
        max_ngram_order=max_ngram_order,
    )
