"""Sampling filters on hand-made distributions, and generate() with and without the KV cache."""

import math

import pytest
import torch

from course_lib import (
    GPT,
    GPTConfig,
    KVCache,
    generate,
    next_token,
    next_token_table,
    top_k_filter,
    top_p_filter,
)
from course_lib.tokenization import train_bpe


def _logits(probs) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float64).log()


def _kept(filtered: torch.Tensor) -> list[int]:
    return torch.isfinite(filtered).nonzero()[:, -1].tolist()


@pytest.mark.parametrize(
    ("k", "kept"), [(1, [2]), (2, [0, 2]), (3, [0, 2, 3]), (5, [0, 1, 2, 3, 4])]
)
def test_top_k_keeps_exactly_the_k_most_probable(k, kept):
    logits = _logits([0.25, 0.05, 0.4, 0.2, 0.1])
    out = top_k_filter(logits, k)
    assert _kept(out) == kept
    assert torch.equal(out[kept], logits[kept])  # survivors are unchanged


def test_top_k_keeps_exactly_k_when_values_tie():
    out = top_k_filter(torch.zeros(2, 6), 3)
    assert torch.isfinite(out).sum(-1).tolist() == [3, 3]


@pytest.mark.parametrize(
    ("p", "kept"),
    [(0.5, [1]), (0.51, [1, 3]), (0.8, [1, 3]), (0.81, [1, 3, 0]), (0.95, [1, 3, 0]),
     (0.96, [1, 3, 0, 2]), (1.0, [0, 1, 2, 3])],
)  # fmt: skip
def test_top_p_keeps_the_smallest_set_reaching_p(p, kept):
    # sorted: token 1 (0.5), token 3 (0.3), token 0 (0.15), token 2 (0.05)
    out = top_p_filter(_logits([0.15, 0.5, 0.05, 0.3]), p)
    assert sorted(_kept(out)) == sorted(kept)
    probs = torch.tensor([0.15, 0.5, 0.05, 0.3], dtype=torch.float64)
    assert probs[kept].sum() >= p - 1e-9  # it reaches p ...
    assert probs[kept[:-1]].sum() < p  # ... and one token fewer would not


def test_top_p_works_row_by_row_on_float32():
    logits = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]))
    assert top_p_filter(logits, 0.75).isfinite().tolist() == [[True, True, False]] + [
        [False, True, True]
    ]


@pytest.mark.parametrize(
    ("fn", "arg", "error", "match"),
    [
        (top_k_filter, 0, ValueError, "top_k"),
        (top_k_filter, 1.5, TypeError, "top_k"),
        (top_p_filter, 0.0, ValueError, r"top_p must be in \(0, 1\]"),
        (top_p_filter, 1.2, ValueError, "top_p"),
    ],
)
def test_filter_errors(fn, arg, error, match):
    with pytest.raises(error, match=match):
        fn(torch.zeros(4), arg)


def test_filters_refuse_integer_logits():
    with pytest.raises(TypeError, match="logits"):
        top_k_filter(torch.zeros(4, dtype=torch.long), 2)


def test_next_token_greedy_and_temperature():
    logits = torch.tensor([[0.0, 3.0, 1.0]])
    assert next_token(logits, temperature=0).tolist() == [1]
    # a very low temperature concentrates all mass on the argmax
    gen = torch.Generator().manual_seed(0)
    assert all(next_token(logits, 1e-3, generator=gen).item() == 1 for _ in range(20))
    # top_k=1 is greedy even at a high temperature
    assert next_token(logits, 5.0, top_k=1, generator=gen).tolist() == [1]


def test_sampling_frequencies_follow_the_filtered_distribution():
    gen = torch.Generator().manual_seed(0)
    logits = _logits([0.5, 0.3, 0.15, 0.05]).float().expand(20000, 4)
    draws = next_token(logits, 1.0, top_p=0.8, generator=gen)
    freq = torch.bincount(draws, minlength=4).double() / len(draws)
    # nucleus {0, 1} renormalised: 0.625, 0.375; standard error ~0.0034
    assert freq.tolist()[2:] == [0.0, 0.0]
    assert abs(freq[0].item() - 0.625) < 0.015
    # temperature 2 flattens: p^(1/2) renormalised
    draws = next_token(_logits([0.8, 0.2]).float().expand(20000, 2), 2.0, generator=gen)
    expected = math.sqrt(0.8) / (math.sqrt(0.8) + math.sqrt(0.2))
    assert abs((draws == 0).double().mean().item() - expected) < 0.015


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return GPT(
        GPTConfig(vocab_size=50, context_length=24, d_model=32, num_heads=4, num_layers=2)
    ).eval()


@pytest.mark.parametrize("prompt_len", [1, 5])
def test_greedy_with_cache_equals_without(model, prompt_len):
    ids = torch.randint(0, 50, (3, prompt_len), generator=torch.Generator().manual_seed(1))
    with_cache = generate(model, ids, 15, temperature=0)
    without = generate(model, ids, 15, temperature=0, use_cache=False)
    assert with_cache.shape == (3, prompt_len + 15)
    assert torch.equal(with_cache, without)
    assert torch.equal(with_cache[:, :prompt_len], ids)


