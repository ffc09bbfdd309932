"""Time and peak memory of attention as n grows: naive numpy, chunked numpy, torch SDPA.

    python benchmarks/bench_attention.py                 # n = 256 ... 16,384, d = 64, float32
    python benchmarks/bench_attention.py --sizes 256 1024 --repeats 3

Everything runs in this one process, on the same float32 inputs and the same thread count
(numpy's BLAS limited with threadpoolctl, torch with ``torch.set_num_threads``; 1 by default).

* time: best of ``--repeats`` calls (the minimum is the least disturbed by other processes).
* memory of the numpy versions: the peak of ``tracemalloc`` during one call (numpy reports its
  array buffers to tracemalloc; the inputs, allocated before, are not counted).
* memory of torch: tracemalloc cannot see torch's allocator, so every version is also measured
  as the peak rise of the process's resident memory, sampled every 0.2 ms by a thread — a
  coarser number (it can miss short peaks, and it counts pages, not bytes).

Writes ``benchmarks/results/attention.csv`` (read by lecture 10), ``attention.json`` (the
machine, versions and thread count) and ``attention.png``; prints a table with the ratios.
Targets (issue 8): chunked peak < 64 MiB at n = 16,384; naive numpy within 2x of torch's time
at n = 1,024. This is a benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_info, threadpool_limits

from course_lib import chunked_attention, scaled_dot_product_attention_inplace, seed_everything
from course_lib.timing import best_time, peak_mib

MIB = 2**20
RESULTS = Path(__file__).resolve().parent / "results"
FIELDS = [
    "n",
    "d",
    "naive_s",
    "naive_bare_s",
    "chunked_s",
    "torch_s",
    "torch_math_s",
    "naive_peak_mib",
    "naive_bare_peak_mib",
    "chunked_peak_mib",
    "naive_rss_mib",
    "naive_bare_rss_mib",
    "chunked_rss_mib",
    "torch_rss_mib",
    "torch_math_rss_mib",
    "score_matrix_mib",
    "naive_over_torch_time",
    "naive_bare_over_torch_time",
    "chunked_over_torch_time",
    "naive_over_chunked_memory",
    "max_abs_diff_chunked_vs_naive",
    "max_abs_diff_torch_vs_naive",
]


try:
    import ctypes

    _LIBC = ctypes.CDLL("libc.so.6")
except OSError:  # not glibc
    _LIBC = None


def fresh_pages_for_large_allocations(threshold: int = 64 * 1024) -> bool:
    """Ask glibc to mmap every allocation above ``threshold`` and unmap it on free.

    By default glibc raises its mmap threshold after the first large free and then keeps freed
    memory in its heap, so a second call allocates nothing new and the RSS rise reads 0. With a
    fixed threshold (M_MMAP_THRESHOLD = -3) each large buffer is fresh memory again.
    """
    if _LIBC is None:  # not glibc: RSS rises are then lower bounds
        return False
    return bool(_LIBC.mallopt(-3, threshold))


class RssPeak:
    """Peak rise of resident memory above its value at entry, sampled by a background thread."""

    def __init__(self, interval: float = 2e-4):
        self.interval = interval
        self.proc = psutil.Process()

    def __enter__(self):
        self.base = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)
        self.rise_mib = (self.peak - self.base) / MIB


def rss_rise_mib(fn) -> float:
    # Give freed heap pages back to the OS first; otherwise malloc reuses them (already
    # resident) before it consults the mmap threshold, and the rise reads 0.
    _LIBC.malloc_trim(0) if _LIBC is not None else None
    with RssPeak() as r:
        fn()
    return r.rise_mib


def contenders(n: int, d: int, block_size: int, rng) -> dict:
    """The four ways to compute the same attention, on the same float32 inputs."""
    q, k, v = (rng.standard_normal((n, d), dtype=np.float32) for _ in range(3))
    # torch picks its fused flash-attention CPU kernel for 4-D (batch, heads, n, d) inputs;
    # for 2-D inputs it falls back to the "math" path, which builds the n x n matrix.
    t4 = [torch.from_numpy(a)[None, None] for a in (q, k, v)]
    t2 = [torch.from_numpy(a) for a in (q, k, v)]

    def torch_sdpa(ts):
        with torch.no_grad():
            return F.scaled_dot_product_attention(*ts)

    def bare():
        # The same formula in place with no input checks: what the checks cost, by difference.
        s = q @ k.T
        s *= np.float32(1 / np.sqrt(d))
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        return s @ v

    return {
        "naive": lambda: scaled_dot_product_attention_inplace(q, k, v)[0],
        "naive_bare": bare,
        "chunked": lambda: chunked_attention(q, k, v, block_size=block_size),
        "torch": lambda: torch_sdpa(t4),
        "torch_math": lambda: torch_sdpa(t2),
    }


def measure_times(n: int, d: int, repeats: int, block_size: int, rng) -> dict:
    fns = contenders(n, d, block_size, rng)
    row = {"n": n, "d": d}
    row["max_abs_diff_chunked_vs_naive"] = float(np.max(np.abs(fns["naive"]() - fns["chunked"]())))
    row["max_abs_diff_torch_vs_naive"] = float(
        np.max(np.abs(fns["naive"]() - fns["torch"]().numpy()[0, 0]))
    )
    # Small sizes are cheap and the most disturbed by other processes: take more repeats.
    reps = repeats * 4 if n <= 1024 else repeats if n <= 4096 else max(1, repeats // 2)
    for name, fn in fns.items():
        row[f"{name}_s"] = best_time(fn, reps)
    row["naive_over_torch_time"] = row["naive_s"] / row["torch_s"]
    row["naive_bare_over_torch_time"] = row["naive_bare_s"] / row["torch_s"]
    row["chunked_over_torch_time"] = row["chunked_s"] / row["torch_s"]
    return row


def measure_memory(row: dict, block_size: int, rng) -> None:
    n = row["n"]
    fns = contenders(n, row["d"], block_size, rng)
    for name, fn in fns.items():
        row[f"{name}_rss_mib"] = rss_rise_mib(fn)
    row["naive_peak_mib"] = peak_mib(fns["naive"])
    row["naive_bare_peak_mib"] = peak_mib(fns["naive_bare"])
    row["chunked_peak_mib"] = peak_mib(fns["chunked"])
    row["score_matrix_mib"] = n * n * 4 / MIB
    row["naive_over_chunked_memory"] = row["naive_peak_mib"] / row["chunked_peak_mib"]


def print_table(rows: list[dict]) -> None:
    print("time: best of repeats, seconds; torch = fused flash kernel on (1, 1, n, d) inputs,")
    print("torch math = the same call on (n, d) inputs, which builds the n x n matrix.")
    print("naive = course_lib.scaled_dot_product_attention_inplace (with its input checks);")
    print("bare = the same formula in 6 lines of numpy, in place, without checks.")
    head = (
        f"{'n':>6} {'naive':>8} {'bare':>8} {'chunked':>8} {'torch':>8} {'t.math':>8} "
        f"{'naive/torch':>11} {'bare/torch':>10} {'chunk/torch':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['n']:>6} {r['naive_s']:>8.4f} {r['naive_bare_s']:>8.4f} {r['chunked_s']:>8.4f} "
            f"{r['torch_s']:>8.4f} {r['torch_math_s']:>8.4f} {r['naive_over_torch_time']:>11.2f} "
            f"{r['naive_bare_over_torch_time']:>10.2f} {r['chunked_over_torch_time']:>11.2f}"
        )
    print()
    print("peak memory during one call, MiB: tracemalloc (numpy only) and sampled RSS rise (all)")
    head = (
        f"{'n':>6} {'n×n f32':>8} | {'naive':>8} {'bare':>8} {'chunked':>8} {'naive/chunk':>11} | "
        f"{'RSS: naive':>10} {'bare':>8} {'chunked':>8} {'torch':>8} {'t.math':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['n']:>6} {r['score_matrix_mib']:>8.1f} | {r['naive_peak_mib']:>8.1f} "
            f"{r['naive_bare_peak_mib']:>8.1f} {r['chunked_peak_mib']:>8.1f} "
            f"{r['naive_over_chunked_memory']:>11.1f} | {r['naive_rss_mib']:>10.1f} "
            f"{r['naive_bare_rss_mib']:>8.1f} {r['chunked_rss_mib']:>8.1f} "
            f"{r['torch_rss_mib']:>8.1f} {r['torch_math_rss_mib']:>8.1f}"
        )


COLORS = {"naive": "C0", "naive_bare": "C1", "chunked": "C2", "torch": "C3", "torch_math": "C4"}
LABELS = {
    "naive": "naive numpy (course_lib)",
    "naive_bare": "naive numpy, bare in-place",
    "chunked": "chunked numpy",
    "torch": "torch SDPA (flash kernel)",
    "torch_math": "torch SDPA (math path)",
}


def plot(rows: list[dict], path: Path, threads: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = np.array([r["n"] for r in rows], dtype=float)
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, style in [("naive", "o-"), ("naive_bare", "o--"), ("chunked", "s-"),
                        ("torch", "^-"), ("torch_math", "v--")]:  # fmt: skip
        ax_t.loglog(
            n, [r[f"{name}_s"] for r in rows], style, color=COLORS[name], label=LABELS[name]
        )
    t0 = rows[-1]["naive_bare_s"]
    ax_t.loglog(n, t0 * (n / n[-1]) ** 2, "k:", label="slope 2 (∝ n²)")
    ax_t.set(xlabel="sequence length n", ylabel="seconds (best of repeats)")
    ax_t.set_title(f"time, d = 64, float32, {threads} thread(s)")
    for name, key, how, style in [
        ("naive", "naive_peak_mib", "tracemalloc", "o-"),
        ("naive_bare", "naive_bare_peak_mib", "tracemalloc", "o--"),
        ("chunked", "chunked_peak_mib", "tracemalloc", "s-"),
        ("torch", "torch_rss_mib", "RSS rise", "^-"),
        ("torch_math", "torch_math_rss_mib", "RSS rise", "v--"),
    ]:
        ax_m.loglog(
            n, [max(r[key], 1e-2) for r in rows], style, color=COLORS[name],
            label=f"{LABELS[name]} ({how})",
        )  # fmt: skip
    ax_m.loglog(n, [r["score_matrix_mib"] for r in rows], "k:", label="one n × n float32 matrix")
    ax_m.axhline(64, color="grey", lw=0.8, ls="--")
    ax_m.set(xlabel="sequence length n", ylabel="peak MiB")
    ax_m.set_title("peak memory during one call")
    for ax in (ax_t, ax_m):
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192, 16384]
    )
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--block-size", type=int, default=512)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--note", default="", help="free text stored with the results")
    args = parser.parse_args(argv)

    rng = seed_everything(0, threads=args.threads)
    load_before = os.getloadavg()
    # The naive version holds about 4 score matrices at its peak; refuse sizes that cannot fit.
    available = psutil.virtual_memory().available
    sizes = [n for n in args.sizes if 5 * n * n * 4 < 0.8 * available]
    for n in sorted(set(args.sizes) - set(sizes)):
        print(f"skipping n = {n}: needs ~{5 * n * n * 4 / 2**30:.1f} GiB, not available")

    rows = []
    with threadpool_limits(limits=args.threads):
        blas = [(p["internal_api"], p["num_threads"]) for p in threadpool_info()]
        print(f"threads: torch {torch.get_num_threads()}, numpy BLAS {blas}; d = {args.d}")
        # Times first, with the allocator's default behaviour; memory afterwards, because
        # fresh_pages_for_large_allocations() cannot be undone and makes big allocations slower.
        for n in sizes:
            rows.append(measure_times(n, args.d, args.repeats, args.block_size, rng))
            print(f"  n = {n}: timed", file=sys.stderr, flush=True)
        fresh = fresh_pages_for_large_allocations()
        for row in rows:
            measure_memory(row, args.block_size, rng)
            print(f"  n = {row['n']}: memory measured", file=sys.stderr, flush=True)

    print_table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "attention.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for r in rows:
            writer.writerow(
                {k: (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]) for k in FIELDS}
            )
    meta = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": args.threads,
        "blas": blas,
        "dtype": "float32",
        "block_size": args.block_size,
        "repeats": args.repeats,
        "timing": "best of repeats (4x as many up to n = 1024, half as many above 4096), after one warm-up call",
        "memory": "numpy: tracemalloc peak during one call; all: sampled RSS rise",
        "glibc_fixed_mmap_threshold": fresh,
        "load_average_1_5_15min": {"before": load_before, "after": os.getloadavg()},
        "note": args.note,
    }
    (args.out / "attention.json").write_text(json.dumps(meta, indent=2) + "\n")
    plot(rows, args.out / "attention.png", args.threads)
    print(f"wrote {args.out / 'attention.csv'}, attention.json, attention.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
