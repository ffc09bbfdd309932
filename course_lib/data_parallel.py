"""Data parallelism (lecture 11, section 8): one copy of the model per process, each process a
slice of the batch, gradients averaged with ``all_reduce``; and what ZeRO/FSDP shard instead.

* :func:`shard_batch`: the rows of the global batch that process ``rank`` of ``world_size``
  computes (every training script under ``torchrun`` uses it, ``tools/training/distributed.py``);
* :func:`average_gradients`: the ``all_reduce`` that ``DistributedDataParallel`` performs after
  ``backward``, written out; :func:`data_parallel_steps` the training steps around it;
* :func:`compare_data_parallel`: spawns ``world_size`` processes (gloo, on the CPU) that train a
  tiny GPT by hand and with ``DistributedDataParallel``, and compares both with one process on
  the full batch;
* :func:`zero_memory_per_gpu`: bytes of model states per GPU under plain data parallelism and
  ZeRO stages 1-3 (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
  Parameter Models", section 5 and Figure 1).

The worker that :func:`compare_data_parallel` starts lives here, not in the notebook: spawned
processes import the function they run, and a notebook's functions cannot be imported.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from ._validation import check_callable, check_module, check_positive_int, check_positive_number

__all__ = [
    "shard_batch",
    "average_gradients",
    "data_parallel_steps",
    "compare_data_parallel",
    "zero_memory_per_gpu",
]


Batch = torch.Tensor | tuple | list | dict  # a tensor, or tensors nested in tuples, lists, dicts


def shard_batch(batch: Batch, rank: int, world_size: int, name: str = "batch") -> Batch:
    """Rows ``rank * b : (rank + 1) * b`` of every tensor of ``batch``, ``b = rows / world_size``.

    ``batch``: a tensor ``(rows, ...)``, or a tuple, list or dict of them (nested), all with the
    same number of rows. Every process builds the same global batch (same seeds) and keeps its
    slice: ``world_size`` processes then see exactly the rows one process would. With
    ``world_size == 1`` the batch itself is returned (no copy). Raises ``ValueError`` naming
    ``name`` when ``world_size`` does not divide the number of rows.
    """
    world_size = check_positive_int(world_size, "world_size")
    rank = check_positive_int(rank, "rank", allow_zero=True)
    if rank >= world_size:
        raise ValueError(f"rank must be < world_size={world_size}, got {rank}")
    tensors = _tensors(batch, name)
    if not tensors:
        raise TypeError(f"{name} must hold at least one tensor, got {type(batch).__name__}")
    rows = {t.shape[0] if t.ndim else None for t in tensors}
    if len(rows) != 1 or None in rows:
        raise ValueError(f"every tensor of {name} must have the same number of rows (dim 0), "
                         f"got {sorted(rows, key=str)}")  # fmt: skip
    (n,) = rows
    if n % world_size:
        raise ValueError(
            f"the world size ({world_size} processes) must divide the global batch: {name} has "
            f"{n} rows; choose a batch size that is a multiple of {world_size}, or another "
            f"--nproc_per_node"
        )
    if world_size == 1:
        return batch
    b = n // world_size
    return _map(batch, lambda t: t[rank * b : (rank + 1) * b])


def _tensors(batch, name: str) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _tensors(v, name)]
    if isinstance(batch, tuple | list):
        return [t for v in batch for t in _tensors(v, name)]
    raise TypeError(
        f"{name} must be a tensor or a tuple/list/dict of tensors, got {type(batch).__name__}"
    )


def _map(batch, fn):
    if isinstance(batch, torch.Tensor):
        return fn(batch)
    if isinstance(batch, dict):
        return {k: _map(v, fn) for k, v in batch.items()}
    return type(batch)(_map(v, fn) for v in batch)


def average_gradients(model: nn.Module) -> None:
    """Replace every gradient of ``model`` by its mean over the processes of the default group.

    Run after ``loss.backward()``: each process has the gradient of the mean loss over its own
    rows; the mean of those is the gradient of the mean loss over all rows (equal slices).
    """
    check_module(model)
    if not dist.is_initialized():
        raise RuntimeError("average_gradients needs torch.distributed's default process group: "
                           "call dist.init_process_group first")  # fmt: skip
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # every process: the sum over all
            p.grad /= world_size  # the sum -> the mean


def data_parallel_steps(
    model: nn.Module,
    batch_at: Callable[[int], torch.Tensor],
    steps: int,
    rank: int,
    world_size: int,
    by_hand: bool = True,
    lr: float = 1e-3,
) -> nn.Module:
    """``steps`` AdamW steps of language modelling on this process's rows of ``batch_at(step)``.

    ``batch_at(step)``: the global batch of token ids ``(B, n + 1)``, the same on every process.
    ``by_hand``: average the gradients with :func:`average_gradients` (leave it False for a
    model wrapped in ``DistributedDataParallel``, which averages them inside ``backward``).
    """
    _check_steps(model, batch_at, steps, rank, world_size, lr)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(steps):
        ids = shard_batch(batch_at(step), rank, world_size)  # (B / world_size, n + 1): my rows
        logits = model(ids[:, :-1])  # (B / world_size, n, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())  # mean over my rows
        optimizer.zero_grad()
        loss.backward()  # DistributedDataParallel all-reduces the gradients here
        if by_hand and world_size > 1:
            average_gradients(model)  # now every process holds the full batch's gradient
        optimizer.step()  # the same gradient and the same AdamW state: the same update
    return model


def _check_steps(model, batch_at, steps, rank, world_size, lr) -> None:
    check_module(model)
    check_callable(batch_at, "batch_at", "a function step -> (B, n + 1) token ids")
    check_positive_int(steps, "steps")
    check_positive_int(rank, "rank", allow_zero=True)
    check_positive_int(world_size, "world_size")
    check_positive_number(lr, "lr")


def _tiny_gpt(seed: int):
    from .configs import GPTConfig
    from .models.gpt import GPT
    from .reproducibility import seed_everything

    seed_everything(seed, threads=1)
    return GPT(GPTConfig(vocab_size=64, context_length=16, d_model=32, num_heads=2, num_layers=2))


def _batch_at(step: int, batch_size: int = 8, seed: int = 0) -> torch.Tensor:
    """The global batch of step ``step``: random token ids ``(batch_size, 17)``."""
    gen = torch.Generator().manual_seed(1000 * seed + step)
    return torch.randint(0, 64, (batch_size, 17), generator=gen)


def _max_difference(a: nn.Module, b: nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters(),
                                                          strict=True))  # fmt: skip


def _worker(rank: int, world_size: int, port: int, steps: int, seed: int, queue) -> None:
    """One process of :func:`compare_data_parallel` (started by ``torch.multiprocessing``)."""
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        by_hand = data_parallel_steps(_tiny_gpt(seed), _batch_at, steps, rank, world_size)
        ddp = DistributedDataParallel(_tiny_gpt(seed))  # the same initial weights on every rank
        data_parallel_steps(ddp, _batch_at, steps, rank, world_size, by_hand=False)
        # the replicas stay equal: the largest difference between this process and rank 0
        first = [p.detach().clone() for p in by_hand.parameters()]
        for p in first:
            dist.broadcast(p, src=0)
        spread = torch.tensor(max((p - q).abs().max().item()
                                  for p, q in zip(by_hand.parameters(), first, strict=True)))  # fmt: skip
        dist.all_reduce(spread, op=dist.ReduceOp.MAX)
        if rank == 0:
            one = data_parallel_steps(_tiny_gpt(seed), _batch_at, steps, 0, 1)  # full batch
            queue.put({
                "by hand vs one process": _max_difference(by_hand, one),
                "DDP vs one process": _max_difference(ddp.module, one),
                "by hand vs DDP": _max_difference(by_hand, ddp.module),
                "between the processes": spread.item(),
            })  # fmt: skip
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compare_data_parallel(world_size: int = 2, steps: int = 3, seed: int = 0) -> dict:
    """Train a tiny GPT for ``steps`` AdamW steps on a global batch of 8 sequences, three ways,
    and return the largest parameter differences between them.

    ``world_size`` processes are spawned (gloo backend, CPU, one thread each); each trains one
    copy by hand (:func:`average_gradients`) and one wrapped in ``DistributedDataParallel``;
    process 0 also trains a copy alone on the full batch. ``world_size`` must divide 8.
    """
    world_size = check_positive_int(world_size, "world_size")
    if 8 % world_size:
        raise ValueError(f"world_size must divide the global batch of 8 rows, got {world_size}")
    steps = check_positive_int(steps, "steps")
    seed = check_positive_int(seed, "seed", allow_zero=True)
    import torch.multiprocessing as mp

    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_worker, args=(world_size, _free_port(), steps, seed, queue), nprocs=world_size)
    return queue.get()


def zero_memory_per_gpu(parameters: float, gpus: int, stage: int,
                        optimizer_bytes: int = 12) -> float:  # fmt: skip
    """Bytes of model states per GPU when ``gpus`` data-parallel GPUs train ``parameters``
    parameters with mixed-precision Adam, under ZeRO ``stage`` (0 = plain data parallelism).

    The ZeRO paper's accounting (Rajbhandari et al. 2020, section 3.1): Psi parameters hold
    2 Psi bytes of fp16 weights, 2 Psi of fp16 gradients and K Psi of optimizer states (K = 12:
    fp32 weights, momentum and variance). Stage 1 shards the optimizer states over the N GPUs,
    stage 2 the gradients too, stage 3 the weights too (PyTorch FSDP's ``FULL_SHARD``).
    Activations, buffers and fragmentation are not counted.
    """
    psi = check_positive_number(parameters, "parameters")
    n = check_positive_int(gpus, "gpus")
    k = check_positive_int(optimizer_bytes, "optimizer_bytes")
    if stage == 0:
        return 2 * psi + 2 * psi + k * psi  # everything replicated on every GPU
    if stage == 1:
        return 2 * psi + 2 * psi + k * psi / n  # optimizer states sharded
    if stage == 2:
        return 2 * psi + (2 + k) * psi / n  # ... and gradients
    if stage == 3:
        return (2 + 2 + k) * psi / n  # ... and the weights
    raise ValueError(f"stage must be 0, 1, 2 or 3 (0 = plain data parallelism), got {stage!r}")
