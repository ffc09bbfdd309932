"""No exercise notebook, lecture or printed hint gives away an answer an exercise asks for.

``ANSWERS`` lists, per exercise, the values its check expects on the inputs the student sees
(numbers as the check computes them, strings a construction must contain), each with the words
that name it. Every text of the exercise notebook (markdown, code and stored outputs) and of its
lecture is searched: a value within ``WINDOW`` characters of one of its words is a leak. The
values are taken from the checks themselves where a check exposes them, so a changed answer
moves the test with it. Summaries that state an answer live in ``solution-only`` cells of
``solutions/`` (left out of the exercises by tools/notebooks/make_exercises.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_lib.checks import ExerciseError, lecture01, lecture04, lecture08, lecture10, lecture11

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 60


def _numbers(value: float) -> list[str]:
    """The ways a prose or a print would write ``value``."""
    if float(value).is_integer():
        return [str(int(value))]
    return sorted({f"{value:.3f}".rstrip("0"), f"{value:.4f}", f"{100 * value:.1f} %",
                   f"{100 * value:.1f}%"})  # fmt: skip


ANSWERS = {
    # exercise: (notebook stem, [(pattern of the value, words that name it)])
    "1.4": ("01_softmax", [(_numbers(16), ["saturat", "half", "0.5"])]),
    "4.4": (
        "04_positional_encoding",
        [(_numbers(lecture04._first_below_half(64)), ["half", "k =", "k=", "distance"])],
    ),  # fmt: skip
    "8.4": ("08_bert", [(_numbers(lecture08._expected_fractions(1000)[0]), ["change"])]),
    "10.4": (
        "10_attention_at_scale",
        [
            (_numbers(lecture10._first_inf("float32")), ["float32", "overflow", "inf"]),
            (_numbers(lecture10._first_inf("float64")), ["float64", "overflow", "inf"]),
        ],
    ),  # fmt: skip
    "6.5": ("06_bleu", [(["meeting was not cancelled", "meeting was n't cancelled"], [""])]),
    "9.4": (
        "09_attention_visualisation",
        [
            (["(1, 1)", "layer 1, head 1"], ["previous"]),
            (["(1, 0)", "layer 1, head 0"], ["[CLS]", "cls"]),
        ],
    ),
    "12.3": ("12_fine_tuning", [(["(3e-4, 2)", "(0.0003, 2)"], [""])]),
    "12.4": ("12_fine_tuning", [(["332"], ["wins", "right only"]), (["147"], ["right only"])]),
    "13.1": ("13_modern_transformer", [(_numbers(29), ["never", "turn", "slow"])]),
    "13.3": ("13_modern_transformer", [(["np.tile"], ["not"])]),
    "13.4": (
        "13_modern_transformer",
        [(['predicted = "values"', "predicted = 'values'", "only the values"], [""])],
    ),
    "14.4": (
        "14_assistant",
        [(["answers 6", "replies 6", 'predicted = "6"', "predicted = '6'", "largest count"], [""])],
    ),
    "16.1": ("16_open_models", [(_numbers(0.7 / 0.9) + _numbers(0.2 / 0.9), ["weight"])]),
    "16.4": ("16_open_models", [(["575668224", "575,668,224"], [""])]),
    "3.4": ("03_multi_head_attention", [(["3 h d_{head} + d_{model}"], [""])]),
    "11.3": (
        "11_gpt",
        [
            (["1365", "1,365"], ["token", "fit", "GiB"]),
            (["budget_bytes // (2", "budget_bytes // per_token"], [""]),
        ],
    ),
    "11.5": ("11_gpt", [(["(1 - q) ** n", "1 - (1 - q", "(1 - q_i)^n"], [""])]),
    # the constructions, now functions of hidden inputs: their rules
    "2.4": ("02_qkv_self_attention", [(["share / (1 - share)"], [""])]),
    "3.5": ("03_multi_head_attention", [(["share / (1 - share)"], [""])]),
    "5.5": (
        "05_transformer_layer",
        [(["c\\,x + t", "c x + t", "c·x + t", "(token - token.mean()) / token.std()"], [""])],
    ),
    "7.4": ("07_translation", [(["np.eye(v)[0]", "p_first[a] / v"], [""])]),
    "9.1": ("09_attention_visualisation", [(["offset=-1)`"], ["diagonal"])]),
}


def _texts(path: Path) -> list[str]:
    """Every text of a notebook: sources of all cells and their stored outputs."""
    out = []
    for cell in nbformat.read(path, as_version=4).cells:
        out.append(cell.source)
        for o in cell.get("outputs", []):
            if "text" in o:
                out.append("".join(o["text"]))
            for kind in ("text/plain", "text/markdown", "text/html"):
                if kind in o.get("data", {}):
                    out.append("".join(o["data"][kind]))
    return out


def leaks(texts: list[str], values: list[str], words: list[str]) -> list[str]:
    """The places where one of ``values`` stands within WINDOW characters of one of ``words``."""
    found = []
    for text in texts:
        low = text.lower()
        for value in values:
            pattern = re.escape(value.lower())
            if value[0].isalnum():
                pattern = r"(?<![\w.])" + pattern
            if value[-1].isalnum():
                pattern += r"(?![\w])"
            for m in re.finditer(pattern, low):
                around = low[max(0, m.start() - WINDOW) : m.end() + WINDOW]
                if any(w.lower() in around for w in words):
                    found.append(text[max(0, m.start() - WINDOW) : m.end() + WINDOW])
    return found


@pytest.mark.parametrize("exercise", sorted(ANSWERS), ids=str)
@pytest.mark.parametrize("where", ["exercises", "notebooks"])
def test_no_answer_in_the_exercise_notebook_or_the_lecture(exercise, where):
    stem, answers = ANSWERS[exercise]
    path = ROOT / where / f"{stem}.ipynb"
    texts = _texts(path)
    for values, words in answers:
        hits = leaks(texts, values, words)
        assert not hits, f"{path.name} gives away the answer of {exercise}: {hits[:3]}"


def test_the_search_finds_a_leak_in_a_solution_only_cell():
    """It would have caught the summaries the issue found (they now live in solutions/ only)."""
    texts = _texts(ROOT / "solutions" / "01_softmax.ipynb")
    assert leaks(texts, *ANSWERS["1.4"][1][0])
    texts = _texts(ROOT / "solutions" / "04_positional_encoding.ipynb")
    assert leaks(texts, *ANSWERS["4.4"][1][0])


def _distinct_secret() -> str:
    """Exercise 11.5's first expected count (the confident position, T = 0.5, no top-p)."""
    logits, t, p, n = lecture11._distinct_cases(0)[0]
    return f"{lecture11._distinct_values(logits, t, p, n)['right']:.4f}"


