"""Checks for the exercises of lecture 11 (GPT: next-token loss, nucleus filtering, KV-cache size)."""

from __future__ import annotations

import numpy as np
import torch

from ..models.generation import top_p_filter
from . import (
    Built,
    ExerciseError,
    call_student,
    call_student_frozen,
    check_diagnosis,
    check_prediction,
    hidden_rng,
    passed,
)
from .given import SAMPLER_FAULTS, SAMPLING_POSITIONS, mystery_sampler, sampler_keeps
from .given_torch import read_only_tensor

__all__ = [
    "check_next_token_loss",
    "check_top_p_keep",
    "check_max_cached_tokens",
    "check_diagnose_sampler",
    "check_distinct_tokens",
    "read_only_tensor",
    "SAMPLING_POSITIONS",
    "SAMPLER_FAULTS",
    "mystery_sampler",
]

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "11.1": ("course_lib.models.gpt.lm_loss",),
    "11.2": ("course_lib.models.generation.top_p_filter",),
    "11.3": ("course_lib.grouped_query.kv_cache_bytes",),
    "11.4": (),
    "11.5": ("course_lib.models.generation.top_p_filter",),
}


def _next_token_losses(logits: torch.Tensor, ids: torch.Tensor, pad_id: int) -> dict[str, float]:
    """The right loss and the values of the usual mistakes, each with the hint it deserves."""
    logp = torch.log_softmax(logits.double(), dim=-1)  # (B, n, V)

    def picked(lp, targets):  # -log p(target) at every position: (B, m)
        return -lp.gather(-1, targets[..., None])[..., 0]

    nll = picked(logp[:, :-1], ids[:, 1:])  # position t predicts the token at t + 1
    counts = ids[:, 1:] != pad_id  # ... and counts only when that token is real
    real_in = ids[:, :-1] != pad_id
    per_sequence = [nll[b][counts[b]].mean() for b in range(len(ids)) if counts[b].any()]
    return {
        "right": nll[counts].mean().item(),
        "the predictions whose target is padding were counted: leave out every position whose "
        "target (the token it predicts) is pad_id": nll.mean().item(),
        "you left out the positions whose INPUT token is padding; what decides whether a "
        "prediction counts is the token it predicts, one position later": nll[real_in].mean().item(),
        "divide by the number of predictions that count, not by all B * (n - 1) of them":
        (nll[counts].sum() / nll.numel()).item(),
        "that is the mean of each sequence's mean; the loss is the mean over all the predictions "
        "that count, so a longer sequence weighs more": torch.stack(per_sequence).mean().item(),
        "this is the sum over the predictions that count; the loss is their mean":
        nll[counts].sum().item(),
        "position t scores token t itself: the targets were not shifted; the scores at t predict "
        "the token at t + 1": picked(logp, ids)[ids != pad_id].mean().item(),
        "shifted the wrong way: the scores at position t are for the token at t + 1, not t - 1":
        picked(logp[:, 1:], ids[:, :-1])[real_in].mean().item(),
        "the raw scores were used as log-probabilities; apply log_softmax (or use "
        "F.cross_entropy, which does)": -logits.double()[:, :-1].gather(-1, ids[:, 1:, None])[
            ..., 0
        ][counts].mean().item(),
        "this is the probability, not minus its log, of the target; take -log":
        -(-nll).exp()[counts].mean().item(),
    }  # fmt: skip


def _padded_ids(gen: torch.Generator, b: int, n: int, v: int, pad_id: int,
                lengths: list[int] | None = None) -> torch.Tensor:  # fmt: skip
    """A batch of ``b`` right-padded sequences of real tokens (never ``pad_id``)."""
    ids = torch.randint(0, v - 1, (b, n), generator=gen)
    ids = ids + (ids >= pad_id).long()  # skip the pad id
    if lengths is None:
        lengths = torch.randint(1, n + 1, (b,), generator=gen).tolist()
        lengths[0] = n  # at least one full sequence
    for row, length in enumerate(lengths):
        ids[row, length:] = pad_id
    return ids


