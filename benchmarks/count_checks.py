"""Input checks per generated token: how many calls into the checks a `generate` makes.

Generates 10 tokens with the KV cache from a 4-layer tiny GPT (lecture 11's size, random
weights) under ``sys.setprofile`` and counts the Python calls whose code lives in
``course_lib/``: all of them, those into ``course_lib/_validation.py``, and the checks
(``_validation`` plus every ``check*``/``_check*`` function elsewhere). Prints counts, not times.

    python -m benchmarks.count_checks
"""

from __future__ import annotations

import collections
import sys

import torch

from course_lib import GPT, TINY_GPT_CONFIG, generate

NEW_TOKENS = 10


def main() -> None:
    torch.manual_seed(0)
    model = GPT(TINY_GPT_CONFIG).eval()
    ids = torch.zeros(1, 8, dtype=torch.long)
    calls: collections.Counter = collections.Counter()

    def profile(frame, event, arg):
        path = frame.f_code.co_filename
        if event == "call" and "/course_lib/" in path:
            calls[path.split("/course_lib/")[1], frame.f_code.co_name] += 1

    sys.setprofile(profile)
    generate(model, ids, NEW_TOKENS, temperature=0)
    sys.setprofile(None)
    validation = sum(n for (f, _), n in calls.items() if f == "_validation.py")
    checks = sum(
        n
        for (f, name), n in calls.items()
        if f == "_validation.py" or name.startswith(("check", "_check"))
    )
    print(f"calls into course_lib: {sum(calls.values())}; into _validation.py: {validation}")
    print(f"checks: {checks}, {checks / NEW_TOKENS:.1f} per generated token")
    for (f, name), n in calls.most_common():
        if f == "_validation.py" or name.startswith(("check", "_check")):
            print(f"  {n:4d}  {f}:{name}")


if __name__ == "__main__":
    main()