@pytest.mark.parametrize(
    ("check", "answer", "secret"),
    [
        (lecture01.check_saturation, lambda *a: None, "16"),
        (lecture04.check_half_distance, lambda d: 27, "28"),
        (lecture08.check_masking_statistics, lambda v, n, rng: (0.2, 0.1), "0.135"),
        (lecture10.check_overflow_points, lambda d: 88, "89"),
        (lecture11.check_max_cached_tokens, lambda *a: 1000, "1365"),
        (lecture11.check_distinct_tokens, lambda *a: 3.0, _distinct_secret()),
    ],
)
def test_a_failed_predict_then_measure_check_never_prints_the_value(check, answer, secret):
    args = (answer, 8, None) if check is lecture01.check_saturation else (answer,)
    if check is lecture01.check_saturation:  # a right measurement, a wrong conclusion
        args = (_mean_top_weight, 8, None)
    with pytest.raises(ExerciseError) as err:
        check(*args)
    text = str(err.value).replace("0.1350", "0.135")
    assert re.search(r"too (low|high)", text), text
    assert not re.search(rf"(?<![\d.]){re.escape(secret)}(?![\d])", text), text


def _mean_top_weight(d_k, n_keys, scaled, rng, n_queries=500):
    q = rng.standard_normal((n_queries, 1, d_k))
    k = rng.standard_normal((n_queries, n_keys, d_k))
    s = (q @ k.transpose(0, 2, 1))[:, 0] / (np.sqrt(d_k) if scaled else 1.0)
    e = np.exp(s - s.max(-1, keepdims=True))
    return float((e / e.sum(-1, keepdims=True)).max(-1).mean())


# -- the closing summaries of the exercise notebooks: ideas, never an exercise's answer -------