def check_next_token_loss(student_fn, *, seed: int = 0) -> None:
    """Exercise 11.1: ``next_token_loss(logits, ids, pad_id) -> float``, the causal LM loss in
    nats/token of a right-padded batch.

    ``logits (B, n, V)`` are the model's outputs on ``ids (B, n)``; position ``t`` scores the
    token at ``t + 1``; the sequences are padded on the right with ``pad_id``. The mean
    cross-entropy over the predictions whose target is a real token (``F.cross_entropy`` with
    ``ignore_index=pad_id`` on the shifted targets).
    """
    ex = "11.1"
    gen = torch.Generator().manual_seed(1100 + seed)
    cases = [(3, 7, 11, 0, [7, 4, 2]), (1, 2, 5, 4, [2]), (4, 12, 40, 39, [12, 9, 1, 5])]
    if seed:
        cases = [(int(torch.randint(1, 6, (1,), generator=gen)), int(n), int(v),
                  int(torch.randint(0, int(v), (1,), generator=gen)), None)
                 for n, v in ((2, 5), (7, 11), (int(torch.randint(3, 20, (1,), generator=gen)),
                                                int(torch.randint(3, 60, (1,), generator=gen))))]  # fmt: skip
    for b, n, v, pad_id, lengths in cases:
        logits = 2 * torch.randn(b, n, v, generator=gen)
        ids = _padded_ids(gen, b, n, v, pad_id, lengths)
        frozen_ids = Built("course_lib.checks.given_torch:read_only_tensor", data=ids.tolist())
        got = call_student_frozen(ex, student_fn, logits.clone(), frozen_ids, pad_id)
        if isinstance(got, torch.Tensor):
            got = got.as_subclass(torch.Tensor) if type(got) is not torch.Tensor else got
        try:
            got = float(got)
        except (TypeError, ValueError):
            raise ExerciseError(
                ex,
                f"expected one number (a float or a 0-d tensor), got {type(got).__name__}.",
                "return the mean loss, e.g. `F.cross_entropy(...)` or `.item()` of it.",
            ) from None
        values = _next_token_losses(logits, ids, pad_id)
        expected = values.pop("right")
        if np.isclose(got, expected, rtol=1e-5, atol=1e-6):
            continue
        hint = next(
            (h for h, val in values.items() if np.isclose(got, val, rtol=1e-5, atol=1e-6)
             and not np.isclose(val, expected, rtol=1e-5, atol=1e-6)),
            "which scores predict which token, and which of those predictions have a target "
            "that is a real token?",
        )  # fmt: skip
        raise ExerciseError(
            ex,
            f"loss for logits of shape {(b, n, v)}, pad_id = {pad_id}, padded ids "
            f"{ids.tolist() if ids.numel() <= 40 else '(hidden)'}:\n  expected {expected:.6f}\n"
            f"  got      {got:.6f}",
            hint,
        )
    passed(ex, "the next-token loss of a padded batch")


def _keep_reference(probs: np.ndarray, p: float) -> np.ndarray:
    return torch.isfinite(top_p_filter(torch.log(torch.as_tensor(probs)), p)).numpy()


def _boundary_safe(probs: np.ndarray, p: float) -> bool:
    """True when no partial sum of the sorted probabilities is within 1e-6 of p."""
    totals = np.cumsum(np.sort(probs)[::-1])
    return bool(np.all(np.abs(totals - p) > 1e-6))


