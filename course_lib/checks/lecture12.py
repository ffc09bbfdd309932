"""Checks for the exercises of lecture 12 (fine-tuning: pooling, the head's loss, a sweep,
comparing two models on the same sentences)."""

from __future__ import annotations

import numpy as np

from . import ExerciseError, call_student, check_array, passed
from .given import shipped_sweep, shipped_test_predictions

__all__ = ["check_mean_pool", "check_head_loss", "check_best_setting", "check_paired_counts",
           "shipped_test_predictions"]  # fmt: skip

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "12.1": (
        "course_lib.models.classifier.mean_pool",
        "course_lib.models.classifier.segment_mean_pool",
    ),
    "12.2": (),
    "12.3": (),
    "12.4": (),
}


def _padded_batch(rng: np.random.Generator):
    batch, n, h = 4, 7, 5
    hidden = rng.normal(size=(batch, n, h))
    lengths = np.array([7, 4, 1, 5])
    mask = (np.arange(n)[None, :] < lengths[:, None]).astype(np.int64)
    hidden[mask == 0] += 50.0  # padded vectors are garbage: they must not count
    return hidden, mask


def check_mean_pool(student_fn, *, seed: int = 0) -> None:
    """Exercise 12.1: ``mean_pool(hidden (b, n, H), mask (b, n)) -> (b, H)`` over real tokens."""
    ex = "12.1"
    hidden, mask = _padded_batch(np.random.default_rng(seed))
    got = call_student(ex, student_fn, hidden.copy(), mask.copy())
    m = mask[..., None].astype(float)
    expected = (hidden * m).sum(1) / m.sum(1)
    got_arr = np.asarray(got, dtype=float) if not isinstance(got, (str, bytes)) else None
    if got_arr is not None and got_arr.shape == expected.shape:
        if np.allclose(got_arr, hidden.mean(1)):
            raise ExerciseError(
                ex, "you averaged over every position, padding included.",
                "multiply by the mask before summing: (hidden * mask[..., None]).sum(1).",
            )  # fmt: skip
        if np.allclose(got_arr, (hidden * m).sum(1) / hidden.shape[1]):
            raise ExerciseError(
                ex, "the padding is left out of the sum but not out of the count.",
                "divide by the number of real tokens, mask.sum(1)[:, None], not by n.",
            )  # fmt: skip
        if np.allclose(got_arr, hidden[:, 0]):
            raise ExerciseError(
                ex, "you returned the [CLS] vector (position 0), not the mean.",
                "average the vectors of all real tokens.",
            )  # fmt: skip
    check_array(ex, got, expected, what="mean-pooled vectors (batch, H)", rtol=1e-5, atol=1e-8)
    passed(ex, "mean pooling leaves the padding out")


