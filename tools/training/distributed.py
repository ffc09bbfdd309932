"""What every training script shares to run on one process or under ``torchrun`` with DDP.

    python -m tools.training.train_gpt --steps 300 --out /tmp/gpt.pt                  # one process
    torchrun --standalone --nproc_per_node=2 -m tools.training.train_gpt --steps 300 --out /tmp/gpt.pt
    python -m tools.training.train_gpt --device cuda                                  # one GPU

:func:`start_run` reads torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) and joins
the process group (gloo on the CPU, nccl on CUDA); without it (or with one process) it starts
nothing and every helper here is the identity, so a one-process run is the script as it was,
bit for bit. Every process builds the same **global** batch from the same seeds and keeps its
rows (:func:`my_rows`, ``global batch / world size`` each; a world size that does not divide the
batch is refused with the argument's name); :func:`wrap` puts the model in
``DistributedDataParallel``, which averages the gradients in ``backward``. The losses are means
over rows with equal slices, so N processes compute the gradient one process computes on the
whole batch, and the same AdamW step (to float rounding: 1e-6 after a few steps,
``tests/test_distributed_training.py``). Only rank 0 prints, evaluates and writes files.

Dropout draws its masks per process, so a model trained with dropout under ``torchrun`` is a
different draw of the same training, not the same bits (the equality test runs without dropout).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from course_lib.data_parallel import shard_batch


@dataclass(frozen=True)
class Ranks:
    """This process's place: ``rank`` of ``world_size`` processes, computing on ``device``."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that prints, evaluates and writes the checkpoint."""
        return self.rank == 0


ONE_PROCESS = Ranks()


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """``--device cpu|cuda`` (default cpu: the shipped checkpoints were made on the CPU)."""
    parser.add_argument(
        "--device", default="cpu",
        help="cpu (default: the shipped checkpoints were made on the CPU) or cuda (one GPU per "
        "process under torchrun)",
    )  # fmt: skip


def start_run(device: str = "cpu") -> Ranks:
    """Join torchrun's process group if there is one; return this process's :class:`Ranks`."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"--device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no CUDA device here (torch.cuda.is_available() "
                         "is False); use --device cpu")  # fmt: skip
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Ranks(device=torch.device(device))
    local_rank = int(os.environ["LOCAL_RANK"])
    if device == "cuda":
        torch.cuda.set_device(local_rank)
    # a long timeout: rank 0 evaluates alone (minutes) while the others wait at the next step
    dist.init_process_group("nccl" if device == "cuda" else "gloo", timeout=timedelta(hours=3))
    return Ranks(dist.get_rank(), dist.get_world_size(),
                 torch.device(f"cuda:{local_rank}" if device == "cuda" else "cpu"))  # fmt: skip


def check_batch_size(batch_size: int, ranks: Ranks, name: str = "--batch-size") -> int:
    """The rows per process; a clear error (naming ``name``) if the world size does not divide
    the global batch. Call it right after :func:`start_run`, before any slow set-up."""
    if batch_size % ranks.world_size:
        raise ValueError(
            f"{name} {batch_size} (the global batch) must be a multiple of the world size "
            f"{ranks.world_size} (torchrun --nproc_per_node): each process takes "
            f"{name} / world size rows; try {name} "
            f"{(batch_size // ranks.world_size + 1) * ranks.world_size} or another world size"
        )
    return batch_size // ranks.world_size


def my_rows(batch, ranks: Ranks):
    """This process's rows of the global ``batch`` (a tensor or a tuple/list/dict of them), on
    its device. One process on the CPU: ``batch`` itself."""
    rows = shard_batch(batch, ranks.rank, ranks.world_size)
    return rows if ranks.device.type == "cpu" else _to(rows, ranks.device)


def _to(batch, device: torch.device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    return type(batch)(_to(v, device) for v in batch)


class DataParallel(DistributedDataParallel):
    """``DistributedDataParallel`` that answers the attribute reads its model answers
    (``context_length``, ``config``, ``blocks``), so that the course's losses take it where they
    took the model."""

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "module":
                raise
            return getattr(self.module, name)


def wrap(model: nn.Module, ranks: Ranks, find_unused_parameters: bool = False) -> nn.Module:
    """``model`` on this process's device, in :class:`DataParallel` when there are several
    processes (``find_unused_parameters``: for a mixture of experts, whose unrouted experts get
    no gradient on some process)."""
    model = model.to(ranks.device)
    if ranks.world_size == 1:
        return model
    ids = [ranks.device.index] if ranks.device.type == "cuda" else None
    return DataParallel(model, device_ids=ids, find_unused_parameters=find_unused_parameters)


def unwrap(model: nn.Module) -> nn.Module:
    """The model inside :class:`DataParallel` (to evaluate or save it on one process)."""
    return model.module if isinstance(model, DistributedDataParallel) else model


def mean_over_ranks(value, ranks: Ranks) -> float:
    """The mean of a scalar (a float or a one-element tensor) over the processes: a loss to log.
    One process: ``float(value)``, as the script logged it before."""
    if ranks.world_size == 1:
        return value.item() if isinstance(value, torch.Tensor) else float(value)
    value = value.detach() if isinstance(value, torch.Tensor) else value
    total = torch.tensor(float(value), dtype=torch.float64, device=ranks.device)
    dist.all_reduce(total)
    return total.item() / ranks.world_size


def as_global_mean(loss: torch.Tensor, count, ranks: Ranks) -> torch.Tensor:
    """A loss that is a mean over ``count`` items of this process's rows (the masked tokens of a
    batch, the reply tokens of a chat), rescaled so that DDP's mean over the processes is the mean
    over every process's items: ``loss * world_size * count / (sum of the counts)``. One process:
    ``loss`` itself. (A mean over rows needs nothing: every process has as many rows.)"""
    if ranks.world_size == 1:
        return loss
    total = torch.tensor(float(count), dtype=torch.float64, device=ranks.device)
    dist.all_reduce(total)
    return loss * (ranks.world_size * float(count) / total.item())


def cpu_only(device: str, script: str) -> None:
    """Refuse ``--device cuda`` for a script whose generation and evaluation run on the CPU only
    (train_assistant, train_rl, fine_tune_minilm: their training is data-parallel on CPU
    processes with gloo; not yet on GPUs)."""
    if device != "cpu":
        raise ValueError(f"--device {device!r}: {script} generates and evaluates on the CPU only; "
                         "use --device cpu (torchrun runs it on several CPU processes, gloo)")  # fmt: skip


def wait_for_main(ranks: Ranks) -> None:
    """Every process waits here until rank 0 is here too (after it wrote a file the others
    read). One process: nothing."""
    if ranks.world_size > 1:
        dist.barrier()


def from_main(value, ranks: Ranks):
    """Rank 0's ``value`` (any picklable object) on every process: a choice rank 0 made from
    its evaluation. One process: ``value``."""
    if ranks.world_size == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def finish(ranks: Ranks) -> None:
    """Leave the process group (the end of a script's ``main``)."""
    if ranks.world_size > 1 and dist.is_initialized():
        dist.destroy_process_group()
