"""One small training loop for every model the course trains (translation, tiny BERT).

Reproducible by construction: it seeds everything and fixes the thread count, and it runs a
fixed number of steps (never "as many as fit in a minute"), so the same ``(seed, steps,
threads)`` gives bit-identical weights on the same machine. A ``tqdm`` bar shows progress.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm
from tqdm.notebook import tqdm as notebook_tqdm

from ._validation import (
    check_callable,
    check_finite_loss,
    check_module,
    check_positive_int,
    check_positive_number,
)
from .reproducibility import seed_everything

__all__ = ["TrainingLog", "train", "train_step", "learning_rate_at"]


@dataclass
class TrainingLog:
    """What :func:`train` returns: the loss of every step and the wall-clock time."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def smoothed(self, window: int = 50) -> list[float]:
        """Running mean of the last ``window`` losses (for plotting a readable curve)."""
        window = check_positive_int(window, "window")
        out, total = [], 0.0
        for i, loss in enumerate(self.losses):
            total += loss
            if i >= window:
                total -= self.losses[i - window]
            out.append(total / min(i + 1, window))
        return out


def learning_rate_at(
    step: int, steps: int, lr: float, warmup: int = 0, schedule: str = "linear"
) -> float:
    """Learning rate of step ``step`` (0-based): linear warm-up over ``warmup`` steps, then
    ``"constant"``, ``"linear"`` decay to 0 at ``steps``, or ``"cosine"`` decay to 0."""
    steps = check_positive_int(steps, "steps")
    step = check_positive_int(step, "step", allow_zero=True)
    warmup = check_positive_int(warmup, "warmup", allow_zero=True)
    check_positive_number(lr, "lr")
    if step >= steps:
        raise ValueError(
            f"step must be < steps={steps} (steps are counted from 0), got {step}: the "
            "schedule ends at steps"
        )
    if warmup > steps:
        raise ValueError(f"warmup must be <= steps={steps}, got {warmup}")
    if step < warmup:
        return lr * (step + 1) / warmup
    if schedule == "constant":
        return lr
    progress = (step - warmup) / max(1, steps - warmup)
    if schedule == "linear":
        return lr * (1.0 - progress)
    if schedule == "cosine":
        return lr * 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"schedule must be 'constant', 'linear' or 'cosine', got {schedule!r}")


_NOT_YET = object()  # train() checks its arguments before it has built the optimizer


def _check_step_arguments(model, loss_fn, clip_grad, optimizer=_NOT_YET, step: int = 0) -> None:
    check_module(model, "model")
    check_callable(loss_fn, "loss_fn", "a function (model, batch) -> loss")
    if clip_grad is not None:
        check_positive_number(clip_grad, "clip_grad")
    if optimizer is not _NOT_YET and not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    check_positive_int(step, "step", allow_zero=True)


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    batch: Any,
    clip_grad: float | None = 1.0,
    *,
    step: int = 0,
) -> float:
    """One optimisation step on ``batch``: loss, gradients, clipping, update; returns the loss.

    The gradient norm is clipped over the parameters the optimizer updates (``clip_grad=None``:
    no clipping). :func:`train` calls this once per step (``step`` names it in the error a
    nan/inf or non-scalar loss raises).
    """
    _check_step_arguments(model, loss_fn, clip_grad, optimizer, step)  # clear errors early
    loss = check_finite_loss(loss_fn(model, batch), step)  # forward pass: a finite scalar
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # gradients of the loss for every parameter
    if clip_grad is not None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, clip_grad)
    optimizer.step()  # AdamW moves each parameter against its gradient
    return loss.item()


def _progress_bar(steps: int, desc: str | None, progress: bool):
    """A tqdm bar over ``range(steps)`` and, in a notebook, the display handle of its widget.

    A notebook's saved output keeps the widget's text version as it was when first shown
    ("0%|  | 0/644"), and that is all GitHub, nbviewer and the offline site can show. Shown
    with a display id, the output can be updated to the finished bar when training ends.
    """
    notebook = progress and issubclass(tqdm, notebook_tqdm)  # tqdm.auto picked the widget
    bar = tqdm(
        range(steps), desc=desc, disable=not progress, mininterval=0.5,
        **({"display": False} if notebook else {}),
    )  # fmt: skip
    if not notebook or bar.disable:
        return bar, None
    from IPython.display import display

    bar.displayed = True
    return bar, display(bar.container, display_id=True)


def train(
    model: nn.Module,
    batches: Iterable[Any] | Callable[[int], Any],
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    *,
    steps: int,
    lr: float = 1e-3,
    warmup: int = 0,
    schedule: str = "linear",
    weight_decay: float = 0.0,
    clip_grad: float | None = 1.0,
    seed: int = 0,
    threads: int = 1,
    progress: bool = True,
    desc: str = "training",
) -> TrainingLog:
    """Train ``model`` with AdamW for exactly ``steps`` steps.

    Args:
        model: any ``nn.Module``; it is put in train mode, then back in eval mode at the end.
        batches: an iterable of batches (drawn one per step; it must not run out), or a
            function ``step -> batch``.
        loss_fn: ``loss_fn(model, batch) -> scalar tensor`` to minimise.
        steps: number of optimisation steps.
        lr, warmup, schedule: peak learning rate and its schedule (:func:`learning_rate_at`).
        weight_decay: AdamW's decoupled weight decay.
        clip_grad: clip the gradient norm to this value (None: no clipping).
        seed, threads: passed to :func:`course_lib.seed_everything` before the first step
            (dropout masks and any sampling inside ``loss_fn`` depend on it).
        progress: show a tqdm progress bar with the running loss.

    Returns:
        A :class:`TrainingLog` with the loss of every step.
    """
    steps = check_positive_int(steps, "steps")
    _check_step_arguments(model, loss_fn, clip_grad)
    learning_rate_at(0, steps, lr, warmup, schedule)  # validates the schedule name early
    seed_everything(seed, threads)
    if callable(batches) and not isinstance(batches, Iterator):
        get_batch = batches
    else:
        iterator = iter(batches)

        def get_batch(step: int):
            try:
                return next(iterator)
            except StopIteration:
                raise ValueError(
                    f"batches ran out after {step} batch(es); train needs steps={steps} "
                    "(pass a function step -> batch, or an endless iterator)"
                ) from None

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    log = TrainingLog()
    model.train()
    start = time.perf_counter()
    bar, shown = _progress_bar(steps, desc, progress)
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, steps, lr, warmup, schedule)
        log.losses.append(
            train_step(model, optimizer, loss_fn, get_batch(step), clip_grad, step=step)
        )
        if step % 25 == 0 or step == steps - 1:
            bar.set_postfix(
                loss=f"{sum(log.losses[-25:]) / len(log.losses[-25:]):.3f}", refresh=False
            )
    bar.close()
    if shown is not None:  # store the finished bar as the output's text, not the "0%" it began as
        shown.update(bar.container)
    log.seconds = time.perf_counter() - start
    model.eval()
    return log