# Per exercise, how its answer was once written in a summary (words and formulas); they stay
# in the solution-only cells of solutions/ (test_the_summary_search_finds_the_old_answers).
SUMMARY_ANSWERS = {
    "03_multi_head_attention": {"3.1": ["swap of two axes"]},
    "04_positional_encoding": {"4.2": ["four diagonal blocks"], "4.3": ["same summary"]},
    "05_transformer_layer": {"5.4": ["2(4d^2 + 4d)"]},
    "08_bert": {"8.4": ["fewer input tokens change"]},
    "10_attention_at_scale": {"10.1": [r"e^{m_\text{old} - m_\text{new}}"]},
    "11_gpt": {
        "11.1": ["ignore_index", "its *target*"],
        "11.2": ["cross *p*", "crosses *p*"],
        "11.3": ["2 · layers", "fewer heads are wider"],
        "11.5": ["1 - (1 - q", "divides the scores by `T` first"],
    },
    "12_fine_tuning": {
        "12.1": ["*real* tokens", "-\\infty", "-np.inf"],
        "12.2": [r"\ln c", "a little above"],
        "12.3": ["validation data"],
    },
    "13_modern_transformer": {
        "13.3": ["np.repeat", "next to each other"],
        "13.4": ["only the values"],
    },
    "14_assistant": {
        "14.1": ["up to and including"],
        "14.2": ["alpha / r"],
        "14.3": ["log sigmoid", "logaddexp"],
        "14.4": ["answers 6", "largest count"],
        "14.5": ["d / 2"],
    },
    "15_inference": {
        "15.1": ["(hi - lo) / 255"],
        "15.2": ["d * (v - 16)"],
        "15.3": ["max(0, p - q)"],
        "15.4": ["2 * kv_heads * head_dim", "kv_lora_rank + qk_rope_head_dim"],
    },
    "16_open_models": {"16.2": ["how often each expert is chosen by how probable"]},
    "17_rl": {"17.2": ["never clipped"], "17.4": ["k-subsets"]},
    "18_evaluation": {"18.1": ["characters of"], "18.4": ["trailing spaces"]},
}

# A formula or a code span in a summary with one of these is a rule written out, not an idea.
OPERATOR = re.compile(r"=|\+|\*|/|\^|\s[<>]\s|\\frac|\\cdot|\\times|\\le|\\ge| - ")
SPAN = re.compile(r"\$[^$]+\$|`[^`]+`")
EXERCISE_NOTEBOOKS = sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))


def _summary(path: Path) -> str:
    cells = nbformat.read(path, as_version=4).cells
    found = [c.source for c in cells if c.cell_type == "markdown" and "## Summary" in c.source]
    assert len(found) == 1, f"{path.name}: {len(found)} summary cells"
    return found[0]


@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=lambda p: p.stem)
def test_exercise_summaries_name_ideas_not_answers(path):
    summary = re.sub(r"\s+", " ", _summary(path))
    formulas = [
        span
        for span in SPAN.findall(summary)
        if OPERATOR.search(span) and not re.fullmatch(r"`[\w./-]+\.(ipynb|py)`", span)
    ]
    assert not formulas, f"{path.name}: the summary writes out rules: {formulas}"
    low = summary.lower()
    for exercise, phrases in SUMMARY_ANSWERS.get(path.stem, {}).items():
        said = [p for p in phrases if p.lower() in low]
        assert not said, f"{path.name}: the summary states the answer of {exercise}: {said}"


def test_the_summary_search_finds_the_old_answers():
    """Each phrase of SUMMARY_ANSWERS is in its solutions notebook (a solution-only cell), so
    the search above would have caught the summaries that stated them."""
    for stem, answers in SUMMARY_ANSWERS.items():
        text = re.sub(r"\s+", " ", " ".join(_texts(ROOT / "solutions" / f"{stem}.ipynb")))
        text = text.lower()
        for exercise, phrases in answers.items():
            assert any(p.lower() in text for p in phrases), (stem, exercise)
    assert OPERATOR.search("`(alpha / r) x A^T B^T`") and OPERATOR.search("`r <= p / q`")
    assert not OPERATOR.search(r"$\sqrt{d_k}$") and not OPERATOR.search("`<eos>`")
