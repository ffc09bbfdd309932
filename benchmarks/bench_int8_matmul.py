"""int8 weight-only matmul (lecture 15's :class:`course_lib.Int8Linear`) against float32, one thread.

    python benchmarks/bench_int8_matmul.py                   # a 576 x 1536 layer (SmolLM2's MLP)
    python benchmarks/bench_int8_matmul.py --tokens 1 64 --repeats 50

The layer maps 576 features to 1536 (SmolLM2-135M's ``up_proj``). For each batch of tokens it
times ``nn.Linear`` (float32 weight) and ``Int8Linear`` (int8 weight + a float32 scale per output
channel, de-quantised on the fly: ``x @ (scale * q).T``), best of ``--repeats``, and prints:

* the time ratio int8 / fp32 (> 1: the course's int8 layer is slower; it converts the whole
  weight to float32 at every call, so it saves memory, not time: a real int8 kernel reads the
  int8 bytes directly);
* the memory ratio of the stored weights: (1 byte a weight + 4 bytes a row) / (4 bytes a
  weight), which must be <= 0.3 (asserted), and the outputs' largest difference.

Writes ``benchmarks/results/int8_matmul.json`` with ``--out``. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from pathlib import Path

import torch

from course_lib import Int8Linear, best_time, seed_everything


def weight_bytes(layer: torch.nn.Module) -> int:
    """Bytes of the stored weight (and scales): parameters and buffers, bias excluded."""
    tensors = (
        [*layer.buffers(), layer.weight] if hasattr(layer, "weight") else list(layer.buffers())
    )
    return sum(t.numel() * t.element_size() for t in tensors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--in-features", type=int, default=576)
    parser.add_argument("--out-features", type=int, default=1536)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 256])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    seed_everything(0, threads=1)
    fp32 = torch.nn.Linear(args.in_features, args.out_features)
    int8 = Int8Linear.from_linear(fp32)
    memory_ratio = weight_bytes(int8) / weight_bytes(fp32)
    assert memory_ratio <= 0.3, memory_ratio
    rows = []
    print(f"{args.in_features} x {args.out_features} layer, 1 thread, best of {args.repeats}")
    print(f"{'tokens':>6} {'fp32 ms':>9} {'int8 ms':>9} {'int8/fp32':>10} {'max |diff|':>11}")
    with torch.no_grad():
        for n in args.tokens:
            x = torch.randn(n, args.in_features)
            t_fp32 = best_time(lambda x=x: fp32(x), args.repeats)
            t_int8 = best_time(lambda x=x: int8(x), args.repeats)
            diff = (fp32(x) - int8(x)).abs().max().item()
            rows.append({"tokens": n, "fp32_s": t_fp32, "int8_s": t_int8,
                         "time_ratio": t_int8 / t_fp32, "max_abs_diff": diff})  # fmt: skip
            print(f"{n:>6} {1e3 * t_fp32:>9.3f} {1e3 * t_int8:>9.3f} {t_int8 / t_fp32:>10.2f} {diff:>11.2e}")  # fmt: skip
    print(f"memory: int8 + scales {weight_bytes(int8):,} B / fp32 {weight_bytes(fp32):,} B "
          f"= {memory_ratio:.4f} (<= 0.3)")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({
            "layer": [args.in_features, args.out_features], "threads": 1, "rows": rows,
            "memory_ratio": memory_ratio, "machine": platform.processor() or platform.machine(),
            "load_average": os.getloadavg()[0], "date": datetime.date.today().isoformat(),
        }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
