"""The BLEU formula in one place: :func:`compute_bleu` from the sufficient statistics, with
smoothing (Chen & Cherry 2014, sacrebleu's defaults), and its result :class:`BLEUScore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import check_flag, check_positive_int, check_str
from .counting import brevity_penalty, geometric_mean

__all__ = ["SMOOTH_METHODS", "BLEUScore", "compute_bleu"]


# Smoothing for n-gram orders without a single match (Chen & Cherry, 2014), with sacrebleu's
# default values: None means the method takes no value.
SMOOTH_METHODS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


@dataclass(frozen=True, repr=False)
class BLEUScore:
    """A BLEU result with sacrebleu's fields and meanings.

    Attributes:
        score: BLEU in 0–100.
        counts: clipped matches per order n = 1..N (with ``add-k``, k is included for n >= 2,
            as in sacrebleu).
        totals: hypothesis n-grams per order (likewise).
        precisions: ``p_n`` in percent (smoothed values where smoothing applied).
        bp: brevity penalty. sys_len / ref_len: hypothesis / closest-reference token totals.
        signature: how it was computed, e.g. ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp``.
    """

    score: float
    counts: list
    totals: list
    precisions: list[float]
    bp: float
    sys_len: int
    ref_len: int
    signature: str = ""

    @property
    def ratio(self) -> float:
        """Hypothesis length / reference length (BP < 1 whenever this is < 1)."""
        return self.sys_len / self.ref_len if self.ref_len else 0.0

    def format(self, width: int = 2) -> str:
        """sacrebleu's one-line format, e.g. ``BLEU = 57.89 100.0/75.0/66.7/50.0 (BP = ...)``."""
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        name = f"BLEU|{self.signature}" if self.signature else "BLEU"
        return (
            f"{name} = {self.score:.{width}f} {prec} (BP = {self.bp:.3f} "
            f"ratio = {self.ratio:.3f} hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})"
        )

    __repr__ = format
    __str__ = format


def signature(nrefs, lowercase, effective_order, tokenize, smooth_method, smooth_value, order):
    smooth = smooth_method
    if SMOOTH_METHODS[smooth_method] is not None:
        value = SMOOTH_METHODS[smooth_method] if smooth_value is None else smooth_value
        smooth += f"[{value:.2f}]"
    parts = [
        f"nrefs:{nrefs}",
        f"case:{'lc' if lowercase else 'mixed'}",
        f"eff:{'yes' if effective_order else 'no'}",
        f"tok:{tokenize}",
        f"smooth:{smooth}",
    ]
    if order != 4:
        parts.append(f"order:{order}")
    return "|".join(parts)


def check_smoothing(smooth_method, smooth_value) -> None:
    if not isinstance(smooth_method, str) or smooth_method not in SMOOTH_METHODS:
        raise ValueError(
            f"smooth_method must be one of {list(SMOOTH_METHODS)}, got {smooth_method!r}"
        )
    if smooth_value is not None:
        if isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)):
            raise TypeError(
                f"smooth_value must be a number or None, got {type(smooth_value).__name__}"
            )
        if not 0 <= smooth_value < float("inf"):
            raise ValueError(f"smooth_value must be a finite number >= 0, got {smooth_value}")


def compute_bleu(
    counts: Sequence[int],
    totals: Sequence[int],
    sys_len: int,
    ref_len: int,
    smooth_method: str = "none",
    smooth_value: float | None = None,
    effective_order: bool = False,
    max_ngram_order: int = 4,
    signature: str = "",
) -> BLEUScore:
    """BLEU from its sufficient statistics — the whole formula, including smoothing.

    Args:
        counts: clipped matches per order 1..N (summed over the corpus).
        totals: hypothesis n-grams per order 1..N.
        sys_len: total hypothesis length; ref_len: total closest-reference length.
        smooth_method: what to do with an order that has no match (Chen & Cherry 2014):
            ``"none"`` — p_n = 0, so BLEU = 0; ``"floor"`` — p_n = smooth_value / total
            (default 0.1); ``"add-k"`` — add k (default 1) to matches and totals of every order
            n >= 2; ``"exp"`` — the k-th order without a match gets p_n = 1 / (2^k · total)
            (mteval-v13a's, sacrebleu's default).
        effective_order: average only over the orders that have any n-gram (total > 0), so a
            3-word sentence is not zeroed by its missing 4-grams (sacrebleu's sentence BLEU).
        max_ngram_order: N, the highest n-gram order (4 is standard).

    Returns:
        :class:`BLEUScore`. As in sacrebleu: if nothing matches at all the score is 0 (and no
        smoothing is applied); an order with no n-grams at all ends the loop over orders.
    """
    check_smoothing(smooth_method, smooth_value)
    n_max = check_positive_int(max_ngram_order, "max_ngram_order")
    effective_order = check_flag(effective_order, "effective_order")
    signature = check_str(signature, "signature")
    for name, values in (("counts", counts), ("totals", totals)):
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise TypeError(f"{name} must be a list of n-gram counts, got {type(values).__name__}")
        for i, c in enumerate(values):
            check_positive_int(c, f"{name}[{i}]", allow_zero=True)
    if len(counts) != n_max or len(totals) != n_max:
        raise ValueError(
            f"counts and totals need max_ngram_order={n_max} entries, "
            f"got {len(counts)} and {len(totals)}"
        )
    for i, (c, t) in enumerate(zip(counts, totals, strict=True)):
        if c > t:
            raise ValueError(
                f"counts[{i}]={c} is more than totals[{i}]={t}: a hypothesis cannot match more "
                f"{i + 1}-grams than it has"
            )
    if smooth_value is None:
        smooth_value = SMOOTH_METHODS[smooth_method]
    counts, totals = list(counts), list(totals)
    bp = brevity_penalty(sys_len, ref_len)
    precisions = [0.0] * n_max
    if not any(counts):
        return BLEUScore(0.0, counts, totals, precisions, bp, sys_len, ref_len, signature)

    halvings = 1.0  # "exp" smoothing: 1/2, 1/4, ... for successive orders without a match
    order = n_max  # how many orders the geometric mean averages over
    for n in range(1, n_max + 1):
        if smooth_method == "add-k" and n > 1:
            counts[n - 1] += smooth_value
            totals[n - 1] += smooth_value
        if totals[n - 1] == 0:
            break  # no n-grams of this order (and so none of higher orders either)
        if effective_order:
            order = n
        if counts[n - 1] == 0:
            if smooth_method == "exp":
                halvings *= 2
                precisions[n - 1] = 100.0 / (halvings * totals[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * smooth_value / totals[n - 1]
        else:
            precisions[n - 1] = 100.0 * counts[n - 1] / totals[n - 1]

    # BLEU = BP · exp(mean of log p_n); precisions are in percent, so the score is too.
    score = bp * geometric_mean(precisions[:order])
    return BLEUScore(score, counts, totals, precisions, bp, sys_len, ref_len, signature)
