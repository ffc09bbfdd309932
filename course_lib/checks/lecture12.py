"""Checks for the exercises of lecture 12 (fine-tuning: pooling, the head's loss, a sweep,
comparing two models on the same sentences)."""

from __future__ import annotations

import functools

import numpy as np

from . import ExerciseError, call_student, check_array, hidden_rng, passed
from .given import shipped_sweep, shipped_test_predictions

__all__ = ["check_max_pool", "check_head_loss", "check_best_setting", "check_paired_counts",
           "one_standard_error_choice", "shipped_test_predictions", "shipped_sweep"]  # fmt: skip

# The course_lib functions (or classes: any of their methods) that compute each exercise's answer:
# an answer that calls one is flagged in the grader's CSV (tools/grading/reach.py).
REFERENCES = {
    "12.1": (),
    "12.2": (),
    "12.3": (),
    "12.4": (),
}


def _padded_batch(rng: np.random.Generator, seed: int):
    """A padded batch: lengths 7, 4, 1, 5 (seed 0) or hidden ones; the padded vectors are
    garbage larger than every real value, and one sentence's real values are all negative (so a
    padded zero would beat them)."""
    batch, n, h = (4, 7, 5) if seed == 0 else (int(rng.integers(3, 7)), int(rng.integers(4, 12)),
                                               int(rng.integers(2, 9)))  # fmt: skip
    lengths = [7, 4, 1, 5] if seed == 0 else [n, *rng.integers(1, n, size=batch - 1).tolist()]
    hidden = rng.normal(size=(batch, n, h))
    mask = (np.arange(n)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
    hidden[1] = -np.abs(hidden[1]) - 0.1  # a sentence whose every real value is negative
    hidden[mask == 0] += 50.0  # padded vectors are garbage: they must not count
    return hidden, mask


def check_max_pool(student_fn, *, seed: int = 0) -> None:
    """Exercise 12.1: ``max_pool(hidden (b, n, H), mask (b, n)) -> (b, H)``: for each sentence
    and feature, the largest value over its real tokens (max pooling, as sentence-transformers'
    ``pooling_mode_max_tokens``), the padding left out. Seed 0: the notebook's batch; other
    seeds: hidden sizes and lengths (sentence 1 always padded, its real values all negative)."""
    ex = "12.1"
    rng = hidden_rng(seed, 121) if seed else np.random.default_rng(0)
    hidden, mask = _padded_batch(rng, seed)
    got = call_student(ex, student_fn, hidden.copy(), mask.copy())
    expected = np.stack([h[m.astype(bool)].max(0) for h, m in zip(hidden, mask, strict=True)])
    if hasattr(got, "detach") and hasattr(got, "numpy"):  # a torch tensor
        got = got.detach().numpy()
    got_arr = None
    if not isinstance(got, (str, bytes)):
        try:
            got_arr = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            got_arr = None
    if got_arr is not None and got_arr.shape == expected.shape:
        m = mask[..., None].astype(float)
        mistakes = {
            "the padding was included: the padded vectors are garbage, and here they are "
            "larger than every real value.": hidden.max(1),
            "multiplying by the mask turns the padded vectors into zeros, and a zero beats real "
            "values that are all negative: leave the padded positions out of the max instead.":
            (hidden * m).max(1),
            "that is the mean of the real tokens (mean pooling); max pooling keeps each "
            "feature's largest value.": (hidden * m).sum(1) / m.sum(1),
            "you returned the [CLS] vector (position 0), not the largest values.": hidden[:, 0],
        }  # fmt: skip
        for hint, wrong in mistakes.items():
            if np.allclose(got_arr, wrong) and not np.allclose(wrong, expected):
                raise ExerciseError(ex, f"max-pooled vectors for a batch with lengths "
                                    f"{mask.sum(1).tolist()}: not the largest real values.",
                                    hint)  # fmt: skip
    check_array(ex, got, expected, what="max-pooled vectors (batch, H)", rtol=1e-6, atol=1e-12)
    passed(ex, "max pooling leaves the padding out")


_INIT_SCALE, _HIDDEN = 0.02, 384  # BERT's initializer_range; MiniLM's hidden size


@functools.cache
def _untrained_loss(num_classes: int) -> float:
    """The measurement: the mean loss of an untrained head (weights of scale 0.02 on 384-wide
    vectors of unit variance: scores that spread by 0.02 * sqrt(384), about 0.39) over 100,000
    sentences with random labels."""
    rng = np.random.default_rng([122, num_classes])
    scores = rng.normal(scale=_INIT_SCALE * np.sqrt(_HIDDEN), size=(100_000, num_classes))
    labels = rng.integers(0, num_classes, size=len(scores))
    top = scores.max(1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(scores - top).sum(1))
    return float((lse - scores[np.arange(len(scores)), labels]).mean())


START_BAND = 0.1  # nats: the prediction of 12.2's second half is graded within this band


def _start_cases(seed: int) -> list[int]:
    """The numbers of classes the start-loss prediction is asked about (seed 0: the notebook's 6,
    and 2 and 20; hidden seeds: a small, a middling and a large one)."""
    if seed == 0:
        return [6, 2, 20]
    rng = hidden_rng(seed, 1222)
    return [int(rng.integers(2, 5)), int(rng.integers(5, 15)), int(rng.integers(15, 41))]


def _check_start_loss(ex: str, start_loss, seed: int) -> None:
    """``start_loss(num_classes) -> float``, the predicted loss of an untrained head, within
    ``START_BAND`` of the loss measured on untrained heads; a wrong one is told too low / too
    high with the mistake it looks like, never the measured loss."""
    for c in _start_cases(seed):
        got = call_student(ex, start_loss, c)
        try:
            if isinstance(got, (str, bytes)):
                raise TypeError
            value = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            raise ExerciseError(ex, f"start_loss({c}): expected one number, got "
                                f"{type(got).__name__}.", "return a float: the loss you "
                                "predict for an untrained head with that many classes.") from None  # fmt: skip
        measured = _untrained_loss(c)
        if abs(value - measured) <= START_BAND:
            continue
        mistakes = {
            1 / c: "that is the probability the head gives the true class; the loss is minus "
            "its log.",
            -np.log(c): "a loss is minus a log-probability: it cannot be negative.",
            np.log2(c): "the loss is in nats (natural log), not bits.",
            np.log10(c): "the loss uses the natural log, not log10.",
            1 - 1 / c: "that is the chance of a wrong answer, not the cross-entropy.",
            0.0: "a loss of 0 means the true class gets probability 1: an untrained head has no "
            "idea which class is right.",
        }  # fmt: skip
        hint = next((h for v, h in mistakes.items() if np.isclose(value, v, atol=1e-3)), None)
        if hint is None:
            hint = ("if every class gets the same probability, what is the probability of the "
                    "true one, and what is minus its log?" if value < measured else
                    "an untrained head has small scores: about the same probability for every "
                    "class, and no class is especially unlikely.")  # fmt: skip
        side = "too low" if value < measured else "too high"
        raise ExerciseError(ex, f"start_loss({c}) = {value:.4f} is {side} for the loss measured "
                            f"on untrained heads with {c} classes (the check accepts "
                            f"{START_BAND} nats either way).", hint)  # fmt: skip


def precompute() -> None:
    """What every lecture-12 notebook's checks compare with: the loss of untrained heads for
    every number of classes a hidden seed can ask about (2 to 40) and the shipped models'
    share of 12.4, measured once by the grader before it grades a class (forked workers share
    it), so a notebook costs only its own answers."""
    for num_classes in range(2, 41):
        _untrained_loss(num_classes)
    _measured_share()


def check_head_loss(student_fn, start_loss=None, *, seed: int = 0) -> None:
    """Exercise 12.2: ``head_loss(cls (b, H), weight (C, H), bias (C,), labels (b,)) -> float``,
    and the prediction ``start_loss(num_classes) -> float``: the loss of an untrained head,
    graded within ``START_BAND`` nats of the loss measured on untrained heads (seed 0: 6, 2 and
    20 classes; hidden seeds: other numbers of classes)."""
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
    if start_loss is None:
        raise ExerciseError(ex, "start_loss: expected your prediction, a function of the number "
                            "of classes, got None.",
                            "define start_loss(num_classes) before the check and pass it: "
                            "check_head_loss(head_loss, start_loss).")  # fmt: skip
    _check_start_loss(ex, start_loss, seed)
    passed(ex, "the classification head's cross-entropy, and its loss before training predicted")


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


N_VALIDATION = 192  # the validation sample of lecture 12's sweep: 32 sentences per topic


def _random_sweep(rng: np.random.Generator) -> tuple[list[dict], int]:
    """A made-up sweep (3 or 4 rates, 4 to 10 epochs) with accuracies that rise and then wobble
    by about the validation sample's own noise, and its number of validation sentences."""
    n = int(rng.choice([96, 192, 384]))
    lrs = sorted(float(x) for x in rng.choice([1e-5, 3e-5, 1e-4, 3e-4, 1e-3], size=int(
        rng.integers(3, 5)), replace=False))  # fmt: skip
    epochs = int(rng.integers(4, 11))
    rows = []
    for lr in lrs:
        top = rng.uniform(0.6, 0.75)
        for epoch in range(1, epochs + 1):
            level = top - (top - 0.45) * np.exp(-epoch / rng.uniform(0.7, 2.0))
            value = round(float(level + rng.normal(0, np.sqrt(level * (1 - level) / n))) * n) / n
            rows.append({"lr": lr, "epoch": epoch, "validation": value,
                         "loss": float(1.6 * np.exp(-epoch / 3) * rng.uniform(0.5, 1.5))})  # fmt: skip
    return rows, n


def one_standard_error_choice(sweep: list[dict], n_validation: int) -> tuple[float, int]:
    """The rule of exercise 12.3 (the check's own answer): the fewest epochs, then the smallest
    learning rate, among the rows whose validation accuracy is within one standard error
    sqrt(a (1 - a) / n) of the best accuracy a."""
    best = max(r["validation"] for r in sweep)
    se = np.sqrt(best * (1 - best) / n_validation)
    near = [r for r in sweep if r["validation"] >= best - se - 1e-12]
    row = min(near, key=lambda r: (r["epoch"], r["lr"]))
    return row["lr"], row["epoch"]


def _sweep_case(seed: int) -> tuple[list[dict], int]:
    """Seed 0: the sweep shipped with the course; others: made-up ones with no row on the edge
    of the one-standard-error band (so float rounding cannot decide the answer)."""
    if seed == 0:
        return shipped_sweep(), N_VALIDATION
    rng = hidden_rng(seed, 123)
    while True:
        sweep, n = _random_sweep(rng)
        best = max(r["validation"] for r in sweep)
        edge = best - np.sqrt(best * (1 - best) / n)
        if all(abs(r["validation"] - edge) > 1e-6 for r in sweep):
            return sweep, n


def _check_sweep_predictions(ex: str, largest_lr_wins, last_epoch_best) -> None:
    """The predictions the student wrote down before looking at the shipped sweep (graded: the
    grader runs the notebook in order, so the values checked are the ones set before the cell
    that prints the sweep)."""
    sweep = shipped_sweep()
    best = max(sweep, key=lambda r: r["validation"])
    truth = {
        "largest_lr_wins": best["lr"] == max(r["lr"] for r in sweep),
        "last_epoch_best": best["epoch"] == max(r["epoch"] for r in sweep),
    }
    for name, got in (("largest_lr_wins", largest_lr_wins), ("last_epoch_best", last_epoch_best)):
        if not isinstance(got, (bool, np.bool_)):
            raise ExerciseError(ex, f"{name}: expected your prediction, True or False, got "
                                f"{type(got).__name__} {got!r:.40}.",
                                "write your prediction down BEFORE you look at the sweep: "
                                f"{name} = True or {name} = False.")  # fmt: skip
    why = {
        "largest_lr_wins": "the best row of the shipped sweep is not at the largest learning "
        "rate: a larger step soon fits the 384 sentences, and its accuracy stops rising.",
        "last_epoch_best": "the best row is not at the last epoch: after a few epochs the "
        "validation accuracy only wobbles by about its own noise, up and down.",
    }
    wrong = [n for n, g in (("largest_lr_wins", largest_lr_wins),
                            ("last_epoch_best", last_epoch_best)) if bool(g) != truth[n]]  # fmt: skip
    if wrong:
        n = wrong[0]
        raise ExerciseError(ex, f"your prediction {n} = {not truth[n]} did not hold on the shipped "
                            "sweep.", why[n] if not truth[n] else "it held the other way.")  # fmt: skip


def check_best_setting(
    student_fn, largest_lr_wins=None, last_epoch_best=None, *, seed: int = 0
) -> None:
    """Exercise 12.3 (predict, then choose): two predictions about the shipped sweep written
    down first (``largest_lr_wins``, ``last_epoch_best``: True or False), then
    ``best_setting(sweep, n_validation) -> (lr, epoch)`` by a rule that counts the validation
    sample's noise: of the rows within one standard error of the best validation accuracy, the
    fewest epochs, then the smallest learning rate.

    Seed 0 uses the sweep shipped with the course (192 validation sentences); other seeds a
    made-up sweep and sample size. A wrong choice is told which rule it followed, never the row.
    """
    ex = "12.3"
    _check_sweep_predictions(ex, largest_lr_wins, last_epoch_best)
    sweep, n = _sweep_case(seed)
    answer = call_student(ex, student_fn, [dict(r) for r in sweep], n)
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise ExerciseError(
            ex, f"expected a pair (lr, epoch), got {answer!r:.80}.",
            "return a tuple like (0.001, 2): the row's 'lr' and 'epoch'.",
        )  # fmt: skip
    try:
        lr, epoch = float(answer[0]), int(answer[1])
    except (TypeError, ValueError):
        raise ExerciseError(
            ex, f"lr must be a number and epoch an integer, got {answer!r:.80}."
        ) from None
    chosen = [r for r in sweep if np.isclose(lr, r["lr"]) and epoch == r["epoch"]]
    if not chosen:
        raise ExerciseError(
            ex, f"({lr}, {epoch}) is not a row of the sweep.",
            "return the 'lr' and the 'epoch' of one row of the sweep.",
        )  # fmt: skip
    want_lr, want_epoch = one_standard_error_choice(sweep, n)
    if np.isclose(lr, want_lr) and epoch == want_epoch:
        passed(ex, "a setting chosen with the noise of the validation sample in mind")
        return
    best = max(r["validation"] for r in sweep)
    se = np.sqrt(best * (1 - best) / n)
    row = chosen[0]
    what = (f"on a sweep with {n} validation sentences you kept (lr {lr:g}, epoch {epoch}), "
            f"validation accuracy {row['validation']:.3f}")  # fmt: skip
    if row["loss"] == min(r["loss"] for r in sweep):
        hint = ("the lowest training loss is not the best model: choose by validation accuracy, "
                "counting its noise.")  # fmt: skip
    elif row["validation"] < best - se - 1e-12:
        hint = ("that row's accuracy is more than one standard error below the best one: is your "
                "band wider than one standard error? Keep only the rows within "
                "sqrt(a (1 - a) / n_validation) of the best accuracy a.")  # fmt: skip
    elif row["validation"] == best and (row["epoch"] > want_epoch or row["lr"] > want_lr):
        hint = ("that is the strict best of one noisy measurement: rows within one standard "
                "error of it are as good as far as this sample can tell. Of those, keep the fewest "
                "epochs, then the smallest learning rate.")  # fmt: skip
    elif row["epoch"] == want_epoch:
        hint = "among the rows with the fewest epochs in the band, keep the smallest learning rate."
    elif row["epoch"] > want_epoch:
        hint = ("another row within one standard error of the best needs fewer epochs: the rule "
                "keeps the fewest epochs first, then the smallest learning rate.")  # fmt: skip
    else:
        hint = ("your row has fewer epochs than the rule allows: is your band wider than one "
                "standard error, sqrt(a (1 - a) / n_validation) with a the best accuracy?")  # fmt: skip
    raise ExerciseError(ex, what + ".", hint)


SHARE_BAND = 0.1  # the prediction of 12.4 is graded within this band of the measured share


@functools.cache
def _measured_share() -> float:
    """Of the test sentences where exactly one of the two shipped fine-tuned models is right,
    the share the one trained on all 3,322 labelled sentences wins."""
    labels, budget, all_labels = shipped_test_predictions()
    more = int(((all_labels == labels) & (budget != labels)).sum())
    fewer = int(((budget == labels) & (all_labels != labels)).sum())
    return more / (more + fewer)


def _check_share_prediction(ex: str, predicted_share) -> None:
    """The prediction written before the measurement, graded within ``SHARE_BAND`` of the share
    measured on the shipped models' test predictions; never told the share."""
    if isinstance(predicted_share, (bool, np.bool_)) or not isinstance(
        predicted_share, (int, float, np.integer, np.floating)
    ):
        raise ExerciseError(ex, f"predicted_share: expected your prediction, a number between 0 "
                            f"and 1, got {type(predicted_share).__name__} {predicted_share!r:.40}.",
                            "write it down BEFORE you measure, e.g. predicted_share = 0.5.")  # fmt: skip
    share = float(predicted_share)
    if not 0 <= share <= 1:
        raise ExerciseError(ex, f"predicted_share = {share:g} is not a share: it must be between "
                            "0 and 1.", "a share of the sentences, e.g. 0.5 for a half (not 50).")  # fmt: skip
    measured = _measured_share()
    if abs(share - measured) <= SHARE_BAND:
        return
    if share < measured:
        hint = ("a share near one half would mean that the 3,322 labels bought nothing on the "
                "sentences where the two models differ; lecture 12's accuracies say how much "
                "more often the model trained on all of them is right.")  # fmt: skip
    else:
        hint = ("the model trained on 384 sentences still wins some of these sentences: more "
                "labels also move some answers from right to wrong.")  # fmt: skip
    raise ExerciseError(ex, f"your predicted_share = {share:g} is too "
                        f"{'low' if share < measured else 'high'}: the measured share is more "
                        f"than {SHARE_BAND} away. Measure it in the cells below, then think "
                        "about why.", hint)  # fmt: skip


def check_paired_counts(student_fn, predicted_share=None, *, seed: int = 0) -> None:
    """Exercise 12.4: ``paired_counts(pred_a, pred_b, labels) -> (a_only, b_only)``: how many
    sentences model A gets right and B wrong, and the other way round; and ``predicted_share``,
    the prediction written before the measurement (of the test sentences where exactly one of
    the shipped models is right, the share the one trained on more labels wins), graded within
    ``SHARE_BAND`` of the measured share."""
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
        _check_share_prediction(ex, predicted_share)
        passed(ex, "the paired count, and the share predicted before it was measured")
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