def check_top_p_keep(student_fn, *, seed: int = 0) -> None:
    """Exercise 11.2: ``top_p_keep(probs, p) -> bool array``: which tokens nucleus sampling keeps.

    Keep the smallest set of most probable tokens whose probabilities add up to at least ``p``.
    """
    ex = "11.2"
    rng = np.random.default_rng(1120 + seed)
    hand = np.array([0.15, 0.5, 0.05, 0.3])
    cases = [(hand, p) for p in (0.45, 0.6, 0.85, 0.97, 1.0)]
    # exact binary fractions: the kept total reaches p exactly (the next token is not needed);
    # ties: the smallest set keeps only as many of the tied tokens as it needs
    cases += [(np.array([0.2, 0.4, 0.2, 0.2]), 0.5), (np.array([0.125, 0.25, 0.25, 0.25, 0.125]),
                                                      0.3),
              (np.array([0.25, 0.5, 0.25]), 0.75), (np.array([0.5, 0.25, 0.125, 0.125]), 0.875)]  # fmt: skip
    while len(cases) < 16:
        probs = rng.dirichlet(np.full(int(rng.integers(3, 12)), 0.7))
        p = float(rng.uniform(0.3, 0.99))
        if _boundary_safe(probs, p) and probs.min() > 1e-9:
            cases.append((probs, p))
    for probs, p in cases:
        expected = _keep_reference(probs, p)
        got = call_student(ex, student_fn, probs.copy(), p)
        got = np.asarray(got)
        if got.shape != probs.shape or not (got.dtype == bool or np.isin(got, (0, 1)).all()):
            raise ExerciseError(
                ex,
                f"expected a boolean array of shape {probs.shape} (one entry per token), got "
                f"{got.dtype} of shape {got.shape}.",
                "return a mask in the tokens' original order, True = kept.",
            )
        got = got.astype(bool)
        if np.array_equal(got, expected) or (  # a tie broken another way is just as right
            got.sum() == expected.sum()
            and np.array_equal(np.sort(probs[got]), np.sort(probs[expected]))
        ):
            continue
        order = np.argsort(-probs, kind="stable")
        total = probs[got].sum()
        if np.array_equal(got, expected[order]):
            hint = "the mask must be in the tokens' original order, not sorted by probability."
        elif total < p - 1e-9:
            hint = (
                f"your tokens add up to {total:.3f} < p = {p}: keep the token that makes the "
                "total reach p too (keep a token while the total BEFORE it is below p)."
            )
        elif total - probs[got].min() >= p - 1e-12 and np.isclose(
            np.sort(probs)[::-1][: expected.sum()].sum(), p, rtol=0, atol=1e-12
        ):
            hint = (
                "the kept tokens already reach p exactly before your last one: keep a token "
                "only while the total BEFORE it is strictly below p (at least p, not more)."
            )
        elif total - probs[got].min() >= p - 1e-12 and np.sum(probs == probs[got].min()) > 1:
            hint = (
                "several tokens tie with the last one you need: keep only as many of them as it "
                "takes to reach p (the smallest set), not every tied token."
            )
        elif not np.array_equal(np.sort(probs[got])[::-1], np.sort(probs)[::-1][: got.sum()]):
            hint = (
                "keep the MOST probable tokens: sort the probabilities in decreasing order first."
            )
        else:
            hint = "keep the smallest set: stop as soon as the kept total reaches p."
        raise ExerciseError(
            ex,
            f"probs = {np.round(probs, 4).tolist()}, p = {p}:\n"
            f"  expected keep = {expected.tolist()}\n  got      keep = {got.tolist()}",
            hint,
        )
    passed(ex, "nucleus (top-p) filtering keeps the smallest set that reaches p")


# GPT-2 medium: 24 layers, d_model 1024 (16 heads), 8 sequences in float16 within 1 GiB.
_GPT2_MEDIUM = (24, 1024, 16, 8, 2**30, 2)
# The notebook's small model: 2 layers, d_model 64, 8 heads, 3 sequences, float32, 40,000 bytes.
_SMALL = (2, 64, 8, 3, 40_000, 4)


def _cache_models(seed: int) -> list[tuple[int, int, int, int, int, int]]:
    """(num_layers, d_model, num_heads, batch, budget_bytes, bytes_per_number): GPT-2 medium
    (seed 0), or hidden models of about its size, budgets and number formats."""
    if seed == 0:
        return [_GPT2_MEDIUM]
    rng = hidden_rng(seed, 113)
    models = []
    for layers, heads in ((6, 8), (12, 12), (36, 20)):
        d_model = heads * int(rng.choice([32, 64, 80]))
        models.append((layers, d_model, heads, int(rng.choice([2, 3, 8])),
                       int(rng.integers(2**26, 2**34)), int(rng.choice([2, 4]))))  # fmt: skip
    return models


def _small_models(seed: int) -> list[tuple[int, int, int, int, int, int]]:
    """Small float32 models whose caches the check fills and measures: the notebook's (seed 0),
    or a hidden one with a budget of 3 to 40 tokens' worth."""
    if seed == 0:
        return [_SMALL]
    rng = hidden_rng(seed, 1131)
    heads = int(rng.choice([1, 2, 4, 8]))
    layers, d_model, batch = (
        int(rng.integers(1, 4)),
        heads * int(rng.choice([4, 8, 16])),
        int(rng.integers(1, 5)),
    )
    per_token = 2 * layers * d_model * batch * 4
    return [(layers, d_model, heads, batch, int(rng.integers(3 * per_token, 41 * per_token)), 4)]


