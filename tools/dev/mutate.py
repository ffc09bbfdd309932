"""Mutation check: put one subtle bug at a time into a copy of course_lib, run the tests that
should notice, and report every mutant they let through (a *survivor*).

    .venv/bin/python -m tools.dev.mutate              # all mutants (make mutants); exit 1 on a survivor
    .venv/bin/python -m tools.dev.mutate softmax bleu # only mutants whose name contains one of these

A maintainer's target, not part of ``make test``: it runs pytest once per mutant. Every
mutant is an exact text replacement that must match exactly once (a stale mutant is an error,
so the list follows the code). When you fix a bug the tests missed, add its mutant here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutant:
    name: str  # area/what the bug is
    path: str  # file under the repository root
    old: str  # text that must occur exactly once in the file
    new: str  # what it becomes
    tests: tuple[str, ...]  # test files (or node ids) that must fail


T_SOFTMAX = ("tests/test_softmax.py", "tests/test_online_softmax.py")
T_ATTN = ("tests/test_attention.py",)
T_CHUNK = ("tests/test_chunked_attention.py",)
T_LAYERS = ("tests/test_layers.py", "tests/test_pinned_behaviour.py")
T_BLEU = ("tests/test_bleu.py",)
T_TOK = ("tests/test_tokenization.py",)
T_BERT_DATA = ("tests/test_pinned_behaviour.py", "tests/test_pretraining_data.py")
T_DECODE = ("tests/test_pinned_behaviour.py", "tests/test_translation_models.py")
T_TRAIN = ("tests/test_pinned_behaviour.py", "tests/test_translation_models.py")
T_PRETRAINED = ("tests/test_pinned_behaviour.py",)
T_BAD_TORCH = ("tests/test_bad_inputs_torch.py",)

MUTANTS = [
    # --- softmax
    Mutant("softmax/no max-subtraction", "course_lib/softmax.py",
           "    return arr - m, m\n", "    return arr, m\n", T_SOFTMAX + T_ATTN),
    Mutant("softmax/normalised over the whole array", "course_lib/softmax.py",
           "exactly\n    return e / np.sum(e, axis=axis, keepdims=True)\n",
           "exactly\n    return e / np.sum(e)\n",
           T_SOFTMAX),
    Mutant("softmax/log_softmax off by log", "course_lib/softmax.py",
           "    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))",
           "    return z - np.log1p(np.sum(np.exp(z), axis=axis, keepdims=True))", T_SOFTMAX),
    Mutant("softmax/online: old sum not rescaled", "course_lib/softmax.py",
           "    new_sum = rescale * running_sum + np.sum(p, axis=-1)",
           "    new_sum = running_sum + np.sum(p, axis=-1)", T_SOFTMAX + T_CHUNK),
    Mutant("softmax/inplace: no max-subtraction", "course_lib/softmax.py",
           "    x -= np.max(x, axis=axis, keepdims=True)\n", "", T_ATTN),
    # --- attention
    Mutant("attention/scaled by d_k instead of sqrt(d_k)", "course_lib/attention.py",
           "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])",
           "scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]", T_ATTN),
    Mutant("attention/mask inverted", "course_lib/attention.py",
           "scores = np.where(mask, scores, -np.inf)", "scores = np.where(~mask, scores, -np.inf)",
           T_ATTN),
    Mutant("attention/inplace: mask inverted", "course_lib/attention.py",
           "np.copyto(scores, -np.inf, where=~m)", "np.copyto(scores, -np.inf, where=m)", T_ATTN),
    Mutant("attention/inplace: unscaled", "course_lib/attention.py",
           "scores = (q * q.dtype.type(1.0 / np.sqrt(q.shape[-1]))) @ np.swapaxes(k, -1, -2)",
           "scores = q @ np.swapaxes(k, -1, -2)", T_ATTN),
    Mutant("attention/torch MHA: dropout never applied", "course_lib/nn/attention.py",
           "return (weights if dropout is None else dropout(weights)) @ v, weights",
           "return weights @ v, weights", T_LAYERS),
    Mutant("attention/torch MHA: unscaled", "course_lib/nn/attention.py",
           "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
           "scores = q @ k.transpose(-2, -1)", T_LAYERS),
    Mutant("layers/pre-LN residual adds norm(x)", "course_lib/nn/residual.py",
           "        return x + dropout(sublayer(norm(x)))",
           "        return norm(x) + dropout(sublayer(norm(x)))", T_LAYERS),
    Mutant("layers/gelu_new is exact gelu", "course_lib/nn/feedforward.py",
           'return F.gelu(x, approximate="tanh")', "return F.gelu(x)", T_LAYERS),
    # --- masks
    Mutant("masks/causal mask upper-triangular", "course_lib/attention.py",
           "return np.tril(np.ones((n, n), dtype=bool))", "return np.triu(np.ones((n, n), dtype=bool))",
           T_ATTN),
    Mutant("masks/padding keeps one key too many", "course_lib/attention.py",
           "return (np.arange(n)[None, :] < lengths[:, None])[:, None, :]",
           "return (np.arange(n)[None, :] <= lengths[:, None])[:, None, :]", T_ATTN),
    Mutant("masks/torch causal mask upper-triangular", "course_lib/nn/attention.py",
           "dtype=torch.bool, device=device).tril(diagonal=start)",
           "dtype=torch.bool, device=device).triu(diagonal=start)",
           T_LAYERS),
    # --- BLEU
    Mutant("bleu/clipping takes the max", "course_lib/bleu/counting.py",
           "return ngram_counts(hypothesis, n) & max_ref", "return ngram_counts(hypothesis, n) | max_ref",
           T_BLEU),
    Mutant("bleu/brevity penalty inverted", "course_lib/bleu/counting.py",
           "math.exp(1 - ref_len / sys_len)", "math.exp(1 - sys_len / ref_len)", T_BLEU),
    Mutant("bleu/closest reference: longer on a tie", "course_lib/bleu/counting.py",
           "key=lambda r: (abs(r - hyp_len), r)", "key=lambda r: (abs(r - hyp_len), -r)", T_BLEU),
    Mutant("bleu/vectorised clipping takes the max", "course_lib/bleu/statistics.py",
           "np.minimum(hyp_count, max_ref_count)", "np.maximum(hyp_count, max_ref_count)", T_BLEU),
    Mutant("bleu/exp smoothing by thirds", "course_lib/bleu/formula.py",
           "                halvings *= 2\n", "                halvings *= 3\n", T_BLEU),
    # --- tokenisation
    Mutant("tokenisation/13a splits every hyphen", "course_lib/bleu/tokenizer_13a.py",
           '_HYPHEN_AFTER_DIGIT = re.compile(r"(?<=[0-9])-")', '_HYPHEN_AFTER_DIGIT = re.compile(r"-")',
           T_BLEU),
    Mutant("tokenisation/WordPiece shortest match first", "course_lib/tokenization/bert_wordpiece.py",
           "            end -= 1\n", "            end -= 2\n", T_TOK),
    Mutant("tokenisation/translation keeps the final full stop", "course_lib/data/translation/batches.py",
           "    while tokens and tokens[-1] in \".!?\":\n        tokens.pop()\n", "",
           ("tests/test_translation_data.py",)),
    # --- BERT data
    Mutant("bert data/MLM rule 78/12/10", "course_lib/data/pretraining.py",
           "    masked[picked & (action < 0.8)] = mask_id\n    to_random = picked & (action >= 0.8) & (action < 0.9)",
           "    masked[picked & (action < 0.78)] = mask_id\n    to_random = picked & (action >= 0.78) & (action < 0.9)",
           T_BERT_DATA),
    Mutant("bert data/special tokens can be masked", "course_lib/data/pretraining.py",
           "    picked = (rng.random(ids.shape) < mask_prob) & ~special\n",
           "    picked = rng.random(ids.shape) < mask_prob\n", T_BERT_DATA),
    Mutant("bert data/word vector = first piece", "course_lib/pretrained.py",
           "return hidden[:, i : i + len(pieces)].mean(dim=1)", "return hidden[:, i]", T_PRETRAINED),
    # --- decoding
    Mutant("decoding/length penalty counts <bos>", "course_lib/models/decoding.py",
           "return score / (len(seq) - 1) ** alpha", "return score / len(seq) ** alpha", T_DECODE),
    Mutant("decoding/greedy never stops at <eos>", "course_lib/models/decoding.py",
           "            done |= next_word == eos_id\n", "", T_DECODE),
    # --- training
    Mutant("training/smoothing window one too long", "course_lib/training.py",
           "            if i >= window:\n", "            if i > window:\n", T_TRAIN),
    Mutant("training/warm-up starts at lr", "course_lib/training.py",
           "        return lr * (step + 1) / warmup", "        return lr", T_TRAIN),
    Mutant("training/linear decay never reaches 0", "course_lib/training.py",
           "        return lr * (1.0 - progress)", "        return lr * (1.0 - 0.5 * progress)", T_TRAIN),
    # --- bad input (issue 18): checks that stop a silent wrong answer
    Mutant("bad input/train goes on with a nan loss", "course_lib/_validation.py",
           "    if not torch.isfinite(loss).all():\n", "    if False:\n", T_BAD_TORCH),
    Mutant("bad input/MLM loss over no masked position", "course_lib/models/bert.py",
           "    if not (batch[\"mlm_labels\"] != IGNORE_INDEX).any():\n", "    if False:\n", T_BAD_TORCH),
    Mutant("bad input/a KVCache filled by another model", "course_lib/nn/cache.py",
           "        if self.layers and len(self.layers) != num_layers:",
           "        if False:", T_BAD_TORCH),
    Mutant("bad input/mean_pool of an all-padding row is 0", "course_lib/models/classifier.py",
           "    if len(empty):\n", "    if False:\n", T_BAD_TORCH),
    Mutant("bad input/token ids out of the vocabulary", "course_lib/_validation.py",
           "    if vocab_size is not None and (ids.min() < 0 or ids.max() >= vocab_size):",
           "    if False:", T_BAD_TORCH),
]  # fmt: skip


def _copy_repo(dest: Path) -> None:
    for name in ("course_lib", "tests", "tools"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


def run(mutants: list[Mutant]) -> list[str]:
    """Apply each mutant in a scratch copy, run its tests; return the names of the survivors."""
    survivors = []
    env = {**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        work = Path(tmp)
        _copy_repo(work)
        env["PYTHONPATH"] = str(work)
        for m in mutants:
            path = work / m.path
            original = path.read_text(encoding="utf-8")
            if original.count(m.old) != 1:
                raise SystemExit(f"stale mutant {m.name!r}: its text occurs "
                                 f"{original.count(m.old)} times in {m.path}")  # fmt: skip
            path.write_text(original.replace(m.old, m.new), encoding="utf-8")
            start = time.perf_counter()
            try:
                result = subprocess.run(
                    [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                     *m.tests],
                    cwd=work, env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
            finally:
                path.write_text(original, encoding="utf-8")
            seconds = time.perf_counter() - start
            killed = result.returncode != 0
            if result.returncode not in (0, 1):  # 1 = tests failed; others = could not run
                print(result.stdout[-2000:], result.stderr[-2000:])
            print(f"{'killed  ' if killed else 'SURVIVED'} {m.name}  ({seconds:.0f} s)", flush=True)
            if not killed:
                survivors.append(m.name)
    return survivors


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    chosen = [m for m in MUTANTS if not argv or any(a in m.name for a in argv)]
    survivors = run(chosen)
    print(f"{len(chosen)} mutants, {len(chosen) - len(survivors)} killed, "
          f"{len(survivors)} survived{': ' + '; '.join(survivors) if survivors else ''}")  # fmt: skip
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
