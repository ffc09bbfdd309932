"""A class too big for one machine: each cluster task grades its share of the notebooks, and
``merge`` joins the shards' CSVs into the class CSV.

    python -m tools.grade FOLDER --shard I/N --csv out/shard-I.csv   # shard I of N (0 … N-1)
    python -m tools.grade FOLDER --shards N --csv ...                 # I from the environment:
        # SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN) or JOB_COMPLETION_INDEX (Kubernetes)
    python -m tools.grade merge out/*.csv -o class.csv --class FOLDER [--shards N]

**The share.** The notebooks are listed as the one-process command lists them (each folder
walked, ``*.ipynb``), then sorted by path; shard ``I`` of ``N`` grades those at positions ``i``
with ``i % N == I``. The same folder, listed from the same place, gives every task the same
list, so the ``N`` shards cover the class exactly once, whatever the order the tasks run in.

**The merge** refuses a notebook that has a row in two shard CSVs (or twice in one: a shard run
twice, or shards of different ``N``), and, given the class folder (``--class``), notebooks with no
row (a shard that failed or was never run: with ``--shards N`` it names the shards to run again)
and rows of notebooks that are not in the class. Nothing is written then. The columns are the
union of the shards' (a shard whose notebooks have no quiz has no quiz column), in the order one
process writes them; a row is copied as its shard wrote it.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
from collections.abc import Mapping
from pathlib import Path

# Where a cluster puts the task's index: Slurm job arrays, Kubernetes Indexed Jobs.
SLURM_INDEX, SLURM_MIN, SLURM_COUNT = (
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_COUNT",
)
K8S_INDEX = "JOB_COMPLETION_INDEX"
# The columns of an exercise or a quiz item (tools/grading/results.py: label()).
_EXERCISE_COLUMN = re.compile(r"^(exercise (\d+)\.(\d+)|quiz (\d+) item (\d+))$")


class ShardError(ValueError):
    """Bad shard arguments or shard CSVs: the message names what was given and what is needed."""


def _whole(text: str, what: str) -> int:
    if not re.fullmatch(r"\s*[+-]?\d+\s*", text):
        raise ShardError(f"{what} must be a whole number, got {text!r}")
    return int(text)


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)``: shard I of N, numbered from 0 (``"0/4"`` … ``"3/4"``)."""
    need = "I/N, shard I of N numbered from 0 (0/4, 1/4, 2/4, 3/4)"
    if text.count("/") != 1:
        raise ShardError(f"--shard must be {need}, got {text!r}")
    i_text, n_text = text.split("/")
    try:
        index, count = _whole(i_text, "I"), _whole(n_text, "N")
    except ShardError as exc:
        raise ShardError(f"--shard must be {need}: {exc} in {text!r}") from None
    return check_shard(index, count, f"--shard {text}")


def check_shard(index: int, count: int, given: str) -> tuple[int, int]:
    if count < 1:
        raise ShardError(f"{given}: the number of shards N must be at least 1, got {count}")
    if not 0 <= index < count:
        raise ShardError(
            f"{given}: the shard index must be from 0 to {count - 1} for {count} shards "
            f"(numbered from 0), got {index}"
        )
    return index, count


def shard_from_env(count: int, env: Mapping[str, str] = os.environ) -> tuple[int, int]:
    """``--shards N``: this task's index from Slurm's or Kubernetes' environment."""
    if count < 1:
        raise ShardError(f"--shards must be at least 1, got {count}")
    slurm, k8s = env.get(SLURM_INDEX), env.get(K8S_INDEX)
    if slurm is not None and k8s is not None:
        raise ShardError(
            f"--shards {count}: both {SLURM_INDEX}={slurm!r} and {K8S_INDEX}={k8s!r} are set; "
            "give the shard as --shard I/N"
        )
    if slurm is not None:
        first = _whole(env.get(SLURM_MIN, "0"), SLURM_MIN)
        index = _whole(slurm, SLURM_INDEX) - first
        if SLURM_COUNT in env and _whole(env[SLURM_COUNT], SLURM_COUNT) != count:
            raise ShardError(
                f"--shards {count} disagrees with {SLURM_COUNT}={env[SLURM_COUNT]!r}: give "
                f"--shards {env[SLURM_COUNT]} (the array's size)"
            )
        given = f"--shards {count} with {SLURM_INDEX}={slurm}" + (
            f" - {SLURM_MIN}={first}" if first else ""
        )
        return check_shard(index, count, given)
    if k8s is not None:
        return check_shard(
            _whole(k8s, K8S_INDEX), count, f"--shards {count} with {K8S_INDEX}={k8s}"
        )
    raise ShardError(
        f"--shards {count} takes the shard index from {SLURM_INDEX} (a Slurm job array) or "
        f"{K8S_INDEX} (a Kubernetes Indexed Job), and neither is set: give --shard I/N instead"
    )


def share(files: list[Path], index: int, count: int) -> list[Path]:
    """Shard ``index`` of ``count``: the files at positions ``i % count == index`` of the
    sorted list (a file listed twice counts once)."""
    ordered = sorted(set(files), key=str)
    return [f for i, f in enumerate(ordered) if i % count == index]


def _exercise_key(column: str) -> tuple[int, int, int] | None:
    m = _EXERCISE_COLUMN.match(column)
    if not m:
        return None
    if m.group(2):
        return (0, int(m.group(2)), int(m.group(3)))
    return (1, int(m.group(4)), int(m.group(5)))


