"""One place that makes a run reproducible: seeds and the thread count.

torch on two threads stalls badly when the other core is busy, and a changed thread count
changes the last bits of results, so every notebook, test and training script calls
:func:`seed_everything` first. Training is then reproducible from ``(seed, steps, threads)``.
"""

from __future__ import annotations

import os
import random

import numpy as np

from ._validation import check_positive_int

__all__ = ["seed_everything"]


def seed_everything(seed: int = 0, threads: int = 1) -> np.random.Generator:
    """Seed Python, numpy and torch, fix torch's thread count, and return a numpy Generator.

    Args:
        seed: the seed for ``random``, numpy's legacy global state and torch.
        threads: number of threads torch and numpy's BLAS may use (1 by default: fast and stable on a
            busy 2-core laptop, and bit-identical from run to run).

    Returns:
        ``np.random.default_rng(seed)``, the generator course code should draw from.
    """
    if check_positive_int(seed, "seed", allow_zero=True) >= 2**32:
        raise ValueError(f"seed must be between 0 and 2**32 - 1 (numpy's range), got {seed}")
    threads = check_positive_int(threads, "threads")
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the legacy global state, for code that still uses it
    os.environ.setdefault("PYTHONHASHSEED", str(seed))
    try:  # numpy's BLAS threads too: many small matrix products stall when the other core is busy
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        threadpool_limits(threads)
    try:
        import torch
    except ImportError:  # numpy-only use of the course library
        pass
    else:
        torch.manual_seed(seed)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    return np.random.default_rng(seed)