def check_head_loss(student_fn, *, seed: int = 0) -> None:
    """Exercise 12.2: ``head_loss(cls (b, H), weight (C, H), bias (C,), labels (b,)) -> float``."""
    ex = "12.2"
    rng = np.random.default_rng(seed)
    b, h, c = 6, 8, 5
    cls = rng.normal(size=(b, h))
    weight, bias = rng.normal(size=(c, h)), rng.normal(size=c)
    labels = rng.integers(0, c, size=b)
    labels[0] = (labels[1] + 1) % c  # at least two classes

    def ce(scores):
        z = scores - scores.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        return -logp[np.arange(b), labels]

    scores = cls @ weight.T + bias
    expected = float(ce(scores).mean())
    got = call_student(ex, student_fn, cls.copy(), weight.copy(), bias.copy(), labels.copy())
    try:
        value = float(np.asarray(got, dtype=float))
    except (TypeError, ValueError):
        raise ExerciseError(
            ex, f"expected one number (the mean loss), got {type(got).__name__}.",
            "return a float: the mean over the batch of -log p(true class).",
        ) from None  # fmt: skip
    wrong = {
        float(ce(scores).sum()): "you summed the losses; BERT's loss is the *mean* over the batch.",
        float(ce(cls @ weight.T).mean()): "the bias is missing: scores = cls @ weight.T + bias.",
        float(ce(np.exp(scores) / np.exp(scores).sum(1, keepdims=True)).mean()): (
            "softmax was applied twice: cross-entropy takes the raw scores (logits)."
        ),
        float(-(scores[np.arange(b), labels]).mean()): (
            "that is minus the raw score of the true class; take log-softmax first."
        ),
    }
    for w, hint in wrong.items():
        if np.isclose(value, w, rtol=1e-6) and not np.isclose(w, expected, rtol=1e-6):
            raise ExerciseError(ex, f"expected {expected:.6f}, got {value:.6f}.", hint)
    if not np.isclose(value, expected, rtol=1e-6, atol=1e-9):
        raise ExerciseError(
            ex, f"expected {expected:.6f}, got {value:.6f}.",
            "scores = cls @ weight.T + bias; loss = mean over rows of "
            "logsumexp(scores) - scores[true class].",
        )  # fmt: skip
    _check_large_scores(ex, student_fn, seed)
    passed(ex, "the classification head's cross-entropy")


def _check_large_scores(ex: str, student_fn, seed: int) -> None:
    """Scores of about +-1000 (one row high, one row low): exp overflows (or, with the global
    maximum subtracted, a low row underflows to log 0) unless each row's maximum is subtracted."""
    rng = np.random.default_rng((122, seed))
    b, h, c = 4, 8, 5
    weight = np.hstack([np.eye(c), np.zeros((c, h - c))])  # scores = the first c features
    cls = rng.normal(size=(b, h))
    cls[0, :c] = [1000.0, 998.0, 990.0, 0.0, -5.0]
    cls[1, :c] = [-1000.0, -1001.0, -1003.0, -999.0, -1010.0]
    bias, labels = np.zeros(c), rng.integers(0, c, size=b)
    scores = cls @ weight.T + bias
    z = scores - scores.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    expected = float(-logp[np.arange(b), labels].mean())
    got = call_student(ex, student_fn, cls.copy(), weight.copy(), bias.copy(), labels.copy())
    try:
        value = float(np.asarray(got, dtype=float))
    except (TypeError, ValueError):
        raise ExerciseError(
            ex, f"expected one number (the mean loss), got {type(got).__name__}."
        ) from None
    if np.isclose(value, expected, rtol=1e-6, atol=1e-9):
        return
    hint = ("scores of about +-1000 overflow exp (inf / inf = nan): subtract each row's maximum "
            "before exp: log-softmax(s) = s - max - log(sum(exp(s - max))).")  # fmt: skip
    if np.isinf(value):
        hint = ("subtract each ROW's maximum (axis=1, keepdims=True): with the maximum of the "
                "whole batch, a row whose scores are all far lower underflows to log(0).")  # fmt: skip
    raise ExerciseError(
        ex,
        f"for a batch with scores of about +1000 (row 0) and -1000 (row 1): expected "
        f"{expected:.6f}, got {value}.",
        hint,
    )


def _random_sweep(rng: np.random.Generator) -> list[dict]:
    rows = []
    for lr in (1e-5, 3e-5, 1e-4, 3e-4):
        for epoch in (1, 2, 3):
            rows.append({"lr": lr, "epoch": epoch, "validation": float(rng.uniform(0.5, 0.8)),
                         "loss": float(rng.uniform(0.1, 1.5))})  # fmt: skip
    return rows