def _read_shard(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    if not path.is_file():
        raise ShardError(f"merge: {path} is not a file (give the shards' CSV files)")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if not header or header[0] != "notebook" or "passed" not in header:
            first = header[0] if header else "nothing"
            raise ShardError(
                f"merge: {path} is not a CSV written by python -m tools.grade --csv (its first "
                f"column is {first!r}, not 'notebook')"
            )
        if len(set(header)) != len(header):
            raise ShardError(f"merge: {path} repeats a column name in its header")
        rows = list(reader)
    for n, row in enumerate(rows, start=2):
        if None in row or any(v is None for v in row.values()):
            raise ShardError(f"merge: {path} line {n} has not as many cells as the header")
    return header, rows


def merge(
    shards: list[Path], class_files: list[Path] | None = None, count: int | None = None
) -> tuple[list[str], list[dict[str, str]]]:
    """The class CSV's header and rows from the shards' CSVs (see the module's docstring)."""
    if not shards:
        raise ShardError("merge: give the shards' CSV files (e.g. out/shard-*.csv)")
    seen_paths: dict[str, Path] = {}
    for p in shards:
        key = os.path.realpath(p)
        if key in seen_paths:
            raise ShardError(f"merge: {p} is given twice (as {seen_paths[key]} too)")
        seen_paths[key] = p
    lead: list[str] = []
    tail: list[str] = []
    exercises: set[str] = set()
    rows: list[dict[str, str]] = []
    where: dict[str, str] = {}  # notebook -> "file line n"
    for p in shards:
        header, shard_rows = _read_shard(p)
        cut = [i for i, c in enumerate(header) if _exercise_key(c)]
        first, last = (cut[0], cut[-1] + 1) if cut else (header.index("passed"),) * 2
        for part, have in ((header[:first], lead), (header[last:], tail)):
            have.extend(c for c in part if c not in have)
        exercises.update(header[first:last])
        for n, row in enumerate(shard_rows, start=2):
            name = row["notebook"]
            if name in where:
                raise ShardError(
                    f"merge: the notebook {name} has a row in {where[name]} and in {p} line {n}: "
                    "overlapping shards (a shard run twice, or shards of different N?); merge "
                    "one CSV per shard of one run"
                )
            where[name] = f"{p} line {n}"
            rows.append(row)
    if class_files is not None:
        _compare_with_class(rows, class_files, count)
    header = lead + sorted(exercises, key=_exercise_key) + tail
    return header, sorted(rows, key=lambda r: r["notebook"])


def _compare_with_class(
    rows: list[dict[str, str]], class_files: list[Path], count: int | None
) -> None:
    graded = {os.path.abspath(r["notebook"]): r["notebook"] for r in rows}
    ordered = sorted(set(class_files), key=str)
    wanted = {os.path.abspath(f): (i, f) for i, f in enumerate(ordered)}
    problems = []
    missing = [(i, f) for key, (i, f) in sorted(wanted.items()) if key not in graded]
    if missing:
        names = ", ".join(str(f) for _, f in missing[:10]) + (" …" if len(missing) > 10 else "")
        line = f"{len(missing)} of the class's {len(wanted)} notebooks have no row: {names}"
        if count:
            again = sorted({i % count for i, _ in missing})
            line += f" (run shard{'s' * (len(again) > 1)} {', '.join(map(str, again))} of {count} again)"
        problems.append(line)
    extra = sorted(name for key, name in graded.items() if key not in wanted)
    if extra:
        names = ", ".join(extra[:10]) + (" …" if len(extra) > 10 else "")
        problems.append(
            f"{len(extra)} rows name notebooks that are not in the class: {names} (were the "
            "shards graded from another folder, or from another working directory?)"
        )
    if problems:
        raise ShardError("merge: " + "; ".join(problems) + ". Nothing was written.")


def write_merged(header: list[str], rows: list[dict[str, str]], out: Path) -> None:
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([row.get(c, "") for c in header])


def merge_main(argv: list[str], list_notebooks) -> int:
    """``python -m tools.grade merge SHARD.csv ... -o CLASS.csv [--class FOLDER] [--shards N]``;
    ``list_notebooks(paths)`` lists a class's notebooks as the grading command does."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.grade merge",
        description="Join the shards' CSVs (python -m tools.grade --shard I/N --csv ...) into "
        "the class CSV, refusing a notebook graded twice and, with --class, notebooks missing.",
    )
    parser.add_argument("shards", nargs="*", type=Path, help="the shards' CSV files")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the class CSV to write")
    parser.add_argument("--class", dest="class_paths", type=Path, action="append",
                        help="the class's folder (or notebooks), as given to the shards: "
                        "report notebooks with no row")  # fmt: skip
    parser.add_argument("--shards", dest="count", type=int,
                        help="the number of shards, to name those to run again")  # fmt: skip
    args = parser.parse_args(argv)
    if args.count is not None and args.count < 1:
        parser.error(f"--shards must be at least 1, got {args.count}")
    if any(os.path.realpath(args.output) == os.path.realpath(s) for s in args.shards):
        parser.error(f"-o {args.output} is one of the shards: give a new file name")
    if args.output.suffix.lower() != ".csv":
        parser.error(f"-o {args.output}: give a file name ending in .csv")
    if not args.output.parent.is_dir():
        parser.error(f"-o {args.output}: the folder {args.output.parent} does not exist")
    class_files = None
    if args.class_paths:
        missing = [p for p in args.class_paths if not p.exists()]
        if missing:
            parser.error(f"--class {missing[0]} does not exist")
        class_files = list_notebooks(args.class_paths)
        if not class_files:
            parser.error(f"--class {' '.join(map(str, args.class_paths))} holds no notebook")
    try:
        header, rows = merge(args.shards, class_files, args.count)
    except ShardError as exc:
        parser.error(str(exc))
    write_merged(header, rows, args.output)
    print(f"merged {len(args.shards)} shards, {len(rows)} notebooks: wrote {args.output}")
    return 0
