"""course_lib.data_parallel against independent references: torch.chunk for the slices, the ZeRO
paper's Figure 1 for the memory arithmetic, one process on the full batch (and torch's
DistributedDataParallel) for the gradients averaged by hand."""

from __future__ import annotations

import pytest
import torch

from course_lib.data_parallel import compare_data_parallel, shard_batch, zero_memory_per_gpu


@pytest.mark.parametrize("world_size", [1, 2, 4, 8])
def test_the_slices_are_torch_chunks_in_rank_order(world_size):
    batch = torch.arange(8 * 3).reshape(8, 3)
    chunks = torch.chunk(batch, world_size)
    for rank in range(world_size):
        assert torch.equal(shard_batch(batch, rank, world_size), chunks[rank])


def test_zero_memory_is_the_papers_figure_1():
    # Rajbhandari et al. 2020, Figure 1: Psi = 7.5B parameters, N_d = 64 GPUs, K = 12:
    # baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB per GPU.
    got = [zero_memory_per_gpu(7.5e9, 64, stage) / 1e9 for stage in range(4)]
    assert [round(g, 1) for g in got] == [120.0, 31.4, 16.6, 1.9]
    # and by hand, 7B on 8 GPUs: 16 bytes per parameter replicated; sharded in 1/8 by stage 3
    assert zero_memory_per_gpu(7e9, 8, 0) == 16 * 7e9
    assert zero_memory_per_gpu(7e9, 8, 3) == 16 * 7e9 / 8
    assert zero_memory_per_gpu(7e9, 1, 2) == zero_memory_per_gpu(7e9, 1, 0)  # one GPU: no saving


@pytest.mark.slow
def test_gradients_averaged_by_hand_equal_ddp_and_one_process_on_the_full_batch():
    diffs = compare_data_parallel(world_size=2, steps=3)
    assert set(diffs) == {"by hand vs one process", "DDP vs one process", "by hand vs DDP",
                          "between the processes"}  # fmt: skip
    assert all(0 <= d < 1e-6 for d in diffs.values()), diffs
