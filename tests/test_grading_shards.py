"""A class graded in shards (``python -m tools.grade --shard I/N`` / ``--shards N``) and merged
(``python -m tools.grade merge``), tools/grading/shards.py.

Fast: the share is a partition of the sorted class, bad shard arguments and environments are
refused with what was given and what is needed, the merge refuses a notebook graded twice and
reports notebooks with no row. Slow: the Slurm job-array script and the Kubernetes Indexed Job
manifest of tools/grading/cluster/, run here with the indices faked through the environment
variables the clusters set, give the same CSV, verdict for verdict, as one process.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.grading import cli
from tools.grading.shards import (
    ShardError,
    merge,
    parse_shard,
    shard_from_env,
    share,
    write_merged,
)

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "tools" / "grading" / "cluster"
SUBMISSIONS = ROOT / "tests" / "data" / "submissions"


# --- the shard of a task -----------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [("0/1", (0, 1)), ("2/3", (2, 3)), ("7/8", (7, 8))])
def test_a_shard_is_i_of_n_numbered_from_zero(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [("3/3", r"--shard 3/3: the shard index must be from 0 to 2 for 3 shards .*got 3"),
     ("-1/2", r"--shard -1/2: the shard index must be from 0 to 1 .*got -1"),
     ("1/0", r"--shard 1/0: the number of shards N must be at least 1, got 0"),
     ("a/b", r"--shard must be I/N, .*: I must be a whole number, got 'a' in 'a/b'"),
     ("1/b", r"N must be a whole number, got 'b'"),
     ("2", r"--shard must be I/N, shard I of N numbered from 0 .*got '2'"),
     ("1/2/3", r"got '1/2/3'"), ("1.5/2", r"got '1.5'")],
)  # fmt: skip
def test_a_bad_shard_says_what_it_got_and_what_it_needs(text, message):
    with pytest.raises(ShardError, match=message):
        parse_shard(text)


def _one_notebook(tmp_path: Path) -> Path:
    shutil.copy(SUBMISSIONS / "01_softmax_ada.ipynb", tmp_path / "a.ipynb")
    return tmp_path


@pytest.mark.parametrize("given", [["--shard", "-1/2"], ["--shard=3/3"], ["--shard", "a/b"],
                                   ["--shards", "0"], ["--shard", "0/2", "--shards", "2"]])  # fmt: skip
def test_the_command_refuses_a_bad_shard_before_grading(tmp_path, capsys, given, monkeypatch):
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    with pytest.raises(SystemExit) as stop:
        cli.main([str(_one_notebook(tmp_path)), *given])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--shard" in err and "note: sandbox" not in err, err


@pytest.mark.parametrize(
    "env, count, expected",
    [({"SLURM_ARRAY_TASK_ID": "3"}, 4, (3, 4)),
     ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_COUNT": "2"}, 2, (1, 2)),
     ({"JOB_COMPLETION_INDEX": "0"}, 8, (0, 8))],
)  # fmt: skip
def test_the_index_comes_from_slurm_or_kubernetes(env, count, expected):
    assert shard_from_env(count, env) == expected


@pytest.mark.parametrize(
    "env, count, message",
    [({}, 4, r"--shards 4 takes the shard index from SLURM_ARRAY_TASK_ID .* neither is set"),
     ({"SLURM_ARRAY_TASK_ID": "4"}, 4, r"SLURM_ARRAY_TASK_ID=4: the shard index must be from 0 to 3.*got 4"),
     ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, 4,
      r"--shards 4 disagrees with SLURM_ARRAY_TASK_COUNT='3'"),
     ({"JOB_COMPLETION_INDEX": "x"}, 2, r"JOB_COMPLETION_INDEX must be a whole number, got 'x'"),
     ({"JOB_COMPLETION_INDEX": "2"}, 2, r"JOB_COMPLETION_INDEX=2: the shard index must be from 0 to 1"),
     ({"JOB_COMPLETION_INDEX": "0", "SLURM_ARRAY_TASK_ID": "0"}, 2, r"both SLURM_ARRAY_TASK_ID='0' and"),
     ({"JOB_COMPLETION_INDEX": "0"}, 0, r"--shards must be at least 1, got 0")],
)  # fmt: skip
def test_a_bad_environment_is_named(env, count, message):
    with pytest.raises(ShardError, match=message):
        shard_from_env(count, env)


@pytest.mark.parametrize("n_files, count", [(10, 3), (5, 8), (1, 1), (7, 7)])
def test_the_shares_partition_the_sorted_class_whatever_the_order_given(n_files, count):
    files = [Path(f"class/s{i:02d}.ipynb") for i in range(n_files)]
    shares = [share(list(reversed(files)) + files[:2], i, count) for i in range(count)]
    assert sorted(f for s in shares for f in s) == files  # each exactly once
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert shares[0][0] == files[0] and all(s == sorted(s) for s in shares)


def test_the_command_grades_nothing_in_an_empty_shard_and_says_so(tmp_path, capsys):
    out = tmp_path / "shard-5.csv"
    assert cli.main([str(_one_notebook(tmp_path)), "--shard", "5/8", "--csv", str(out)]) == 0
    assert "shard 5/8: 0 of the class's 1 notebooks" in capsys.readouterr().err
    assert out.read_text().startswith("notebook,lecture,passed,total,")


def test_a_folder_without_notebooks_is_named_with_what_it_holds(tmp_path, capsys):
    (tmp_path / "answers.py").write_text("x = 1\n")
    with pytest.raises(SystemExit):
        cli.main([str(tmp_path)])
    err = capsys.readouterr().err
    assert f"no notebooks found in {tmp_path}: 1 files, none ending in .ipynb (answers.py)" in err


# --- the merge ---------------------------------------------------------------------------------

HEAD = ["notebook", "lecture"]
TAIL = ["passed", "total", "error", "warning", "uses course_lib", "course_lib evidence",
        "reasons", "seconds", "hidden seed"]  # fmt: skip


def _csv(path: Path, exercises: list[str], rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, HEAD + exercises + TAIL, restval="")
        w.writeheader()
        w.writerows(rows)
    return path


def _row(name: str, **cells) -> dict:
    return {"notebook": name, "lecture": "01_softmax", "passed": "1", "total": "2", **cells}


def test_merge_joins_the_columns_in_the_order_one_process_writes_them(tmp_path):
    a = _csv(tmp_path / "a.csv", ["exercise 1.1", "quiz 1 item 2"],
             [_row("c/z.ipynb", **{"exercise 1.1": "pass", "quiz 1 item 2": "fail"})])  # fmt: skip
    b = _csv(tmp_path / "b.csv", ["exercise 1.10", "exercise 1.2"],
             [_row("c/a.ipynb", **{"exercise 1.2": "fail", "exercise 1.10": "pass"})])  # fmt: skip
    empty = _csv(tmp_path / "c.csv", [], [])
    header, rows = merge([a, b, empty])
    assert header == HEAD + ["exercise 1.1", "exercise 1.2", "exercise 1.10",
                             "quiz 1 item 2"] + TAIL  # fmt: skip
    assert [r["notebook"] for r in rows] == ["c/a.ipynb", "c/z.ipynb"]
    out = tmp_path / "class.csv"
    write_merged(header, rows, out)
    with out.open(newline="") as fh:
        got = list(csv.DictReader(fh))
    assert got[0]["exercise 1.10"] == "pass" and got[0]["exercise 1.1"] == ""
    assert got[1]["quiz 1 item 2"] == "fail" and got[1]["passed"] == "1"


def test_merge_refuses_a_notebook_graded_in_two_shards(tmp_path):
    a = _csv(tmp_path / "shard-0.csv", [], [_row("c/x.ipynb"), _row("c/y.ipynb")])
    b = _csv(tmp_path / "shard-1.csv", [], [_row("c/z.ipynb"), _row("c/y.ipynb")])
    message = (r"the notebook c/y.ipynb has a row in .*shard-0.csv line 3 and in .*shard-1.csv "
               r"line 3: overlapping shards")  # fmt: skip
    with pytest.raises(ShardError, match=message):
        merge([a, b])
    with pytest.raises(ShardError, match=r"shard-0.csv is given twice"):
        merge([a, tmp_path / "." / "shard-0.csv"])


def test_merge_names_the_missing_notebooks_and_the_shards_to_run_again(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    files = [folder / f"s{i}.ipynb" for i in range(5)]
    for f in files:
        f.write_text("{}")
    graded = [_row(str(f)) for i, f in enumerate(files) if i % 3 != 1]  # shard 1 of 3 lost
    shard = _csv(tmp_path / "shards.csv", [], graded)
    with pytest.raises(ShardError, match=r"2 of the class's 5 notebooks have no row: .*s1.ipynb, "
                       r".*s4.ipynb \(run shard 1 of 3 again\)\. Nothing was written"):  # fmt: skip
        merge([shard], files, 3)
    stray = _csv(tmp_path / "stray.csv", [], [_row(str(f)) for f in files] + [_row("x.ipynb")])
    with pytest.raises(
        ShardError, match=r"1 rows name notebooks that are not in the class: x.ipynb"
    ):
        merge([stray], files)
    assert (
        len(merge([_csv(tmp_path / "all.csv", [], [_row(str(f)) for f in files])], files)[1]) == 5
    )


def test_merge_refuses_files_that_are_not_the_graders_csv(tmp_path):
    other = tmp_path / "grades.csv"
    other.write_text("student,score\nada,3\n")
    with pytest.raises(
        ShardError, match=r"grades.csv is not a CSV written by python -m tools.grade"
    ):
        merge([other])
    with pytest.raises(ShardError, match=r"missing.csv is not a file"):
        merge([tmp_path / "missing.csv"])
    ragged = tmp_path / "ragged.csv"
    ragged.write_text(",".join(HEAD + TAIL) + "\nc/x.ipynb,01_softmax,1\n")
    with pytest.raises(ShardError, match=r"ragged.csv line 2 has not as many cells as the header"):
        merge([ragged])
    with pytest.raises(ShardError, match=r"give the shards' CSV files"):
        merge([])


def test_the_merge_command_writes_nothing_when_it_refuses(tmp_path, capsys):
    a = _csv(tmp_path / "shard-0.csv", [], [_row("c/x.ipynb")])
    b = _csv(tmp_path / "shard-1.csv", [], [_row("c/x.ipynb")])
    out = tmp_path / "class.csv"
    with pytest.raises(SystemExit) as stop:
        cli.main(["merge", str(a), str(b), "-o", str(out)])
    assert stop.value.code == 2 and not out.exists()
    assert "overlapping shards" in capsys.readouterr().err
    for argv, message in [([str(a), "-o", str(a)], "is one of the shards"),
                          ([str(a), "-o", str(tmp_path / "class.txt")], "ending in .csv"),
                          ([str(a), "-o", str(out), "--class", str(tmp_path / "nope")],
                           "--class .*nope does not exist"),
                          ([str(a), "-o", str(out), "--shards", "0"], "--shards must be at least 1")]:  # fmt: skip
        with pytest.raises(SystemExit):
            cli.main(["merge", *argv])
        assert re.search(message, capsys.readouterr().err), message
    assert cli.main(["merge", str(a), "-o", str(out)]) == 0 and out.exists()


# --- the cluster files, run with faked indices (slow: they grade real notebooks) ---------------

SEED = ["--hidden-seed", "12345"]


def _class(tmp_path: Path) -> Path:
    folder = tmp_path / "class"
    shutil.copytree(SUBMISSIONS, folder)
    shutil.copy(folder / "01_softmax_ada.ipynb", folder / "05_ada_renamed.ipynb")
    return folder


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {r["notebook"]: {k: v for k, v in r.items() if k != "seconds"} for r in rows}


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("one")
    folder = _class(tmp)
    out = tmp / "one.csv"
    assert cli.main([str(folder), "--csv", str(out), "--jobs", "2", *SEED]) == 1
    return folder, out


def _env(**extra: str) -> dict[str, str]:
    drop = ("SLURM_", "JOB_COMPLETION_INDEX")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **extra}


@pytest.mark.slow
def test_the_slurm_array_script_merged_equals_one_process(tmp_path, one_process):
    folder, one = one_process
    script = CLUSTER / "grade_array.sbatch"
    text = script.read_text()
    assert re.search(r"^#SBATCH --array=0-7$", text, re.M)
    out = tmp_path / "shards"
    # an array numbered 1-3 (SLURM_ARRAY_TASK_MIN=1): shards 0, 1 and 2 of 3
    for task in (1, 2, 3):
        env = _env(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_MIN="1",
                   SLURM_ARRAY_TASK_COUNT="3", SLURM_CPUS_PER_TASK="1", CLASS_DIR=str(folder),
                   OUT_DIR=str(out), PYTHON=sys.executable, GRADE_ARGS=" ".join(SEED))  # fmt: skip
        run = subprocess.run(["bash", str(script)], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        assert f"note: shard {task - 1}/3:" in run.stderr
    merged = tmp_path / "class.csv"
    shards = sorted(out.glob("shard-*.csv"))
    assert [p.name for p in shards] == ["shard-0.csv", "shard-1.csv", "shard-2.csv"]
    assert cli.main(["merge", *map(str, shards), "-o", str(merged), "--class", str(folder),
                     "--shards", "3"]) == 0  # fmt: skip
    assert _rows(merged) == _rows(one)
    assert merged.read_text().splitlines()[0] == one.read_text().splitlines()[0]


@pytest.mark.slow
def test_the_kubernetes_indexed_job_merged_equals_one_process(tmp_path, one_process):
    folder, one = one_process
    job = yaml.safe_load((CLUSTER / "grade_indexed_job.yaml").read_text())
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    count = job["spec"]["completions"]
    assert count == job["spec"]["parallelism"] == int(env["SHARDS"]) == 8
    command = container["command"]
    assert command[:2] == ["sh", "-c"] and command[2].count(".venv/bin/python") == 1
    shell = command[2].replace(".venv/bin/python", sys.executable)
    out = tmp_path / "shards"
    for index in range(count):  # 6 notebooks in 8 shards: two pods have nothing to grade
        run_env = _env(**{**env, "CLASS_DIR": str(folder), "OUT_DIR": str(out),
                          "GRADE_ARGS": " ".join(SEED), "JOB_COMPLETION_INDEX": str(index)})  # fmt: skip
        run = subprocess.run(["sh", "-c", shell], cwd=ROOT, env=run_env, capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
    merged = tmp_path / "class.csv"
    shards = sorted(out.glob("shard-*.csv"))
    assert len(shards) == count
    assert cli.main(["merge", *map(str, shards), "-o", str(merged), "--class", str(folder)]) == 0
    assert _rows(merged) == _rows(one)
    # the merge of a lost pod's shards is refused, naming what to run again
    with pytest.raises(SystemExit):
        cli.main(["merge", *map(str, shards[1:]), "-o", str(tmp_path / "part.csv"),
                  "--class", str(folder), "--shards", str(count)])  # fmt: skip
    assert not (tmp_path / "part.csv").exists()