def _filled_cache_bytes(layers: int, d_model: int, heads: int, batch: int, tokens: int) -> int:
    """The measurement: the bytes a real float32 GPT's :class:`~course_lib.nn.KVCache` holds
    after a prompt of ``tokens - 1`` tokens and one generation step, for ``batch`` sequences."""
    from ..configs import GPTConfig
    from ..models.gpt import GPT
    from ..nn import KVCache

    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=16, context_length=tokens, d_model=d_model,
                              num_heads=heads, num_layers=layers)).eval()  # fmt: skip
    cache = KVCache()
    with torch.no_grad():
        if tokens > 1:
            model(torch.randint(0, 16, (batch, tokens - 1), generator=gen), cache)
        model(torch.randint(0, 16, (batch, 1), generator=gen), cache)
    return cache.numel() * model.lm_head.weight.element_size()


def _measured_max_tokens(layers, d_model, heads, batch, budget, answer) -> int | None:
    """The measurement of a small model: ``answer`` if a real cache filled to it fits the budget
    and one more token does not; else None (wrong)."""
    if not 1 <= answer <= 200:  # the small models' budgets hold at most 40 tokens
        return None
    fits = _filled_cache_bytes(layers, d_model, heads, batch, answer) <= budget
    overflows = _filled_cache_bytes(layers, d_model, heads, batch, answer + 1) > budget
    return answer if fits and overflows else None


def _check_heads_prediction(ex: str, heads_change_count) -> None:
    """The prediction written before the measurement: does the cache grow or shrink with the
    number of heads at a fixed d_model? Graded against two real caches (8 and 2 heads)."""
    if not isinstance(heads_change_count, (bool, np.bool_)):
        raise ExerciseError(ex, "heads_change_count: expected your prediction, True or False, got "
                            f"{type(heads_change_count).__name__} {heads_change_count!r:.40}.",
                            "write it down BEFORE you measure: heads_change_count = True or "
                            "heads_change_count = False.")  # fmt: skip
    eight, two = _filled_cache_bytes(2, 64, 8, 3, 11), _filled_cache_bytes(2, 64, 2, 3, 11)
    if bool(heads_change_count) != (eight != two):
        raise ExerciseError(ex, f"your prediction heads_change_count = {heads_change_count} did "
                            "not hold: measure the two caches in the cell below and compare.",
                            "look at the shape of one layer's keys, (batch, heads, positions, "
                            "d_head): what happens to d_head when the heads change and d_model "
                            "does not?")  # fmt: skip