def check_best_setting(student_fn, *, seed: int = 0) -> None:
    """Exercise 12.3: ``best_setting(sweep) -> (lr, epoch)`` of the best validation accuracy.

    Seed 0 uses the sweep shipped with the course; other seeds a random sweep.
    """
    ex = "12.3"
    sweep = shipped_sweep() if seed == 0 else _random_sweep(np.random.default_rng(seed))
    answer = call_student(ex, student_fn, [dict(r) for r in sweep])
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise ExerciseError(
            ex, f"expected a pair (lr, epoch), got {answer!r}.",
            "return a tuple like (0.001, 2): the row's 'lr' and 'epoch'.",
        )  # fmt: skip
    try:
        lr, epoch = float(answer[0]), int(answer[1])
    except (TypeError, ValueError):
        raise ExerciseError(
            ex, f"lr must be a number and epoch an integer, got {answer!r}."
        ) from None
    best = max(r["validation"] for r in sweep)
    chosen = [r for r in sweep if np.isclose(lr, r["lr"]) and epoch == r["epoch"]]
    if not chosen:
        raise ExerciseError(
            ex, f"({lr}, {epoch}) is not a row of the sweep.",
            "return the 'lr' and the 'epoch' of one row of the sweep.",
        )  # fmt: skip
    if chosen[0]["validation"] == best:
        passed(ex, f"best validation accuracy {best:.3f}")
        return
    hint = "pick the row with the largest 'validation' value."
    if chosen[0]["loss"] == min(r["loss"] for r in sweep):
        hint = "the lowest training loss is not the best model: choose by validation accuracy."
    elif epoch == max(r["epoch"] for r in sweep):
        hint = "the last epoch is not always the best: choose by validation accuracy."
    raise ExerciseError(
        ex,
        f"validation accuracy of ({lr}, {epoch}) is {chosen[0]['validation']:.3f}; "
        f"another row reaches {best:.3f}.",
        hint,
    )


def check_paired_counts(student_fn, *, seed: int = 0) -> None:
    """Exercise 12.4: ``paired_counts(pred_a, pred_b, labels) -> (a_only, b_only)``: how many
    sentences model A gets right and B wrong, and the other way round."""
    ex = "12.4"
    rng = np.random.default_rng(seed)
    n = 300
    labels = rng.integers(0, 6, size=n)
    pred_a = np.where(rng.random(n) < 0.7, labels, rng.integers(0, 6, size=n))
    pred_b = np.where(rng.random(n) < 0.5, labels, rng.integers(0, 6, size=n))
    a_right, b_right = pred_a == labels, pred_b == labels
    expected = (int((a_right & ~b_right).sum()), int((~a_right & b_right).sum()))
    got = call_student(ex, student_fn, pred_a.copy(), pred_b.copy(), labels.copy())
    try:
        pair = tuple(int(v) for v in got)
        ok_shape = len(pair) == 2 and all(float(v) == int(v) for v in got)
    except (TypeError, ValueError):
        ok_shape = False
    if not ok_shape:
        raise ExerciseError(
            ex, f"expected a pair of counts (a_only, b_only), got {got!r:.80}.",
            "return two integers, e.g. (int(...sum()), int(...sum())).",
        )  # fmt: skip
    if pair == expected:
        passed(ex, f"A alone right on {expected[0]}, B alone on {expected[1]}")
        return
    disagree = int((pred_a != pred_b).sum())
    mistakes = {
        expected[::-1]: "the two counts are swapped: first A right and B wrong, then B right and "
        "A wrong.",
        (int(a_right.sum()), int(b_right.sum())): "those are how often each model is right; count "
        "only the sentences where one is right and the other wrong.",
        (disagree, disagree): "the models can disagree and both be wrong; a sentence counts only "
        "if exactly one of them is right.",
        (int((a_right & ~b_right).sum() + (~a_right & ~b_right).sum()),
         int((b_right & ~a_right).sum() + (~a_right & ~b_right).sum())): "sentences that both "
        "models get wrong belong to neither count.",
    }  # fmt: skip
    hint = mistakes.get(pair) or (
        "a_only = number of sentences with pred_a == label and pred_b != label; b_only the same "
        "with A and B exchanged."
    )
    raise ExerciseError(ex, f"expected {expected}, got {pair}.", hint)
