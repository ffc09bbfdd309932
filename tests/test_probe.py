"""The per-parameter probe (issue 28): every parameter of the numpy half's public functions,
and of the torch half's entry points, is given each of the usual wrong values (None, a str, a
bool, [], nan, inf, -1, 0, 2.5, one axis too few, the wrong dtype, an array with a nan). Each
call must give a clear error -- a TypeError or ValueError whose message names the parameter --
or a right result. The results a wrong-looking value may rightly give are listed in ACCEPTED,
with the reason; everything else that returns is a silent wrong answer and fails here.

NaN in -> NaN out is the convention (as numpy's and torch's; CONTRIBUTING.md says so): an array
with a nan may give a result if the nan shows in it. The probe is the table VALID (one right
call per function, every parameter named) times the table PROBES."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import course_lib as C
from course_lib.softmax import online_softmax_start

R = np.random.default_rng(0)


def A(*shape):
    return R.standard_normal(shape)


Q, K, V = A(3, 4), A(5, 4), A(5, 2)
W44 = C.softmax(A(4, 4))
MASK = np.ones((3, 5), dtype=bool)
HYP, REF = "the cat sat on the mat", "the cat sat on a mat"

# One right call per public function, every parameter named.
VALID = [
    (
        C.additive_attention_scores,
        dict(query=A(4), keys=A(5, 3), w_query=A(4, 6), w_key=A(3, 6), v=A(6)),
    ),
    (
        C.additive_attention,
        dict(
            query=A(4),
            keys=A(5, 3),
            w_query=A(4, 6),
            w_key=A(3, 6),
            v=A(6),
            mask=np.array([1, 1, 1, 0, 1], dtype=bool),
        ),
    ),
    (C.scaled_dot_product_attention, dict(q=Q, k=K, v=V, mask=MASK)),
    (C.scaled_dot_product_attention_inplace, dict(q=Q, k=K, v=V, mask=MASK)),
    (C.attention_scores, dict(q=Q, k=K)),
    (C.causal_mask, dict(n=4)),
    (C.padding_mask, dict(lengths=[2, 3], n=4)),
    (
        C.project_qkv,
        dict(x=A(5, 4), w_q=A(4, 3), w_k=A(4, 3), w_v=A(4, 2), b_q=A(3), b_k=A(3), b_v=A(2)),
    ),
    (
        C.project_qkv_columns,
        dict(
            x_cols=A(4, 5),
            omega_q=A(3, 4),
            beta_q=A(3),
            omega_k=A(3, 4),
            beta_k=A(3),
            omega_v=A(2, 4),
            beta_v=A(2),
        ),
    ),
    (C.tokenize_13a, dict(line="Hello, world.")),
    (C.tokenize_for_bleu, dict(line="Hello, world.", method="13a", lowercase=False)),
    (C.ngram_counts, dict(tokens=["a", "b", "a"], n=2)),
    (C.clipped_counts, dict(hypothesis=HYP.split(), references=[REF.split()], n=1)),
    (C.modified_precision, dict(hypothesis=HYP.split(), references=[REF.split()], n=1)),
    (C.closest_ref_length, dict(hyp_len=3, ref_lens=[2, 4])),
    (C.brevity_penalty, dict(sys_len=3, ref_len=4)),
    (C.geometric_mean, dict(values=[0.5, 0.25], weights=[0.5, 0.5])),
    (
        C.compute_bleu,
        dict(
            counts=[5, 3, 2, 1],
            totals=[6, 5, 4, 3],
            sys_len=6,
            ref_len=6,
            smooth_method="exp",
            smooth_value=None,
            effective_order=False,
            max_ngram_order=4,
            signature="",
        ),
    ),
    (
        C.bleu_statistics,
        dict(hypotheses=[HYP.split()], references=[[REF.split()]], max_ngram_order=4),
    ),
    (
        C.corpus_bleu,
        dict(
            hypotheses=[HYP],
            references=[[REF]],
            smooth_method="exp",
            smooth_value=None,
            lowercase=False,
            tokenize="13a",
            use_effective_order=False,
            max_ngram_order=4,
        ),
    ),
    (
        C.sentence_bleu,
        dict(
            hypothesis=HYP,
            references=[REF],
            smooth_method="exp",
            smooth_value=None,
            lowercase=False,
            tokenize="13a",
            use_effective_order=True,
            max_ngram_order=4,
        ),
    ),
    (C.references_from_streams, dict(streams=[[REF, HYP], [HYP, REF]])),
    (C.chunked_attention, dict(q=Q, k=K, v=V, mask=MASK, block_size=2, causal=False)),
    (
        C.chunked_attention_with_logsumexp,
        dict(q=Q, k=K, v=V, mask=MASK, block_size=2, causal=False),
    ),
    (
        C.attention_block_update,
        dict(
            state=online_softmax_start((3,)),
            acc=np.zeros((3, 2)),
            q_block=Q,
            k_block=K,
            v_block=V,
            mask_block=MASK,
        ),
    ),
    (C.attention_cost, dict(n_q=3, n_k=5, d_k=4, d_v=2, itemsize=4)),
    (C.repeat_kv, dict(kv=A(2, 5, 3), groups=2)),
    (
        C.attention_parameter_count,
        dict(d_model=8, num_heads=4, num_kv_heads=2, head_dim=None, bias=False),
    ),
    (
        C.kv_cache_bytes,
        dict(num_layers=2, num_kv_heads=2, head_dim=4, seq_len=8, batch=1, bytes_per_value=2),
    ),
    (C.attention_to_positions, dict(attention=W44, positions=[0, 1])),
    (C.offset_score, dict(attention=W44, offset=1)),
    (C.top_attended, dict(weights=W44[0], tokens=["a", "b", "c", "d"], k=2)),
    (C.weighted_value_norms, dict(weights=W44, values=A(4, 2))),
    (C.split_heads, dict(x=A(3, 8), num_heads=2)),
    (C.merge_heads, dict(x=A(2, 3, 4))),
    (
        C.multi_head_attention,
        dict(
            x_q=A(3, 8),
            x_kv=A(5, 8),
            w_q=A(8, 8),
            w_k=A(8, 8),
            w_v=A(8, 8),
            w_o=A(8, 8),
            num_heads=2,
            mask=MASK,
            b_q=A(8),
            b_k=A(8),
            b_v=A(8),
            b_o=A(8),
        ),
    ),
    (C.positional_encoding, dict(num_positions=5, d_model=4)),
    (C.rms_norm, dict(x=A(3, 4), weight=np.ones(4), eps=1e-6)),
    (C.rope_frequencies, dict(head_dim=4, theta=10000.0)),
    (C.rope, dict(x=A(5, 4), positions=np.arange(5), theta=10000.0)),
    (C.halves_to_interleaved, dict(head_dim=4)),
    (C.softmax, dict(x=A(3, 4), axis=-1)),
    (C.log_softmax, dict(x=A(3, 4), axis=-1)),
    (C.naive_softmax, dict(x=A(3, 4), axis=-1)),
    (C.softmax_jacobian, dict(x=A(4))),
    (C.online_softmax_start, dict(shape=(3,), dtype=np.float64)),
    (C.online_softmax_step, dict(state=online_softmax_start((3,)), block=A(3, 2))),
    (C.online_softmax_update, dict(state=online_softmax_start((3,)), block=A(3, 2))),
    (C.online_softmax, dict(x=A(3, 8), block_size=3, axis=-1)),
    (C.best_time, dict(fn=lambda: None, repeats=3)),
    (C.peak_mib, dict(fn=lambda: None)),
    # lecture 15
    (C.quantize, dict(x=A(2, 64), fmt="Q4_1")),
    (C.dequantize, dict(blocks=C.quantize(A(2, 64), "Q4_0"), fmt="Q4_0", shape=(2, 64))),
    (C.bits_per_weight, dict(fmt="Q8_0")),
    (C.int8_quantize, dict(w=A(4, 6), per_channel=True)),
    (C.int8_dequantize, dict(q=np.ones((4, 6), dtype=np.int8), scale=np.ones((4, 1)))),
    (C.nf4_levels, dict(offset=0.9677083)),
    (C.nf4_quantize, dict(w=A(2, 64), block_size=64)),
    (
        C.nf4_dequantize,
        dict(
            packed=np.zeros((64, 1), dtype=np.uint8),
            absmax=np.ones(2),
            shape=(2, 64),
            block_size=64,
        ),
    ),  # fmt: skip
    (C.kv_cache_bytes_per_token, dict(config=C.PUBLISHED_CONFIGS["Llama 3 8B"], bytes_per_value=2)),
]

# The modules of the numpy half (course_lib/__init__.py imports them without torch).
NUMPY_MODULES = (
    "additive_attention",
    "attention",
    "bleu",
    "chunked_attention",
    "grouped_query",
    "head_patterns",
    "inference.int8",
    "inference.kv_memory",
    "inference.nf4",
    "inference.quantization",
    "multihead",
    "positional",
    "reproducibility",
    "rmsnorm",
    "rope",
    "softmax",
    "source",
    "timing",
)

# Public functions the probe leaves out, and why.
EXEMPT = {
    "seed_everything": "sets the global seeds and thread count; tests/test_reproducibility.py probes it",
    "softmax_inplace_unchecked": "unchecked by name: the hot path behind checked callers",
    "show_source": "takes *objects; tests/test_source.py gives it wrong objects",
}


def _wrong_rank(valid):
    a = np.asarray(valid) if isinstance(valid, (np.ndarray, list)) else None
    if a is None or a.dtype == object:
        return np.ones((2, 2, 2, 2, 2))
    return a[0] if a.ndim >= 1 and a.shape[0] else np.ones((2, 2, 2, 2, 2))


def _wrong_dtype(valid):
    if isinstance(valid, np.ndarray) and valid.dtype.kind == "f":
        return valid.astype(complex) + 1j
    if isinstance(valid, np.ndarray):
        return valid.astype(float) + 0.5
    return np.array([["a", "b"]])


def _with_nan(valid):
    if isinstance(valid, np.ndarray) and valid.dtype.kind == "f" and valid.size:
        out = valid.copy()
        out.flat[0] = np.nan
        return out
    return None  # not an array of floats: no nan to put in


PROBES = {
    "None": lambda v: None,
    "str": lambda v: "x",
    "bool": lambda v: True,
    "[]": lambda v: [],
    "nan": lambda v: math.nan,
    "inf": lambda v: math.inf,
    "-1": lambda v: -1,
    "0": lambda v: 0,
    "2.5": lambda v: 2.5,
    "wrong rank": _wrong_rank,
    "wrong dtype": _wrong_dtype,
    "nan entry": _with_nan,
}


def _has_nan(result) -> bool:
    if isinstance(result, (tuple, list)):
        return any(_has_nan(r) for r in result)
    if hasattr(result, "detach"):  # a torch tensor
        result = result.detach().float().numpy()
    try:
        return bool(np.isnan(np.asarray(result, dtype=float)).any())
    except (TypeError, ValueError):
        return False


class Fresh:
    """A value built anew for every call (a model the function changes in place)."""

    def __init__(self, make):
        self.make = make


def _fresh(value):
    return value.make() if isinstance(value, Fresh) else value


# Where each call's exception was raised: (fn, name, kind) -> (type, message, file of the last
# traceback frame). Filled as the probe runs; the test on internal errors reads it.
RAISED_FROM: dict = {}
# Parameters that take a student's answer: a check's ExerciseError is the right outcome there.
STUDENT_ANSWER = {"got", "answer", "x"}


def outcome(fn, kwargs, name, kind, value) -> str:
    """``"error"`` (a TypeError/ValueError naming ``name``), ``"nan out"`` (a nan given, a nan
    in the result), ``"result"`` (anything else returned) or ``"unclear: ..."``."""
    from course_lib.checks import ExerciseError

    try:
        result = fn(**{**{k: _fresh(v) for k, v in kwargs.items()}, name: value})
    except ExerciseError as e:
        _record(fn, name, kind, e)
        return "error" if name in STUDENT_ANSWER else f"unclear: ExerciseError: {e}"  # a check's
    except (TypeError, ValueError, IndexError, OSError) as e:  # OSError: a path that is not one
        _record(fn, name, kind, e)
        return "error" if name in str(e) else f"unclear: {type(e).__name__}: {e}"
    except Exception as e:  # any other type (a torch or numpy internal) is a finding
        _record(fn, name, kind, e)
        return f"unclear: {type(e).__name__}: {e}"
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return "nan out" if kind in ("nan", "nan entry") and _has_nan(result) else "result"


def _record(fn, name, kind, exc) -> None:
    import traceback

    last = traceback.extract_tb(exc.__traceback__)[-1]
    RAISED_FROM[(_key(fn), name, kind)] = (type(exc).__name__, str(exc)[:200], last.filename)


def _calls(table, probes):
    for fn, kwargs in table:
        for name, valid in kwargs.items():
            for kind, make in probes.items():
                if kind == "mismatched cache" and name != "cache":
                    continue
                if (_key(fn), name) in COURSE_ARGS:
                    continue
                value = make(_fresh(valid))
                if value is None and kind != "None":
                    continue  # e.g. no nan entry to put in a str
                yield fn, kwargs, name, valid, kind, value


def _default_accepts(fn, name, kind, valid) -> bool:
    """Values that are right by the signature: None where None is the default, a bool where the
    parameter is a flag, a float where it is a float."""
    import inspect

    default = inspect.signature(fn).parameters[name].default
    annotation = str(inspect.signature(fn).parameters[name].annotation)
    if kind == "str":  # a str where a str (a text, a name, a title) is due
        return isinstance(valid, str) or annotation.split("|")[0].strip() == "str"
    if kind == "None":
        return default is None or valid is None or "None" in annotation
    if kind == "bool":
        return isinstance(valid, bool)
    if kind == "2.5":
        return isinstance(valid, float)
    return False


# ---- the torch half's doors: the configs, the models' forward, generate and its filters ----
torch = pytest.importorskip("torch")
from course_lib import configs  # noqa: E402
from course_lib.models import bert, generation, gpt, modern  # noqa: E402
from course_lib.nn import (  # noqa: E402
    KVCache,
    MixtureOfExperts,
    MultiHeadAttention,
    MultiHeadLatentAttention,
    RMSNorm,
    Router,
    load_balancing_loss,
    sigmoid_top_k,
    sliding_window_mask,
    softmax_top_k,
)

torch.manual_seed(0)
GPT_S = gpt.GPT(
    configs.GPTConfig(vocab_size=11, context_length=8, d_model=8, num_heads=2, num_layers=1)
).eval()
GPT_2 = gpt.GPT(
    configs.GPTConfig(vocab_size=11, context_length=8, d_model=8, num_heads=2, num_layers=2)
).eval()
MODERN_S = modern.ModernLM(configs.ModernConfig(11, 8, 2, 1, 1, 16, context_length=8)).eval()
BERT_S = bert.TinyBert(
    configs.TinyBertConfig(11, d_model=8, num_layers=1, num_heads=2, d_ff=16, context_length=8)
)
IDS = torch.tensor([[1, 2, 3]])


def _bert():  # a new one for every call: some functions change the model they are given
    return bert.TinyBert(
        configs.TinyBertConfig(11, d_model=8, num_layers=1, num_heads=2, d_ff=16, context_length=8)
    )


LOGITS = torch.randn(2, 11)
X = torch.randn(2, 3, 8)


def _cache_of(model):
    cache = KVCache()
    with torch.no_grad():
        model(IDS, cache)
    return cache


VALID_TORCH = [
    (
        configs.GPTConfig,
        dict(
            vocab_size=11,
            context_length=8,
            d_model=8,
            num_heads=2,
            num_layers=1,
            d_ff=None,
            dropout=0.0,
            activation="gelu_new",
            tie_weights=True,
            layer_norm_eps=1e-5,
        ),
    ),
    (
        configs.ModernConfig,
        dict(
            vocab_size=11,
            d_model=8,
            num_heads=2,
            num_kv_heads=1,
            num_layers=1,
            d_ff=16,
            rope_theta=10000.0,
            rms_eps=1e-6,
            tie_weights=False,
            context_length=8,
            d_head=None,
            qk_norm=False,
            sliding_window=None,
            layer_types=None,
            moe=None,
            mla=None,
        ),
    ),
    (
        configs.ModernConfig,  # lecture 16's settings
        dict(
            vocab_size=11,
            d_model=8,
            num_heads=2,
            num_kv_heads=1,
            num_layers=2,
            d_ff=16,
            rope_theta=10000.0,
            rms_eps=1e-6,
            tie_weights=False,
            context_length=8,
            d_head=6,
            qk_norm=True,
            sliding_window=3,
            layer_types=("sliding_attention", "full_attention"),
            moe=configs.MoEConfig(4, 2, 8),
            mla=None,
        ),
    ),
    (
        configs.MoEConfig,
        dict(
            num_experts=4,
            top_k=2,
            d_ff=8,
            scoring="sigmoid",
            normalize=True,
            scaling=2.5,
            num_groups=2,
            top_groups=1,
            shared_d_ff=8,
            first_dense_layers=1,
        ),
    ),
    (
        configs.MLAConfig,
        dict(kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4, q_lora_rank=6),
    ),
    (
        Router,
        dict(
            d_model=8,
            num_experts=4,
            top_k=2,
            scoring="sigmoid",
            normalize=True,
            scaling=1.0,
            num_groups=2,
            top_groups=1,
        ),
    ),
    (
        MixtureOfExperts,
        dict(
            d_model=8,
            d_ff=8,
            num_experts=4,
            top_k=2,
            scoring="softmax",
            normalize=True,
            scaling=1.0,
            num_groups=1,
            top_groups=1,
            shared_d_ff=None,
        ),
    ),
    (MixtureOfExperts(8, 8, 4, 2).forward, dict(x=X)),
    (softmax_top_k, dict(logits=LOGITS, k=2, normalize=True)),
    (
        sigmoid_top_k,
        dict(
            logits=LOGITS[:, :10],
            k=2,
            selection_bias=None,
            normalize=True,
            num_groups=2,
            top_groups=1,
        ),
    ),
    (load_balancing_loss, dict(router_logits=LOGITS, top_k=2)),
    (sliding_window_mask, dict(start=2, n_new=3, window=2, n_keys=4)),
    (
        MultiHeadLatentAttention,
        dict(
            d_model=8,
            num_heads=2,
            kv_lora_rank=4,
            qk_nope_head_dim=4,
            qk_rope_head_dim=2,
            v_head_dim=4,
            q_lora_rank=None,
            rope_theta=10000.0,
            norm_eps=1e-6,
        ),
    ),
    (MultiHeadLatentAttention(8, 2, 4, 4, 2, 4).forward, dict(x=X, cache=None)),
    (modern.modern_parameter_count, dict(config=MODERN_S.config)),
    (
        modern.kv_cache_bytes_for,
        dict(config=MODERN_S.config, seq_len=5, batch=1, bytes_per_value=2),
    ),
    (
        configs.TinyBertConfig,
        dict(
            vocab_size=11,
            d_model=8,
            num_layers=1,
            num_heads=2,
            d_ff=16,
            context_length=8,
            type_vocab_size=2,
            dropout=0.0,
            pad_id=0,
        ),
    ),
    (GPT_S.forward, dict(ids=IDS, cache=None)),
    (MODERN_S.forward, dict(ids=IDS, cache=None)),
    (BERT_S.forward, dict(input_ids=IDS, segment_ids=torch.zeros_like(IDS), attention_mask=None)),
    (
        generation.generate,
        dict(
            model=GPT_S,
            ids=IDS,
            max_new_tokens=2,
            temperature=1.0,
            top_k=None,
            top_p=None,
            eos_id=None,
            use_cache=True,
            generator=torch.Generator().manual_seed(0),
        ),
    ),
    (
        generation.next_token,
        dict(logits=LOGITS, temperature=1.0, top_k=None, top_p=None, generator=None),
    ),
    (generation.top_k_filter, dict(logits=LOGITS, k=3)),
    (generation.top_p_filter, dict(logits=LOGITS, p=0.9)),
    (gpt.lm_loss, dict(model=GPT_S, ids=IDS)),
    (
        gpt.gpt_parameter_count,
        dict(vocab_size=11, context_length=8, d_model=8, num_layers=1, d_ff=None, tie_weights=True),
    ),
    (
        MultiHeadAttention(8, 2).forward,
        dict(query=X, key=None, value=None, mask=None, causal=False, cache=None),
    ),
    (RMSNorm(8).forward, dict(x=X)),
    (RMSNorm, dict(d_model=8, eps=1e-6)),
    (
        MultiHeadAttention,
        dict(
            d_model=8,
            num_heads=2,
            num_kv_heads=None,
            bias=True,
            dropout=0.0,
            qk_transform=None,
            d_head=None,
            qk_norm=False,
            norm_eps=1e-6,
            window=None,
        ),
    ),
]


def _torch_wrong_rank(valid):
    return valid[0] if isinstance(valid, torch.Tensor) and valid.ndim else torch.ones(2, 2, 2, 2, 2)


def _torch_wrong_dtype(valid):
    if isinstance(valid, torch.Tensor):
        return (
            valid.to(torch.float32) + 0.5
            if not valid.is_floating_point()
            else valid.to(torch.int64)
        )
    return torch.ones(2)


def _torch_with_nan(valid):
    if isinstance(valid, torch.Tensor) and valid.is_floating_point():
        out = valid.clone()
        out.view(-1)[0] = float("nan")
        return out
    return None


TORCH_PROBES = {
    **{k: v for k, v in PROBES.items() if k not in ("wrong rank", "wrong dtype", "nan entry")},
    "wrong rank": _torch_wrong_rank,
    "wrong dtype": _torch_wrong_dtype,
    "nan entry": _torch_with_nan,
    "wrong model class": lambda v: _bert() if isinstance(v, torch.nn.Module) else None,
    "mismatched cache": lambda v: _cache_of(GPT_2) if v is None else None,
}


# ---- the rest of the torch half's public functions: data, tokenization, training, decoding ----
from course_lib import tokenization as tk  # noqa: E402
from course_lib.data import language_modeling as lmd  # noqa: E402
from course_lib.data import pretraining as ptd  # noqa: E402
from course_lib.models import assistant as asst  # noqa: E402
from course_lib.models import classifier, decoding, dpo, ngram, rl, transformer  # noqa: E402
from course_lib.training import learning_rate_at  # noqa: E402

TOK = tk.train_bpe(["the cat sat on the mat", "a dog sat on a log"] * 3, 40)
TRANSLATOR = transformer.TransformerTranslator(10, 10, 8, 2, 1, 16, context_length=16).eval()
SRC = torch.tensor([[3, 4, 5, 2]])
STREAM = torch.randint(0, 11, (50,), generator=torch.Generator().manual_seed(0))
H = torch.randn(2, 3, 4)
MASK_HF = torch.tensor([[1, 1, 0], [1, 1, 1]])
WP_VOCAB = {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "the": 4}
LOSS_MASK = torch.tensor([[False, True, True]])
LOGPS = torch.tensor([-1.0, -2.0])
TOKEN_LOGPS = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -1.2, -2.0]])  # (B, T) for lecture 17
TOKEN_MASK = torch.tensor([[True, True, False], [True, True, True]])
ADVANTAGES = torch.tensor([0.7, -0.7])

VALID_MORE = [
    (tk.pretokenize, dict(text="The cat.", lowercase=False)),
    (tk.pretokenize_bytes, dict(text="The cat.")),
    (tk.count_pairs, dict(words={("a", "b"): 2})),
    (tk.merge_pair, dict(symbols=["a", "b", "c"], pair=("a", "b"))),
    (tk.basic_tokenize, dict(text="The cat.", lowercase=True)),
    (tk.wordpiece, dict(word="unaffable", vocab=WP_VOCAB, unk_token="[UNK]", max_chars=100)),
    (
        tk.wordpiece_tokenize,
        dict(text="the unaffable", vocab=WP_VOCAB, lowercase=True, unk_token="[UNK]"),
    ),
    (ptd.split_documents, dict(documents=[["a."], ["b."], ["c."]], every=2)),
    (ptd.pair_input, dict(tokens_a=[5, 6], tokens_b=[7], cls=1, sep=2)),
    (ptd.truncate_pair, dict(tokens_a=[5, 6, 7], tokens_b=[8, 9], max_tokens=4)),
    (
        ptd.mask_tokens,
        dict(
            input_ids=np.array([[1, 5, 6, 7, 2]]),
            rng=np.random.default_rng(0),
            mask_id=4,
            vocab_size=11,
            special_ids=(0, 1, 2, 3, 4),
            mask_prob=0.15,
        ),
    ),
    (
        lmd.random_windows,
        dict(ids=STREAM, batch_size=2, length=4, generator=torch.Generator().manual_seed(0)),
    ),
    (lmd.bits_per_char, dict(nats_per_token=2.0, n_tokens=10, n_chars=30)),
    (lmd.evaluate_lm, dict(model=GPT_S, ids=STREAM[:20], block=None)),
    (lmd.known_word_fraction, dict(texts=["the cat"], reference=["the dog"])),
    (learning_rate_at, dict(step=5, steps=10, lr=1e-3, warmup=2, schedule="cosine")),
    (
        decoding.greedy_decode,
        dict(
            model=TRANSLATOR,
            src=SRC,
            src_mask=SRC != 0,
            bos_id=1,
            eos_id=2,
            pad_id=0,
            max_new_tokens=3,
        ),
    ),
    (
        decoding.beam_search,
        dict(
            model=TRANSLATOR,
            src=SRC,
            src_mask=SRC != 0,
            beam_size=2,
            bos_id=1,
            eos_id=2,
            max_new_tokens=3,
            length_penalty=0.0,
        ),
    ),
    (classifier.mean_pool, dict(hidden=H, attention_mask=MASK_HF)),
    (
        classifier.segment_mean_pool,
        dict(
            hidden=torch.randn(2, 6, 4),
            attention_mask=torch.ones(2, 6, dtype=torch.long),
            token_type_ids=torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1]]),
        ),
    ),
    (classifier.accuracy_ci, dict(correct=[True, False, True], z=1.96)),
    (classifier.confusion_matrix, dict(labels=[0, 1, 1], predictions=[0, 1, 0], num_classes=2)),
    (
        dpo.dpo_loss,
        dict(
            policy_chosen_logps=LOGPS,
            policy_rejected_logps=LOGPS - 1,
            reference_chosen_logps=LOGPS,
            reference_rejected_logps=LOGPS,
            beta=0.1,
        ),
    ),
    (ngram.unigram_lm, dict(ids=STREAM, vocab_size=11)),
    (ngram.bigram_lm, dict(ids=STREAM, vocab_size=11, beta=1.0)),
    (asst.chat_batch, dict(rendered=[([1, 2, 3], [False, True, True])], pad_id=0)),
    (asst.response_loss, dict(model=GPT_S, ids=IDS, loss_mask=LOSS_MASK)),
    (asst.sequence_logprobs, dict(model=GPT_S, ids=IDS, loss_mask=LOSS_MASK)),
    (asst.token_logprobs, dict(model=GPT_S, ids=IDS)),
    (
        rl.group_advantages,
        dict(rewards=torch.tensor([1.0, 0.0, 0.0, 1.0]), group_size=2, scale_rewards="group"),
    ),
    (
        rl.grpo_loss,
        dict(
            logps=TOKEN_LOGPS,
            old_logps=TOKEN_LOGPS - 0.1,
            advantages=ADVANTAGES,
            mask=TOKEN_MASK,
            epsilon_low=0.2,
            epsilon_high=0.28,
            beta=0.04,
            ref_logps=TOKEN_LOGPS + 0.2,
            loss_type="dr_grpo",
            max_completion_length=4,
            use_bias_correction_kl=True,
        ),
    ),
    (rl.reinforce_loss, dict(logps=TOKEN_LOGPS, advantages=ADVANTAGES, mask=TOKEN_MASK)),
    (rl.kl_k3, dict(logps=TOKEN_LOGPS, ref_logps=TOKEN_LOGPS + 0.2)),
    (
        rl.clip_fraction,
        dict(
            logps=TOKEN_LOGPS,
            old_logps=TOKEN_LOGPS - 0.3,
            advantages=ADVANTAGES,
            mask=TOKEN_MASK,
            epsilon_low=0.2,
            epsilon_high=0.2,
        ),
    ),
    (rl.pass_at_k, dict(n=8, c=3, k=2)),
    (rl.exact_match_rewards, dict(replies=["open", "file"], answers=["open", "open"])),
    (rl.one_word_rewards, dict(replies=["open", "open file"])),
]


# ---- the modules the first tables left out (issue 49): viz, quizzes, the checks' helpers,
# LoRA and the assistants, the tokenizer classes, inference, evaluation, the MoE and MLA helpers,
# RL's sampling ----
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import course_lib.checks as K  # noqa: E402
import course_lib.viz as viz  # noqa: E402
from course_lib import evaluation as ev  # noqa: E402
from course_lib import quiz  # noqa: E402
from course_lib.checks.quiz import check_quiz  # noqa: E402
from course_lib.data import chat  # noqa: E402
from course_lib.inference import quantized_model as qm  # noqa: E402
from course_lib.inference import speculative  # noqa: E402
from course_lib.models import lora  # noqa: E402
from course_lib.nn import latent_attention as nn_mla  # noqa: E402
from course_lib.nn import moe as nn_moe  # noqa: E402


def _gpt_chat():
    torch.manual_seed(0)
    return gpt.GPT(configs.GPTConfig(CHAT_TOK_VOCAB, 48, d_model=8, num_heads=2, num_layers=2))


def _lora_gpt():
    model = _gpt_chat()
    lora.apply_lora(model, 2, 4.0, ["w_q"])
    return model


CHAT_TOK = chat.load_chat_tokenizer()
CHAT_TOK_VOCAB = max(CHAT_TOK.vocab.values()) + 1
GPT_CHAT = _gpt_chat().eval()
QUIZ = quiz.load_quiz("01")
NUMERIC = next(i for i in QUIZ.items if i.kind == "numeric")
W_ATT = torch.softmax(torch.randn(2, 2, 4, 4), -1)  # (layers, heads, n, n)
TOKENS4 = ["the", "cat", "sat", "."]
Q8 = torch.randint(-127, 128, (3, 4), dtype=torch.int8)
ARC = ev.load_benchmark("arc_easy")
MMLU_LIKE = {"name": "t", "items": [{"query": "2 + 2 =", "choices": ["3", "4"], "gold": 1}]}
ITEM_LL = dict(loglikelihoods=np.array([-1.0, -2.0]), choices=["a", "bb"])  # one item's scores
DRAFT_IDS = torch.tensor([3, 5])
DRAFT_Q = torch.softmax(torch.randn(2, 11), -1)
TARGET_P = torch.softmax(torch.randn(3, 11), -1)

VALID_EXTRA = [
    # viz (figures are closed after every call)
    (
        viz.plot_attention,
        dict(weights=W44, tokens=TOKENS4, key_tokens=None, title="t", annotate=False, ax=None),
    ),
    (
        viz.plot_heatmap,
        dict(
            matrix=A(3, 4),
            x_labels=None,
            y_labels=None,
            title=None,
            xlabel=None,
            ylabel=None,
            cmap="viridis",
            annotate=False,
            vmin=None,
            vmax=None,
            ax=None,
        ),
    ),
    (
        viz.plot_alignment,
        dict(
            weights=W44[:3],
            source_tokens=TOKENS4,
            target_tokens=TOKENS4[:3],
            title="a",
            mark_max=True,
            annotate=False,
            ax=None,
        ),
    ),
    (
        viz.plot_attention_grid,
        dict(
            attention=W_ATT.numpy(),
            tokens=TOKENS4,
            key_tokens=None,
            layers=None,
            heads=None,
            title=None,
            cell_size=1.6,
        ),
    ),
    (viz.plot_positional_encoding, dict(encoding=A(5, 4), title="p", ax=None)),
    (
        viz.head_view,
        dict(
            attention=W_ATT,
            tokens=TOKENS4,
            key_tokens=None,
            layer=None,
            heads=None,
            include_layers=None,
            sentence_b_start=None,
            prettify_tokens=True,
        ),
    ),
    (
        viz.model_view,
        dict(
            attention=W_ATT,
            tokens=TOKENS4,
            key_tokens=None,
            include_layers=None,
            include_heads=None,
            sentence_b_start=None,
            display_mode="light",
            prettify_tokens=True,
        ),
    ),
    (viz.plot_temperatures, dict(scores=A(4), temperatures=(0.5, 1.0), labels=None, top=None)),
    (viz.temperature_slider, dict(scores=A(4), labels=None)),
    # the concept quizzes
    (quiz.quiz_path, dict(lecture="01", folder=quiz.QUIZ_DIR)),
    (quiz.load_quiz, dict(path="01")),
    (quiz.load_quizzes, dict(folder=quiz.QUIZ_DIR)),
    (quiz.judge, dict(item=NUMERIC, answer=NUMERIC.answer)),
    (check_quiz, dict(answer=NUMERIC.answer, lecture="01", number=NUMERIC.number)),
    # what every check uses
    (K.hidden_rng, dict(seed=3, salt=151)),
    (K.within, dict(count=48, n=100, p=0.5, sigmas=5.0)),
    (K.passed, dict(exercise="1.1", title="softmax")),
    (
        K.check_array,
        dict(exercise="1.1", got=W44, expected=W44, what="w", hint=None, rtol=1e-6, atol=1e-8),
    ),
    (
        K.check_mistakes,
        dict(
            exercise="1.1",
            got=W44,
            expected=W44,
            what="w",
            hint="h",
            mistakes={"m": W44 * 2},
            rtol=1e-6,
            atol=1e-8,
        ),
    ),
    (K.finite_matrix, dict(exercise="1.1", x=W44, shape=(4, 4), meaning="weights", hint=None)),
    # LoRA and the shipped assistants
    (lora.LoRALinear, dict(base=torch.nn.Linear(4, 3), r=2, alpha=4.0, dropout=0.0)),
    (
        lora.apply_lora,
        dict(model=Fresh(_gpt_chat), r=2, alpha=4.0, target_names=["w_q"], dropout=0.0),
    ),
    (lora.merge_lora, dict(model=Fresh(_lora_gpt))),
    (lora.trainable_parameter_count, dict(model=GPT_CHAT)),
    (asst.load_assistant, dict(name="tuned", path=None)),
    (asst.add_chat_tokens, dict(model=Fresh(_gpt_chat), vocab_size=CHAT_TOK_VOCAB + 2)),
    (
        asst.generate_replies,
        dict(
            model=GPT_CHAT, tokenizer=CHAT_TOK, prompts=["hi"], max_new_tokens=2, template="course"
        ),
    ),
    (
        chat.render_chat,
        dict(
            messages=[{"role": "user", "content": "hi"}],
            tokenizer=CHAT_TOK,
            add_generation_prompt=True,
            template="course",
        ),
    ),
    (
        dpo.dpo_nll_loss,
        dict(
            policy_chosen_logps=LOGPS,
            policy_rejected_logps=LOGPS - 1,
            reference_chosen_logps=LOGPS,
            reference_rejected_logps=LOGPS,
            chosen_tokens=torch.tensor([3, 4]),
            beta=0.1,
            nll_weight=1.0,
        ),
    ),
    # the tokenizer classes
    (
        tk.BPETokenizer,
        dict(
            vocab=dict(TOK.vocab),
            merges=list(TOK.merges),
            special_tokens=(),
            unk_token=None,
            lowercase=False,
            byte_level=False,
        ),
    ),
    (TOK.encode, dict(text="the cat")),
    (TOK.decode, dict(ids=[1, 2, 3], skip_special_tokens=True)),
    (TOK.encode_word, dict(word="cat")),
    (TOK.tokenize, dict(text="the cat")),
    (
        tk.train_bpe_with_history,
        dict(
            texts=["the cat sat", "a dog sat"],
            vocab_size=30,
            special_tokens=(),
            unk_token=None,
            lowercase=False,
            min_frequency=0,
            byte_level=False,
        ),
    ),
    # inference (torch)
    (qm.Int8Linear, dict(q=Q8, scale=torch.ones(3, 1), bias=None)),
    (qm.Int8Linear(Q8, torch.ones(3, 1)).forward, dict(x=torch.randn(2, 4))),
    (qm.roundtrip, dict(w=A(2, 32), fmt="Q8_0")),
    (qm.quantize_weights, dict(model=GPT_S, fmt="int8", embeddings=True)),
    (qm.weight_bytes, dict(model=GPT_S, fmt="int8", embeddings=True)),
    (
        speculative.speculative_accept,
        dict(
            draft_tokens=DRAFT_IDS,
            q=DRAFT_Q,
            p=TARGET_P,
            generator=torch.Generator().manual_seed(0),
        ),
    ),
    (
        speculative.speculative_generate,
        dict(
            target=GPT_2,
            draft=GPT_S,
            ids=IDS,
            max_new_tokens=2,
            num_draft_tokens=2,
            temperature=0.0,
            generator=None,
            return_stats=False,
        ),
    ),
    (speculative.early_exit_draft, dict(model=GPT_2, num_layers=1)),
    # evaluation
    (ev.chance_accuracy, dict(task=MMLU_LIKE)),
    (
        ev.item_requests,
        dict(
            task=ARC,
            item=ARC["items"][0],
            fewshot=False,
            letters=False,
            reverse=False,
            answer_only=False,
        ),
    ),
    (ev.load_benchmark, dict(name="arc_easy")),
    (ev.load_stored_scores, dict(name="smollm2")),
    (ev.contaminated, dict(items=["the cat sat on the mat"], corpus=["a cat sat"], n=2)),
    (ev.word_ngrams, dict(text="the cat sat", n=2)),
    (ev.context_window, dict(model=GPT_S, tokenizer=None)),
    (ev.encode_pair, dict(tokenizer=TOK, context="the cat", continuation=" sat")),
    (ev.encode_text, dict(tokenizer=TOK, text="the cat", add_special_tokens=None)),
    (
        ev.loglikelihood,
        dict(
            model=GPT_CHAT,
            tokenizer=CHAT_TOK,
            requests=[("the cat", " sat")],
            batch_size=2,
            max_length=None,
        ),
    ),
    (ev.choice_requests, dict(context="Q:", choices=["a", "b"], delimiter=" ")),
    (ev.choice_scores, dict(**ITEM_LL, rule="acc_norm", token_counts=None)),
    (ev.choose, dict(**ITEM_LL, rule="acc", token_counts=None)),
    (ev.is_correct, dict(**ITEM_LL, gold=0, rule="acc", token_counts=None)),
    (
        ev.correct_per_item,
        dict(
            loglikelihoods=[np.array([-1.0, -2.0])],
            choices=[["a", "bb"]],
            gold=[0],
            rule="acc",
            token_counts=None,
        ),
    ),
    (
        ev.fewshot_prompt,
        dict(shots=[("Q: 1?", "A")], query="Q: 2?", separator="\n\n", answer_delimiter=" "),
    ),
    (ev.letter_prompt, dict(question="2 + 2?", choices=["3", "4"])),
    (ev.correct_array, dict(correct=[True, False], name="correct")),
    (
        ev.paired_bootstrap,
        dict(
            correct_a=[True, False, True, True],
            correct_b=[True, True, False, False],
            n_resamples=100,
            confidence=0.95,
            seed=0,
        ),
    ),
    # the MoE and MLA size checks, RL's sampling
    (nn_moe.check_top_k, dict(top_k=2, num_experts=4, name="top_k")),
    (
        nn_mla.check_latent_sizes,
        dict(
            num_heads=2,
            kv_lora_rank=4,
            qk_nope_head_dim=4,
            qk_rope_head_dim=2,
            v_head_dim=4,
            q_lora_rank=None,
        ),
    ),
    (Router(8, 4, 2).forward, dict(x=X[0])),
    (
        rl.sample_group,
        dict(
            model=GPT_CHAT,
            tokenizer=CHAT_TOK,
            prompts=["hi"],
            group_size=2,
            max_new_tokens=2,
            temperature=1.0,
            generator=torch.Generator().manual_seed(0),
        ),
    ),  # fmt: skip
]


# Parameters the probe leaves alone, and why: what a check hands its helpers is the course's own
# fixed data (an exercise number, the expected array, a tolerance, a message), never a student's
# (the student's answer, got or x, is probed); a name a caller passes for its own messages.
_CHECK_OWN = "the course's own value: a check passes it, never a student (the answer is probed)"
_NAME = "the name its caller gives the argument, for the message"
COURSE_ARGS = {
    **{("check_array", p): _CHECK_OWN
       for p in ("exercise", "expected", "what", "hint", "rtol", "atol")},
    **{("check_mistakes", p): _CHECK_OWN
       for p in ("exercise", "expected", "what", "hint", "mistakes", "rtol", "atol")},
    **{("finite_matrix", p): _CHECK_OWN for p in ("exercise", "shape", "meaning", "hint")},
    ("correct_array", "name"): _NAME,
    ("check_top_k", "name"): _NAME,
}  # fmt: skip

PROBE_SIZE = (193, 732, 7983)  # (functions, parameters, calls): test_the_probes_size

# Wrong-looking values that give a right result, by (function, parameter), and why.
_MASK_ROW = {"bool", "wrong rank"}  # mask=True broadcasts (every key); one row broadcasts too
_ONE_TOKEN_LIST = {"str", "[]", "wrong rank"}  # a str is split on spaces; [] has no n-gram
_AXIS = {"-1", "0"}  # numpy axes; -1 is the default
_ZERO_OK = {"0"}
_ALL = set(TORCH_PROBES)
ACCEPTED = {
    # issue 49's extra table
    ("judge", "answer"): _ALL,  # judge's result is the verdict: (False, what is wrong)
    **{(f, p): {"-1", "0", "2.5"} for f in ("plot_heatmap",) for p in ("vmin", "vmax")},  # numbers
    **{
        (f, p): {"0"}
        for f, p in (
            ("plot_attention_grid", "layers"),
            ("plot_attention_grid", "heads"),
            ("head_view", "heads"),
            ("head_view", "include_layers"),
            ("head_view", "layer"),
            ("model_view", "include_layers"),
            ("model_view", "include_heads"),
        )
    },  # one index: layer/head 0
    # one layer (heads, n, n) is a stack too; integer weights are numbers
    **{(f, "attention"): {"wrong rank", "wrong dtype"} for f in ("head_view", "model_view")},
    **{(f, "scores"): {"wrong dtype"} for f in ("plot_temperatures", "temperature_slider")},
    ("plot_alignment", "source_tokens"): {"None"},  # no labels on that axis
    ("plot_alignment", "target_tokens"): {"None"},
    ("hidden_rng", "seed"): _ZERO_OK,
    ("hidden_rng", "salt"): _ZERO_OK,
    ("within", "count"): _ZERO_OK,
    ("within", "p"): _ZERO_OK,  # p = 0: only count 0 is within
    ("LoRALinear", "dropout"): _ZERO_OK,
    ("apply_lora", "dropout"): _ZERO_OK,
    ("dpo_nll_loss", "nll_weight"): _ZERO_OK,  # plain DPO
    # any module: LoRA wraps the layers of those names, the counts and copies read any weights
    **{
        (f, "model"): {"wrong model class"}
        for f in (
            "apply_lora",
            "merge_lora",
            "trainable_parameter_count",
            "quantize_weights",
            "weight_bytes",
            "early_exit_draft",
            "context_window",
        )
    },
    ("generate_replies", "prompts"): {"[]"},  # no prompt, no reply
    ("BPETokenizer", "merges"): {"[]"},  # characters only
    ("BPETokenizer", "special_tokens"): {"[]"},
    ("BPETokenizer.decode", "ids"): {"[]"},  # ""
    ("train_bpe_with_history", "texts"): {"str"},  # one text
    ("train_bpe_with_history", "special_tokens"): {"[]"},
    ("train_bpe_with_history", "min_frequency"): _ZERO_OK,
    # a clear ValueError naming vocab_size: 30 is too small for byte-level's 256-byte alphabet
    ("train_bpe_with_history", "byte_level"): {"bool"},
    ("Int8Linear.forward", "x"): {"wrong rank"},  # one vector (in,) is (..., in)
    ("speculative_generate", "max_new_tokens"): _ZERO_OK,  # the prompt back
    ("speculative_generate", "temperature"): _ZERO_OK,  # greedy
    # greedy (the valid call's temperature 0) draws nothing: the generator is not read
    ("speculative_generate", "generator"): _ALL,
    ("contaminated", "items"): {"[]"},
    ("contaminated", "corpus"): {"[]"},  # nothing can be contaminated by no text
    # read only for a transformers model without a length in its config (lm-eval's order)
    ("context_window", "tokenizer"): _ALL,
    ("encode_text", "add_special_tokens"): {"bool"},  # the course's tokenizers have none to add
    # the model's own door refuses ids beyond its vocabulary (a TinyBert of 11 tokens here)
    ("loglikelihood", "model"): {"wrong model class"},
    # token_counts is read by rule="per_token" only (the valid calls use acc / acc_norm)
    **{(f, "token_counts"): _ALL for f in ("choice_scores", "choose", "is_correct")},
    **{(f, "loglikelihoods"): {"wrong dtype"} for f in ("choice_scores", "choose", "is_correct")},
    ("is_correct", "gold"): _ZERO_OK,  # choice 0
    ("fewshot_prompt", "shots"): {"[]"},  # 0-shot
    ("correct_array", "correct"): {"wrong dtype"},  # 1.0 / 0.0 are right / wrong
    ("paired_bootstrap", "seed"): _ZERO_OK,
    ("paired_bootstrap", "confidence"): _ZERO_OK,  # a 0 % interval: the median difference
    ("check_latent_sizes", "num_heads"): {"None"},  # the per-head sizes alone (MLAConfig)
    ("sample_group", "temperature"): _ZERO_OK,  # greedy: G equal completions
    **{
        (f, "mask"): _MASK_ROW
        for f in (
            "additive_attention",
            "scaled_dot_product_attention",
            "scaled_dot_product_attention_inplace",
            "chunked_attention",
            "chunked_attention_with_logsumexp",
            "multi_head_attention",
        )
    },
    ("attention_block_update", "mask_block"): _MASK_ROW,
    ("quantize", "x"): {"wrong rank"},  # one row of 64 weights is a tensor too: (..., n)
    ("nf4_quantize", "w"): {"wrong rank"},  # weights of any shape, read in memory order
    ("attention_to_positions", "positions"): {"-1", "0", "wrong rank"},  # -1 = last; one int
    ("offset_score", "offset"): {"-1", "0"},  # previous-token and self heads
    ("offset_score", "attention"): {"nan entry"},  # the nan is off the diagonal it reads
    ("segment_mean_pool", "hidden"): {"nan entry"},  # the nan is at [CLS], in neither segment
    **{
        (f, p): _ONE_TOKEN_LIST
        for f, p in (
            ("clipped_counts", "hypothesis"),
            ("modified_precision", "hypothesis"),
            ("ngram_counts", "tokens"),
        )
    },
    ("clipped_counts", "references"): {"str"},  # one reference
    ("modified_precision", "references"): {"str"},
    ("sentence_bleu", "hypothesis"): {"str"},
    ("sentence_bleu", "references"): {"str", "wrong rank"},  # one reference, a str
    ("tokenize_13a", "line"): {"str"},
    ("tokenize_for_bleu", "line"): {"str"},
    ("compute_bleu", "signature"): {"str"},  # any label
    # lengths of 0: an empty hypothesis or reference has BP 0 or 1, as sacrebleu
    **{
        (f, p): _ZERO_OK
        for f, p in (
            ("brevity_penalty", "sys_len"),
            ("brevity_penalty", "ref_len"),
            ("compute_bleu", "sys_len"),
            ("compute_bleu", "ref_len"),
            ("closest_ref_length", "hyp_len"),
        )
    },
    # a smoothing constant of 0 or 2.5 is a number smoothing may use (exp ignores it, as sacrebleu)
    **{(f, "smooth_value"): {"0", "2.5"} for f in ("compute_bleu", "corpus_bleu", "sentence_bleu")},
    **{(f, "axis"): _AXIS for f in ("softmax", "log_softmax", "naive_softmax", "online_softmax")},
    # one axis fewer is still a valid input: a vector for a softmax, a row of vectors for a norm
    **{
        (f, "x"): {"wrong rank"}
        for f in (
            "softmax",
            "log_softmax",
            "naive_softmax",
            "online_softmax",
            "rms_norm",
            "RMSNorm.forward",
            "MixtureOfExperts.forward",  # (tokens, d_model): one row of tokens
        )
    },
    ("online_softmax_start", "shape"): {"[]", "0"},  # the state of one scalar row
    ("positional_encoding", "num_positions"): {"0"},  # an empty (0, d_model) table
    ("rms_norm", "eps"): _ZERO_OK,  # RMSNorm without epsilon (x = 0 then divides by 0)
    ("RMSNorm", "eps"): _ZERO_OK,
    ("MultiHeadAttention", "norm_eps"): _ZERO_OK,  # QK-norm without epsilon
    ("MultiHeadLatentAttention", "norm_eps"): _ZERO_OK,
    ("MoEConfig", "first_dense_layers"): _ZERO_OK,  # every layer a mixture of experts
    ("GPTConfig", "dropout"): _ZERO_OK,
    ("TinyBertConfig", "dropout"): _ZERO_OK,
    ("MultiHeadAttention", "dropout"): _ZERO_OK,
    ("TinyBertConfig", "pad_id"): _ZERO_OK,  # [PAD] is id 0
    ("generate", "max_new_tokens"): _ZERO_OK,  # the prompt back, as transformers
    ("generate", "temperature"): _ZERO_OK,  # greedy
    ("next_token", "temperature"): _ZERO_OK,
    ("generate", "eos_id"): _ZERO_OK,
    ("top_k_filter", "logits"): {"wrong rank"},  # one row (vocab,) is (..., vocab)
    ("top_p_filter", "logits"): {"wrong rank"},
    # text: any str is text; [] is an empty list of words, sentences or documents
    **{
        (f, p): {"str"}
        for f, p in (
            ("pretokenize", "text"),
            ("pretokenize_bytes", "text"),
            ("basic_tokenize", "text"),
            ("wordpiece", "word"),
            ("wordpiece_tokenize", "text"),
            ("known_word_fraction", "texts"),
            ("wordpiece", "unk_token"),
            ("wordpiece_tokenize", "unk_token"),
        )
    },
    **{
        (f, p): {"[]"}
        for f, p in (
            ("merge_pair", "symbols"),
            ("split_documents", "documents"),
            ("pair_input", "tokens_a"),
            ("pair_input", "tokens_b"),
            ("truncate_pair", "tokens_a"),
            ("truncate_pair", "tokens_b"),
            ("mask_tokens", "special_ids"),  # no special token
            ("wordpiece", "vocab"),
            ("wordpiece_tokenize", "vocab"),
        )
    },  # all [UNK]
    ("known_word_fraction", "reference"): {"str", "[]"},  # one text; no known word
    ("pair_input", "cls"): {"str", "0"},  # a token string, or an id
    ("pair_input", "sep"): {"str", "0"},
    ("group_advantages", "rewards"): {"wrong dtype"},  # integer rewards are numbers
    ("grpo_loss", "old_logps"): {"None"},  # None = logps.detach(): one step per sample
    ("grpo_loss", "beta"): _ZERO_OK,  # no KL term (TRL's default)
    ("pass_at_k", "c"): _ZERO_OK,  # no right sample: pass@k = 0
    ("accuracy_ci", "correct"): {"bool", "0", "wrong rank", "wrong dtype"},  # one prediction; 1.0s
    ("mask_tokens", "input_ids"): {"0"},  # one token id, shape ()
    **{
        (f, p): _ZERO_OK
        for f, p in (
            ("greedy_decode", "bos_id"),
            ("greedy_decode", "eos_id"),
            ("greedy_decode", "pad_id"),
            ("beam_search", "bos_id"),
            ("beam_search", "eos_id"),
            ("chat_batch", "pad_id"),
            ("mask_tokens", "mask_id"),
            ("mask_tokens", "mask_prob"),
            ("beam_search", "length_penalty"),  # plain log-probability
            ("bits_per_char", "nats_per_token"),  # a perfect model
            ("learning_rate_at", "step"),
            ("learning_rate_at", "warmup"),
            ("truncate_pair", "max_tokens"),
        )
    },
}


def _key(fn) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", ""))


def _findings(table, probes, fn) -> list[str]:
    found = []
    for f, kwargs, name, valid, kind, value in _calls(
        [row for row in table if row[0] is fn], probes
    ):
        got = outcome(f, kwargs, name, kind, value)
        if got in ("error", "nan out") or kind in ACCEPTED.get((_key(f), name), ()):
            continue
        if got == "result" and _default_accepts(f, name, kind, valid):
            continue
        found.append(f"{_key(f)}({name}=<{kind}>): {got}")
    return found


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow/invalid in the inf rows
@pytest.mark.parametrize("fn", [fn for fn, _ in VALID], ids=_key)
def test_numpy_half_every_wrong_value_gives_a_named_error_or_a_right_result(fn):
    assert not _findings(VALID, PROBES, fn)


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("fn", [fn for fn, _ in VALID_TORCH], ids=_key)
def test_torch_doors_every_wrong_value_gives_a_named_error_or_a_right_result(fn):
    assert not _findings(VALID_TORCH, TORCH_PROBES, fn)


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("fn", [fn for fn, _ in VALID_MORE], ids=_key)
def test_data_tokenization_decoding_every_wrong_value_gives_a_named_error_or_a_right_result(fn):
    assert not _findings(VALID_MORE, TORCH_PROBES, fn)


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("fn", [fn for fn, _ in VALID_EXTRA], ids=_key)
def test_viz_quiz_checks_lora_tokenizers_inference_evaluation_every_wrong_value(fn):
    assert not _findings(VALID_EXTRA, TORCH_PROBES, fn)


TABLES = {"numpy": (VALID, PROBES), "torch": (VALID_TORCH, TORCH_PROBES),
          "more": (VALID_MORE, TORCH_PROBES), "extra": (VALID_EXTRA, TORCH_PROBES)}  # fmt: skip
INTERNALS = ("/torch/", "/numpy/", "/transformers/")


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
def test_no_probe_call_ends_in_an_exception_raised_inside_torch_numpy_or_transformers():
    """Issue 49: every error the probe provokes is raised by course_lib's own checks (the last
    frame of its traceback is in course_lib), never by torch, numpy or transformers."""
    for table, probes in TABLES.values():
        for f, kwargs, name, _, kind, value in _calls(table, probes):
            if (_key(f), name, kind) not in RAISED_FROM:  # not run yet in this process
                outcome(f, kwargs, name, kind, value)
    inside = {k: v for k, v in RAISED_FROM.items() if any(p in v[2] for p in INTERNALS)}
    assert not inside, inside


def test_the_probes_size():
    """The numbers CONTRIBUTING.md quotes: functions, parameters, calls."""
    rows = [row for table, _ in TABLES.values() for row in table]
    calls = sum(1 for table, probes in TABLES.values() for _ in _calls(table, probes))
    assert (len(rows), sum(len(kw) for _, kw in rows), calls) == PROBE_SIZE


def test_the_valid_calls_are_valid_and_the_probe_covers_the_numpy_half():
    import importlib
    import inspect

    for fn, kwargs in [*VALID, *VALID_TORCH, *VALID_MORE, *VALID_EXTRA]:
        fn(**{k: _fresh(v) for k, v in kwargs.items()})  # the reference call itself works
        params = inspect.signature(fn).parameters
        assert set(kwargs) == set(params) - {"self"}, _key(fn)  # every parameter is probed
    numpy_half = set()
    for module in NUMPY_MODULES:
        mod = importlib.import_module(f"course_lib.{module}")
        numpy_half |= {n for n in mod.__all__ if inspect.isfunction(getattr(mod, n))}
    assert numpy_half == {_key(fn) for fn, _ in VALID} | set(EXEMPT)
    assert not {k for k in ACCEPTED} - {
        (_key(f), p) for f, kw in [*VALID, *VALID_TORCH, *VALID_MORE, *VALID_EXTRA] for p in kw
    }


def test_the_probe_notices_an_unclear_error_and_a_silent_result():
    def double(values):  # no checks: a str doubles silently, None fails inside
        return values * 2

    found = _findings([(double, {"values": np.ones(3)})], PROBES, double)
    assert any("values=<str>): result" in f for f in found)
    assert any("values=<None>): unclear: TypeError" in f for f in found)


def test_the_origin_check_sees_an_error_raised_inside_numpy_or_torch():
    def unchecked(values):  # no checks: numpy and torch raise their own errors
        return np.linalg.inv(values), torch.ones(2) @ torch.as_tensor(values)

    for kind, value in (("str", "x"), ("wrong rank", np.ones((2, 3)))):
        outcome(unchecked, {"values": np.eye(2)}, "values", kind, value)
        raised_in = RAISED_FROM[(_key(unchecked), "values", kind)][2]
        assert any(p in raised_in for p in INTERNALS), raised_in
