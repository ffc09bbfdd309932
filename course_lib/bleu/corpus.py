"""The public entry points: :func:`corpus_bleu` and :func:`sentence_bleu`, identical to
sacrebleu 2.6's with the same options; they tokenize, gather the corpus statistics once and
apply the formula.

Unlike sacrebleu, references are given **per hypothesis**: ``references[i]`` is a string or a
list of strings for ``hypotheses[i]``, and the number may differ between hypotheses. sacrebleu
takes reference *streams* instead (``refs[k][i]`` is the k-th reference of sentence i): convert
them with :func:`references_from_streams`. The per-hypothesis form always means what it says,
even when a corpus has as many references per sentence as sentences; streams of another length
are refused with a message that names the converter.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._validation import check_flag, check_positive_int
from .formula import BLEUScore, check_smoothing, compute_bleu, signature
from .statistics import bleu_statistics
from .tokenizer_13a import check_tokenizer, tokenize_for_bleu

__all__ = ["corpus_bleu", "sentence_bleu", "references_from_streams"]


def references_from_streams(streams: Sequence[Sequence[str | None]]) -> list[list[str]]:
    """sacrebleu's reference streams -> this course's per-hypothesis references.

    ``streams[k][i]`` is the k-th reference of sentence i (``None`` where sentence i has fewer
    references); returns ``references[i]``, the list of sentence i's references, in stream order.
    ``corpus_bleu(hyps, references_from_streams(refs))`` equals ``sacrebleu.corpus_bleu(hyps,
    refs)``.
    """
    if isinstance(streams, str) or not isinstance(streams, Sequence):
        raise TypeError(
            f"streams must be a list of reference streams (lists of str), got {type(streams).__name__}"
        )
    if len(streams) == 0:
        raise ValueError("streams is empty; give at least one reference stream")
    n = None
    for k, stream in enumerate(streams):
        if isinstance(stream, str) or not isinstance(stream, Sequence):
            raise TypeError(f"streams[{k}] must be a list of str (one per sentence), got "
                            f"{type(stream).__name__}")  # fmt: skip
        if n is not None and len(stream) != n:
            raise ValueError(
                f"every stream must have one entry per sentence: streams[0] has {n}, "
                f"streams[{k}] has {len(stream)}"
            )
        n = len(stream)
        for i, r in enumerate(stream):
            if r is not None and not isinstance(r, str):
                raise TypeError(f"streams[{k}][{i}] must be a str or None, got {type(r).__name__}")
    return [[stream[i] for stream in streams if stream[i] is not None] for i in range(n)]


def _looks_like_streams(references, n_hyp: int) -> bool:
    """sacrebleu's layout with a length other than the number of hypotheses: every entry a
    list of exactly ``n_hyp`` str. (With as many entries as hypotheses the per-hypothesis form
    is what the argument means: it is never guessed.)"""
    return len(references) != n_hyp and all(
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
            "Convert streams with references_from_streams(streams)"
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
            reference strings for ``hypotheses[i]`` (the count may vary). sacrebleu's streams
            (``refs[k][i]`` = k-th reference of sentence i): :func:`references_from_streams`.
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
