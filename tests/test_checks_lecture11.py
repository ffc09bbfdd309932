"""Lecture 11 checks: pass the reference and a differently written answer, fail the usual
mistakes with the hint that names them, fail the stub."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib.checks import ExerciseError
from course_lib.checks.lecture11 import (
    check_diagnose_sampler,
    check_distinct_tokens,
    check_max_cached_tokens,
    check_next_token_loss,
    check_top_p_keep,
)
from tests._exercise_stub import STUB_MESSAGE, stub

# ----------------------------------------------------------------------------------- 11.1


def loss_reference(logits, ids, pad_id):  # the solution: cross_entropy's ignore_index
    v = logits.shape[-1]
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, v), ids[:, 1:].reshape(-1), ignore_index=pad_id
    ).item()


def loss_masked_mean(logits, ids, pad_id):  # written differently: a mask, float32, a 0-d tensor
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, ids[:, 1:, None])[..., 0]
    counts = (ids[:, 1:] != pad_id).float()
    return (nll * counts).sum() / counts.sum()


def loss_by_hand(logits, ids, pad_id):  # written differently: numpy, an explicit loop
    lg, ids = logits.numpy().astype(np.float64), ids.numpy()
    total, count = 0.0, 0
    for b in range(lg.shape[0]):
        for t in range(lg.shape[1] - 1):
            if ids[b, t + 1] == pad_id:
                continue
            row = lg[b, t] - lg[b, t].max()
            total -= row[ids[b, t + 1]] - np.log(np.exp(row).sum())
            count += 1
    return total / count


def _ce(logits, targets, pad_id=None, reduction="mean"):
    v = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, v), targets.reshape(-1), reduction=reduction,
                           ignore_index=-100 if pad_id is None else pad_id)  # fmt: skip


def loss_pad_counted(logits, ids, pad_id):  # the old exercise's answer: padding targets count
    return _ce(logits[:, :-1], ids[:, 1:])


def loss_masked_by_input(logits, ids, pad_id):
    keep = ids[:, :-1] != pad_id
    nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    return nll[keep].mean()


def loss_over_all_positions(logits, ids, pad_id):
    return _ce(logits[:, :-1], ids[:, 1:], pad_id, "sum") / (ids.shape[0] * (ids.shape[1] - 1))


def loss_mean_of_means(logits, ids, pad_id):
    nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")
    keep = ids[:, 1:] != pad_id
    return torch.stack([nll[b][keep[b]].mean() for b in range(len(ids)) if keep[b].any()]).mean()


def loss_unshifted(logits, ids, pad_id):
    return _ce(logits, ids, pad_id)


def loss_wrong_way(logits, ids, pad_id):
    return _ce(logits[:, 1:], ids[:, :-1], pad_id)


def loss_summed(logits, ids, pad_id):
    return _ce(logits[:, :-1], ids[:, 1:], pad_id, "sum")


def loss_no_softmax(logits, ids, pad_id):
    keep = ids[:, 1:] != pad_id
    return -logits[:, :-1].gather(-1, ids[:, 1:, None])[..., 0][keep].mean()


def loss_probability(logits, ids, pad_id):
    keep = ids[:, 1:] != pad_id
    p = torch.softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
    return -p[keep].mean()


def loss_as_list(logits, ids, pad_id):
    return [1.0, 2.0]


def loss_in_place(logits, ids, pad_id):  # the review's: shifts the caller's ids in place
    ids[:, :-1] = ids[:, 1:].clone()
    return _ce(logits[:, :-1], ids[:, :-1], pad_id)


def loss_copy_then_change(logits, ids, pad_id):  # changes a copy: right
    targets = ids.clone()
    targets[:, :-1] = targets[:, 1:].clone()
    return _ce(logits[:, :-1], targets[:, :-1], pad_id)


@pytest.mark.parametrize("seed", [0, 3, 11])
@pytest.mark.parametrize(
    "fn", [loss_reference, loss_masked_mean, loss_by_hand, loss_copy_then_change]
)
def test_next_token_loss_passes_right_answers(fn, seed, capsys):
    check_next_token_loss(fn, seed=seed)
    assert capsys.readouterr().out.count("Exercise 11.1 passed") == 1


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (loss_pad_counted, "target is padding were counted"),
        (loss_masked_by_input, "INPUT token is padding"),
        (loss_over_all_positions, "not by all B"),
        (loss_mean_of_means, "mean of each sequence's mean"),
        (loss_unshifted, "not shifted"),
        (loss_wrong_way, "wrong way"),
        (loss_summed, "sum over the predictions"),
        (loss_no_softmax, "log_softmax"),
        (loss_probability, "take -log"),
        (loss_as_list, "expected one number"),
        (loss_in_place, "changes the caller's array in place"),
        (stub, STUB_MESSAGE),
    ],
)
def test_next_token_loss_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_next_token_loss(fn)


# ----------------------------------------------------------------------------------- 11.2


def keep_reference(probs, p):
    order = np.argsort(-probs)
    before = np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[before < p]] = True
    return keep


def keep_loop(probs, p):  # written differently: a loop adding tokens until p is reached
    keep, total = [0] * len(probs), 0.0
    for i in sorted(range(len(probs)), key=lambda i: -probs[i]):
        if total >= p:
            break
        keep[i], total = 1, total + probs[i]
    return np.array(keep)


def keep_strictly_below(probs, p):  # drops the token that crosses p
    order = np.argsort(-probs)
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[np.cumsum(probs[order]) <= p]] = True
    return keep


def keep_unsorted(probs, p):
    before = np.cumsum(probs) - probs
    return before < p


def keep_sorted_order(probs, p):
    order = np.argsort(-probs)
    before = np.cumsum(probs[order]) - probs[order]
    return before < p


def keep_too_many(probs, p):
    keep = keep_reference(probs, p)
    order = np.argsort(-probs)
    keep[order[: keep.sum() + 1]] = True
    return keep


def keep_while_before_at_most_p(probs, p):  # the review's: keeps one too many at exact p
    order = np.argsort(-probs)
    before = np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[before <= p]] = True
    return keep


def keep_every_tie(probs, p):  # the review's: keeps every token tied with the last one kept
    keep = keep_reference(probs, p)
    return keep | (probs == probs[keep].min())


def keep_ties_broken_last(probs, p):  # a tie broken the other way: right
    order = np.lexsort((-np.arange(len(probs)), -probs))
    before = np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[before < p]] = True
    return keep


def keep_indices(probs, p):
    return np.flatnonzero(keep_reference(probs, p))


@pytest.mark.parametrize("seed", [0, 5])
def test_top_p_keep_passes_right_answers(capsys, seed):
    check_top_p_keep(keep_reference, seed=seed)
    check_top_p_keep(keep_loop, seed=seed)
    check_top_p_keep(keep_ties_broken_last, seed=seed)
    assert capsys.readouterr().out.count("Exercise 11.2 passed") == 3


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (keep_strictly_below, "keep the token that makes the total reach p"),
        (keep_unsorted, "MOST probable"),
        (keep_sorted_order, "original order"),
        (keep_too_many, "smallest set"),
        (keep_while_before_at_most_p, "reach p exactly before your last one"),
        (keep_every_tie, "tie with the last one"),
        (keep_indices, "boolean array"),
        (stub, STUB_MESSAGE),
    ],
)
def test_top_p_keep_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_top_p_keep(fn)


# ----------------------------------------------------------------------------------- 11.3

RIGHT = 2**30 // (2 * 24 * 1024 * 8 * 2)  # GPT-2 medium, 8 sequences, float16, 1 GiB: 1365


def _tokens(num_layers, d_model, num_heads, batch, budget_bytes, bytes_per_number):  # solution
    return budget_bytes // (2 * num_layers * d_model * batch * bytes_per_number)


def _tokens_as_float(num_layers, d_model, num_heads, batch, budget_bytes, bytes_per_number):
    return float(math.floor(budget_bytes / (2 * num_layers * d_model * batch * bytes_per_number)))


def _tokens_per_head(num_layers, d_model, num_heads, batch, budget_bytes, bytes_per_number):
    per_token = 2 * num_layers * batch * num_heads * (d_model // num_heads) * bytes_per_number
    return np.int64(budget_bytes) // np.int64(per_token)  # written differently: numpy ints


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
@pytest.mark.parametrize("fn", [_tokens, _tokens_as_float, _tokens_per_head])
def test_max_cached_tokens_passes(fn, seed, capsys):
    check_max_cached_tokens(fn, False, seed=seed)
    check_max_cached_tokens(fn, np.bool_(False), seed=seed)
    assert capsys.readouterr().out.count("Exercise 11.3 passed") == 2


def test_max_cached_tokens_small_models_are_filled_and_measured_on_real_caches():
    """The formula agrees with real caches: filled to its answer they fit, one more does not
    (bytes = numel x 4 of a float32 GPT, worked by hand for the notebook's model)."""
    from course_lib.checks.lecture11 import _filled_cache_bytes, _small_models

    for seed in (0, 1, 7, 123, 999):
        for model in _small_models(seed):
            t = _tokens(*model)
            assert (
                _filled_cache_bytes(*model[:4], t)
                <= model[4]
                < _filled_cache_bytes(*model[:4], t + 1)
            ), (seed, model)
    assert _tokens(2, 64, 8, 3, 40_000, 4) == 13  # 2 x 2 x 64 x 3 x 4 = 3,072 bytes a token
    assert _filled_cache_bytes(2, 64, 8, 3, 13) == 39_936 and RIGHT == 1365


@pytest.mark.parametrize(
    ("predicted", "hint"),
    [(True, "did not hold"), (None, "expected your prediction"), ("no", "True or False")],
)
def test_max_cached_tokens_grades_the_heads_prediction_wrong(predicted, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_max_cached_tokens(_tokens, predicted)
    assert "39936" not in str(err.value)


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda L, d, h, b, B, s: B // (L * d * b * s), "keys AND the values"),
        (lambda L, d, h, b, B, s: B // (2 * d * b * s), "every layer"),
        (lambda L, d, h, b, B, s: B // (2 * L * d * s), "each sequence"),
        (lambda L, d, h, b, B, s: B // (2 * L * d * b), "the budget is in bytes"),
        (lambda L, d, h, b, B, s: B // (16 * L * d * b * s), "not bits"),
        (lambda L, d, h, b, B, s: B // (2 * L * d * b * s * h), "do not multiply"),
        (lambda L, d, h, b, B, s: B // (2 * L * (d // h) * b * s), "all of d_model"),
        (lambda L, d, h, b, B, s: -(-B // (2 * L * d * b * s)), "round down"),
        (lambda L, d, h, b, B, s: _tokens(L, d, h, b, B, s) + 1, "round down|that many do not"),
        (lambda L, d, h, b, B, s: _tokens(L, d, h, b, B, s) - 1, "more tokens fit"),
        (lambda L, d, h, b, B, s: B / (2 * L * d * b * s), "a whole number of tokens"),
        (lambda L, d, h, b, B, s: RIGHT, "too high"),  # GPT-2 medium's: not the small model's
        (lambda L, d, h, b, B, s: str(RIGHT), "expected an integer"),
        (lambda L, d, h, b, B, s: None, "expected a value, got None"),
    ],
)
def test_max_cached_tokens_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_max_cached_tokens(fn, False)
    assert not re.search(r"expected \d", str(err.value))  # too low / too high, never the answer
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_max_cached_tokens(stub, False)


# --- 11.4 (diagnose a broken sampler from its outputs) -----------------------------------------


def diagnose_one_probe(keep):  # one probe on which the five filters all differ (worked by hand)
    table = {(0, 1, 0): "ok", (0, 0, 0): "drops_crossing", (1, 1, 1): "ascending",
             (0, 1, 1): "ignores_p", (1, 1, 0): "unsorted"}  # fmt: skip
    return table[tuple(int(k) for k in keep(np.array([0.1, 0.6, 0.3]), 0.5))]


def diagnose_by_questions(keep):  # written differently: one question per fault
    if keep(np.array([0.5, 0.3, 0.2]), 0.01).sum() == 2:
        return "ignores_p"  # a tiny p still keeps two tokens
    if not keep(np.array([0.9, 0.1]), 0.5).any():
        return "drops_crossing"  # the one token that crosses p is dropped
    m = keep(np.array([0.2, 0.7, 0.1]), 0.25)
    return {(False, True, False): "ok", (True, False, True): "ascending"}.get(
        tuple(bool(x) for x in m), "unsorted"
    )


def test_the_five_filters_keep_what_the_exercise_says():
    from course_lib.checks.given import sampler_keeps

    probs = np.array([0.1, 0.6, 0.3])  # sorted down: 0.6, 0.3, 0.1; p = 0.5
    expected = {"ok": [0, 1, 0], "drops_crossing": [0, 0, 0], "ascending": [1, 1, 1],
                "ignores_p": [0, 1, 1], "unsorted": [1, 1, 0]}  # fmt: skip
    for fault, mask in expected.items():
        assert sampler_keeps(fault, probs, 0.5).astype(int).tolist() == mask, fault
    assert sampler_keeps("ok", probs, 0.5).tolist() == top_p_keep_reference(probs, 0.5)


def top_p_keep_reference(probs, p):  # the lecture's top_p_filter, as a mask
    import torch

    from course_lib.models.generation import top_p_filter

    logits = torch.log(torch.tensor(probs))[None]
    return torch.isfinite(top_p_filter(logits, p))[0].tolist()


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
@pytest.mark.parametrize("fn", [diagnose_one_probe, diagnose_by_questions])
def test_diagnose_sampler_passes_right_answers(fn, seed, capsys):
    check_diagnose_sampler(fn, seed=seed)
    assert "✅ Exercise 11.4 passed" in capsys.readouterr().out


def diagnose_ascending_missed(keep):  # a probe too easy: ascending and unsorted look alike
    m = keep(np.array([0.1, 0.9]), 0.5)
    if keep(np.array([0.5, 0.3, 0.2]), 0.01).sum() == 2:
        return "ignores_p"
    if not m.any():
        return "drops_crossing"
    return "unsorted" if m[0] else "ok"


@pytest.mark.parametrize(
    ("fn", "hint"),
    [(lambda keep: "ok", "a sampler that is 'ok' keeps"),
     (diagnose_ascending_missed, "a sampler that is 'unsorted' keeps"),
     (lambda keep: "sorted", "expected one of ok, drops_crossing"),
     (lambda keep: 3, "return the name of the fault")],
)  # fmt: skip
def test_diagnose_sampler_wrong_diagnoses_get_evidence_not_the_answer(fn, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_diagnose_sampler(fn)
    assert "this one keeps" in str(err.value) or "expected one of" in str(err.value)


def test_diagnose_sampler_gets_a_sampler_object_not_its_name():
    from course_lib.checks.given import mystery_sampler

    sampler = mystery_sampler("unsorted")
    assert "unsorted" not in repr(sampler) and sampler([0.5, 0.5], 0.4).tolist() == [True, False]
    with pytest.raises(ValueError, match="fault must be one of"):
        mystery_sampler("random")


# --- 11.5 (predict, then measure: different tokens in n draws) ---------------------------------


def distinct_reference(logits, temperature, top_p, n):  # the solution: numpy, float64
    z = logits / temperature
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    order = np.argsort(-probs)
    before = np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[before < top_p]] = True
    q = np.where(keep, probs, 0.0) / probs[keep].sum()
    return float((1 - (1 - q) ** n).sum())


def distinct_torch_float32(logits, temperature, top_p, n):  # written differently: torch, float32
    import torch

    from course_lib.models.generation import top_p_filter

    scores = top_p_filter(torch.tensor(logits, dtype=torch.float32)[None] / temperature, top_p)
    never = (1 - torch.softmax(scores, dim=-1)) ** n  # chance a token never comes out
    return (1 - never).sum()  # a 0-d tensor


def distinct_loop(logits, temperature, top_p, n):  # written differently: a loop, 1 - P(missed)
    probs = [np.exp(x / temperature) for x in logits]
    probs = [x / sum(probs) for x in probs]
    kept, total = [], 0.0
    for i in sorted(range(len(probs)), key=lambda i: -probs[i]):
        if total >= top_p:
            break
        kept.append(i)
        total += probs[i]
    mass = sum(probs[i] for i in kept)
    return sum(1 - (1 - probs[i] / mass) ** n for i in kept)


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
@pytest.mark.parametrize("fn", [distinct_reference, distinct_torch_float32, distinct_loop])
def test_distinct_tokens_passes_right_answers(fn, seed, capsys):
    check_distinct_tokens(fn, seed=seed)
    assert "Exercise 11.5 passed" in capsys.readouterr().out


def _probs(logits, temperature):
    e = np.exp(logits / temperature - (logits / temperature).max())
    return e / e.sum()


def _nucleus(probs, top_p, strict=False):
    order = np.argsort(-probs)
    total = np.cumsum(probs[order]) if strict else np.cumsum(probs[order]) - probs[order]
    keep = np.zeros(len(probs), dtype=bool)
    keep[order[total <= top_p if strict else total < top_p]] = True
    return keep


def distinct_filter_first(logits, temperature, top_p, n):
    keep = _nucleus(_probs(logits, 1.0), top_p)
    probs = _probs(logits, temperature)
    q = np.where(keep, probs, 0) / probs[keep].sum()
    return float((1 - (1 - q) ** n).sum())


def distinct_not_renormalised(logits, temperature, top_p, n):
    probs = _probs(logits, temperature)
    q = np.where(_nucleus(probs, top_p), probs, 0)
    return float((1 - (1 - q) ** n).sum())


def distinct_nucleus_size(logits, temperature, top_p, n):
    return int(_nucleus(_probs(logits, temperature), top_p).sum())


def distinct_n_times_p(logits, temperature, top_p, n):
    probs = _probs(logits, temperature)
    keep = _nucleus(probs, top_p)
    q = np.where(keep, probs, 0) / probs[keep].sum()
    return float(np.minimum(1, n * q).sum())


def distinct_times_t(logits, temperature, top_p, n):
    return distinct_reference(logits, 1 / temperature, top_p, n)


def distinct_no_temperature(logits, temperature, top_p, n):
    return distinct_reference(logits, 1.0, top_p, n)


def distinct_never_drawn(logits, temperature, top_p, n):
    probs = _probs(logits, temperature)
    keep = _nucleus(probs, top_p)
    q = probs[keep] / probs[keep].sum()
    return float(((1 - q) ** n).sum())


def distinct_drops_crossing(logits, temperature, top_p, n):
    probs = _probs(logits, temperature)
    keep = _nucleus(probs, top_p, strict=True)
    if not keep.any():
        return 0.0
    q = np.where(keep, probs, 0) / probs[keep].sum()
    return float((1 - (1 - q) ** n).sum())


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (distinct_filter_first, "before the temperature"),
        (distinct_not_renormalised, "rescaled to add up to 1"),
        (distinct_nucleus_size, "how many tokens CAN come out"),
        (distinct_n_times_p, "a token drawn twice counts once"),
        (distinct_times_t, "does not multiply"),
        (distinct_no_temperature, "softmax\\(scores / T\\)"),
        (distinct_never_drawn, "never come out"),
        (distinct_drops_crossing, "reach p, too"),
        (lambda *a: 3.0, "one token at a time"),
        (lambda *a: "4", "expected one number"),
    ],
)
def test_distinct_tokens_names_the_mistake(fn, hint):
    with pytest.raises(ExerciseError, match=hint) as err:
        check_distinct_tokens(fn)
    assert not re.search(r"expected \d", str(err.value))  # too low / too high, never the value
    with pytest.raises(ExerciseError, match=STUB_MESSAGE):
        check_distinct_tokens(stub)