def check_max_cached_tokens(student_fn, heads_change_count=None, *, seed: int = 0) -> None:
    """Exercise 11.3 (predict, then measure): ``max_cached_tokens(num_layers, d_model,
    num_heads, batch, budget_bytes, bytes_per_number) -> int``, the predicted largest number of
    tokens per sequence whose KV cache fits in ``budget_bytes`` (GPT-2 medium serving 8
    sequences in float16 within 1 GiB, hidden models, and small float32 models whose real caches
    the check fills to the answer and measures), and ``heads_change_count`` (True or False), the
    prediction written down before the measurement: does the cache's size change with the
    number of heads at a fixed d_model? A wrong count is told too low / too high, with the
    mistake it looks like; never the count."""
    ex = "11.3"
    cases = [(m, False) for m in _cache_models(seed)] + [(m, True) for m in _small_models(seed)]
    for (layers, d, heads, batch, budget, size), small in cases:
        answer = call_student(ex, student_fn, layers, d, heads, batch, budget, size)
        if isinstance(answer, (float, np.floating)) and float(answer).is_integer():
            answer = int(answer)
        if (small and isinstance(answer, (int, np.integer)) and not isinstance(answer, bool)
                and _measured_max_tokens(layers, d, heads, batch, budget, int(answer))):  # fmt: skip
            continue  # a real cache filled to the answer fits, and one more token does not
        per_token = 2 * layers * d * batch * size  # bytes: K and V, every layer, every sequence
        expected = budget // per_token  # what the told too low / too high is measured against
        mistakes: dict[int, str] = {}
        for value, hint in (
            (budget // (per_token // 2), "count the keys AND the values: two tensors per layer."),
            (budget // (per_token // layers), "every layer keeps its own keys and values."),
            (budget // (per_token // batch), "each sequence of the batch has its own cache."),
            (budget // (per_token // size), "the budget is in bytes: each number takes "
                                            f"{size} of them here."),
            (budget // (per_token * 8), "bytes_per_number is already in bytes, not bits."),
            (budget // (per_token * heads), f"the heads split d_model into {heads} slices of "
                                            f"{d // heads}; they do not multiply it."),
            (budget // (per_token // heads), f"every head stores keys and values of d_head = "
                                             f"{d // heads} numbers per token: {heads} heads x "
                                             f"{d // heads} = all of d_model."),
            (-(-budget // per_token), "a token whose keys and values do not fit whole does not "
                                      "fit: round down."),
            (round(budget / per_token), "a token whose keys and values do not fit whole does not "
                                        "fit: round down."),
        ):  # fmt: skip
            if value != expected and hint not in mistakes.get(value, ""):
                mistakes[value] = f"{mistakes[value]} Or: {hint}" if value in mistakes else hint
        what = (f"tokens per sequence whose KV cache fits in {budget:,} bytes: {layers} layers, "
                f"d_model {d}, {heads} heads, {batch} sequences, {size} bytes per number"
                + (" (filled and measured on a real cache)" if small else ""))  # fmt: skip
        check_prediction(ex, answer, expected, what=what,
                         too_low="more tokens fit: your count of the bytes one token costs holds "
                         "something the cache does not keep. Follow one new token through the "
                         "model: what does it leave behind in the cache, and where?",
                         too_high="that many do not fit: your count of the bytes one token costs "
                         "leaves something out. Follow one new token through the model: what "
                         "does it leave behind in the cache, and where?", hints=mistakes,
                         not_int="return a Python int: a whole number of tokens.")  # fmt: skip
    _check_heads_prediction(ex, heads_change_count)
    passed(ex, "how long a context fits in a KV cache, predicted and confirmed on real caches")


# The probes the check shows as evidence when a diagnosis is wrong: a few (probs, p) on which the
# five filters of exercise 11.4 differ.
_PROBES = (
    (np.array([0.1, 0.6, 0.3]), 0.5),
    (np.array([0.5, 0.2, 0.2, 0.1]), 0.9),
    (np.array([0.05, 0.15, 0.8]), 0.3),
    (np.array([0.4, 0.35, 0.25]), 0.7),
)


def _evidence(fault: str, said: str) -> str:
    """A probe on which the sampler (``fault``) and the one diagnosed (``said``) differ."""
    for probs, p in _PROBES:
        real, claimed = sampler_keeps(fault, probs, p), sampler_keeps(said, probs, p)
        if not np.array_equal(real, claimed):
            return (f"try probs = {probs.tolist()}, p = {p}: a sampler that is {said!r} keeps "
                    f"{claimed.tolist()}, this one keeps {real.tolist()}.")  # fmt: skip
    return "call it on a few probs and p of your own and compare."


def check_diagnose_sampler(student_fn, *, seed: int = 0) -> None:
    """Exercise 11.4 (diagnose): ``diagnose(sampler) -> fault``, the fault of a top-p filter
    found by calling it: one of ``SAMPLER_FAULTS`` ("ok", "drops_crossing", "ascending",
    "ignores_p", "unsorted"). Seed 0 gives the five in this order; other seeds five drawn at
    random (repeats allowed, so that elimination does not work). A wrong diagnosis is shown a
    probe on which the sampler and the diagnosed fault keep different tokens, not the answer."""
    check_diagnosis("11.4", student_fn, seed=seed, faults=SAMPLER_FAULTS,
                    factory="course_lib.checks.given:mystery_sampler", salt=114, noun="sampler",
                    evidence=_evidence, title="a broken sampler diagnosed from its outputs")  # fmt: skip


# --- 11.5: predict, then measure: how many different tokens n draws give -----------------------


def _tempered(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def _distinct(probs: np.ndarray, n: int) -> float:
    return float((1 - (1 - probs) ** n).sum())


def _renormalised(probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.where(keep, probs, 0.0) / probs[keep].sum()


def _sampler_probs(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """What the lecture's sampler draws from: softmax(logits / T), then the top-p nucleus."""
    probs = _tempered(logits, temperature)
    return _renormalised(probs, _keep_reference(probs, top_p))


def _distinct_values(logits: np.ndarray, temperature: float, top_p: float, n: int) -> dict:
    """The expected number of different tokens in ``n`` draws of ``next_token(logits,
    temperature, top_p=top_p)``, and what the usual mistakes give, each with its hint."""
    probs = _tempered(logits, temperature)
    keep = _keep_reference(probs, top_p)
    q = _renormalised(probs, keep)
    early = _keep_reference(_tempered(logits, 1.0), top_p)  # the nucleus of the T = 1 probs
    dropped = sampler_keeps("drops_crossing", probs, top_p)
    values = {
        "right": _distinct(q, n),
        "the nucleus was taken before the temperature: the sampler divides the scores by T "
        "first, then keeps the smallest set of the NEW probabilities that reaches p":
        _distinct(_renormalised(probs, early), n),
        "the probabilities of the kept tokens must be rescaled to add up to 1 again before the "
        "draw (softmax of the filtered scores)": _distinct(np.where(keep, probs, 0.0), n),
        "that is how many tokens CAN come out (the nucleus); in n draws the unlikely ones often "
        "do not": float(keep.sum()),
        "a token drawn twice counts once: n draws do not reach n x p of a token's chances":
        float(np.minimum(1.0, n * q).sum()),
        "the temperature divides the scores (scores / T); it does not multiply them":
        _distinct(_sampler_probs(logits, 1 / temperature, top_p), n),
        "the temperature changes the probabilities before anything is drawn: softmax(scores / T)":
        _distinct(_sampler_probs(logits, 1.0, top_p), n),
        "top-p keeps the token whose probability makes the total reach p, too (exercise 11.2)":
        _distinct(_renormalised(probs, dropped), n) if dropped.any() else 0.0,
        "that is the expected number of kept tokens that never come out; the question is how "
        "many do": float(((1 - q) ** n)[keep].sum()),
    }  # fmt: skip
    return values


def _distinct_cases(seed: int) -> list[tuple[np.ndarray, float, float, int]]:
    """(logits, temperature, top_p, n): the notebook's two positions at three temperatures, with
    and without top-p (seed 0), or hidden scores, temperatures, p and n; never a p within 1e-6
    of a partial sum of the sorted probabilities (float rounding must not decide the nucleus)."""
    if seed == 0:
        return [(np.asarray(logits, dtype=float), t, p, 10)
                for logits in SAMPLING_POSITIONS.values() for t in (0.5, 1.0, 2.0)
                for p in (1.0, 0.9)]  # fmt: skip
    rng = hidden_rng(seed, 115)
    cases = []
    while len(cases) < 6:
        logits = rng.normal(size=int(rng.integers(4, 30))) * rng.uniform(0.5, 3.0)
        t = float(rng.choice([0.5, 1.0, 2.0])) if len(cases) < 2 else float(rng.uniform(0.3, 2.5))
        p = 1.0 if len(cases) % 2 == 0 else float(rng.uniform(0.5, 0.98))
        n = int(rng.integers(2, 60))
        if p == 1.0 or (_boundary_safe(_tempered(logits, t), p)
                        and _boundary_safe(_tempered(logits, 1.0), p)):  # fmt: skip
            cases.append((logits, t, p, n))
    return cases


def check_distinct_tokens(student_fn, *, seed: int = 0) -> None:
    """Exercise 11.5 (predict, then measure): ``distinct_tokens(logits, temperature, top_p, n)
    -> float``, the expected number of DIFFERENT tokens among ``n`` independent draws of the
    lecture's sampler (``softmax(logits / temperature)``, then top-p) from one position's
    next-token scores ``logits (V,)``; computed, not simulated (to 1e-4). Seed 0 asks about the
    notebook's two positions; other seeds about hidden scores, temperatures, p and n."""
    ex = "11.5"
    for logits, t, p, n in _distinct_cases(seed):
        got = call_student(ex, student_fn, logits.copy(), t, p, n)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        try:
            if isinstance(got, (str, bytes)):
                raise TypeError
            value = float(got)
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"expected one number (an expected count), got "
                                f"{type(got).__name__}.", "return a float.") from None  # fmt: skip
        values = _distinct_values(logits, t, p, n)
        expected = values.pop("right")
        if np.isclose(value, expected, rtol=1e-4, atol=1e-4):
            continue
        where = (f"{len(logits)} scores, T = {t:g}, top_p = {p:g}, n = {n} draws: your "
                 f"{value:.4f} is too {'low' if value < expected else 'high'}")  # fmt: skip
        hint = next((h for h, v in values.items()
                     if np.isclose(value, v, rtol=1e-4, atol=1e-4)
                     and not np.isclose(v, expected, rtol=1e-4, atol=1e-4)),
                    "work it out one token at a time: how likely is that token to come out at "
                    "least once in n draws? (The check wants the expected value, computed, not "
                    "an estimate from samples.)")  # fmt: skip
        raise ExerciseError(ex, where + ".", hint)
    passed(ex, "the variety of n sampled tokens predicted from temperature and top-p")
