"""Timing and memory helpers shared by lecture 10 and ``benchmarks/`` (speed is measured only
there and in benchmark scripts that print ratios, never asserted in tests)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

from ._validation import check_positive_int

__all__ = ["best_time", "peak_mib"]

MIB = 2**20


def best_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn()``, after one warm-up call (first-touch
    page faults, kernel selection); the minimum is the least disturbed by other processes."""
    if not callable(fn):
        raise TypeError(f"fn must be a function of no arguments, got {type(fn).__name__}")
    repeats = check_positive_int(repeats, "repeats")
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak of the memory ``tracemalloc`` sees during one call of ``fn()``, in MiB (numpy reports
    its array buffers to tracemalloc; torch's allocator is invisible to it)."""
    if not callable(fn):
        raise TypeError(f"fn must be a function of no arguments, got {type(fn).__name__}")
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / MIB