@pytest.mark.parametrize("settings", [{}, {"top_k": 5}, {"top_p": 0.9, "temperature": 0.7}])
def test_sampling_with_same_generator_equal_with_and_without_cache(model, settings):
    ids = torch.randint(0, 50, (2, 4), generator=torch.Generator().manual_seed(2))
    a = generate(model, ids, 16, **settings, generator=torch.Generator().manual_seed(7))
    b = generate(model, ids, 16, **settings, use_cache=False,
                 generator=torch.Generator().manual_seed(7))  # fmt: skip
    c = generate(model, ids, 16, **settings, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_generation_past_the_context_slides_the_window(model):
    ids = torch.randint(0, 50, (1, 20), generator=torch.Generator().manual_seed(3))
    a = generate(model, ids, 10, temperature=0)  # 30 tokens > context_length 24
    b = generate(model, ids, 10, temperature=0, use_cache=False)
    assert a.shape == (1, 30) and torch.equal(a, b)
    # the last token is what the model predicts from the last 24 tokens only
    assert a[0, -1] == model(a[:, -25:-1])[0, -1].argmax()


def test_eos_stops_rows_and_pads_them(model):
    ids = torch.randint(0, 50, (2, 3), generator=torch.Generator().manual_seed(4))
    free = generate(model, ids, 12, temperature=0)
    eos = int(free[0, 5])  # the token row 0 generates third
    out = generate(model, ids, 12, temperature=0, eos_id=eos)
    first = (out[0, 3:] == eos).nonzero()[0].item() + 3
    assert torch.equal(out[0, : first + 1], free[0, : first + 1])
    assert (out[0, first:] == eos).all()
    if not (out[1, 3:] == eos).any():
        assert out.shape[1] == 15  # row 1 never stops, so the limit is reached


def test_model_is_left_in_its_mode_and_the_cache_is_filled(model):
    model.train()
    generate(model, torch.zeros(1, 2, dtype=torch.long), 3)
    assert model.training
    model.eval()
    cache = KVCache()
    model(torch.zeros(1, 6, dtype=torch.long), cache)
    assert len(cache) == 6 and len(cache.layers) == 2
    assert cache.numel() == 2 * 2 * 6 * 32  # 2 (K and V) * layers * n * d_model


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"temperature": -0.1}, ValueError, "temperature must be a finite number >= 0"),
        ({"top_k": 0}, ValueError, "top_k must be >= 1"),
        ({"top_p": 0.0}, ValueError, "top_p"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"max_new_tokens": -1}, ValueError, "max_new_tokens"),
        ({"ids": torch.zeros(1, 25, dtype=torch.long)}, ValueError, "context_length=24"),
        ({"ids": torch.zeros(5, dtype=torch.long)}, ValueError, r"\(batch, n\)"),
        ({"ids": torch.zeros(1, 3)}, TypeError, "torch.long"),
        ({"eos_id": -1}, ValueError, "eos_id"),
    ],
)
def test_generate_bad_arguments(model, kwargs, error, match):
    args = {"ids": torch.zeros(1, 3, dtype=torch.long), "max_new_tokens": 2, **kwargs}
    with pytest.raises(error, match=match):
        generate(model, **args)


def test_next_token_table_is_the_softmax_of_the_last_position(model):
    tok = train_bpe(["ab ba abba " * 20], 260, byte_level=True)  # 256 bytes + 4 merges
    with torch.no_grad():
        tok_model = GPT(GPTConfig(len(tok), 16, 16, 2, 1)).eval()
    table = next_token_table(tok_model, tok, "ab ba", k=3)
    probs = torch.softmax(tok_model(torch.tensor([tok.encode("ab ba")]))[0, -1], -1)
    top = probs.topk(3)
    assert [t for t, _ in table] == [tok.decode([i]) for i in top.indices.tolist()]
    assert [p for _, p in table] == pytest.approx(top.values.tolist(), rel=1e-5)
    with pytest.raises(ValueError, match="prompt"):
        next_token_table(tok_model, tok, "", k=3)


def test_a_tiny_top_p_keeps_the_most_probable_token(model):
    # The docstring's promise: the most probable token is always kept, however small p is.
    logits = _logits([0.5, 0.3, 0.2])
    assert _kept(top_p_filter(logits, 1e-12)) == [0]
    ids = torch.tensor([[1, 2, 3]])
    sampled = generate(model, ids, 5, top_p=1e-12, generator=torch.Generator().manual_seed(0))
    assert torch.equal(sampled, generate(model, ids, 5, temperature=0))  # top token = greedy


def test_nan_in_nan_out():
    # NaN in -> NaN out (torch's convention, CONTRIBUTING.md): the filters do not raise on it.
    logits = torch.tensor([[0.0, float("nan"), 1.0]])
    assert torch.isnan(top_k_filter(logits, 3)).any()
    assert torch.isnan(logits / 2.0).any()  # what next_token hands to softmax
