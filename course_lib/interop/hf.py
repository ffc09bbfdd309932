"""``transformers`` models -> the course's: GPT-2 -> :class:`GPT`, Llama -> :class:`ModernLM`,
BERT -> :class:`BertEncoder`. Each: check the settings we do not implement, build our config,
then a key map for :func:`copy_weights`."""

from __future__ import annotations

import torch
from torch import nn

from .._optional import require
from ..configs import BertEncoderConfig, GPTConfig, MLAConfig, ModernConfig, MoEConfig
from ..models.bert_encoder import BertEncoder
from ..models.gpt import GPT
from ..models.modern import ModernLM
from ..rope import halves_to_interleaved
from .torch_nn import Rule, copy_weights

__all__ = ["from_hf"]


def _refuse(config, needed: dict, model_name: str) -> None:
    """Raise for the first ``config.<name>`` that is not what our model implements."""
    for name, want in needed.items():
        got = getattr(config, name, None)
        if got != want:
            raise ValueError(f"config.{name}={got!r} is not supported ({model_name}: {want!r})")


def _gpt(model) -> tuple[GPT, dict]:
    """GPT-2 stores its linear maps as ``Conv1D``, weight ``(in, out)`` applied as ``x @ W + b``;
    ``nn.Linear`` keeps ``(out, in)``, so each weight is transposed. ``c_attn`` holds the query,
    key and value maps side by side (``(d, 3d)``). Dropout comes from the config; compare
    outputs in eval mode."""
    GPT2LMHeadModel = require("transformers", "from_hf").GPT2LMHeadModel
    c = model.config
    _refuse(c, {"scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                "reorder_and_upcast_attn": False, "add_cross_attention": False}, "GPT")  # fmt: skip
    if not (c.resid_pdrop == c.embd_pdrop == c.attn_pdrop):
        raise ValueError(
            "GPT uses one dropout rate; the config has resid_pdrop="
            f"{c.resid_pdrop}, embd_pdrop={c.embd_pdrop}, attn_pdrop={c.attn_pdrop}"
        )
    has_head = isinstance(model, GPT2LMHeadModel)
    body = model.transformer if has_head else model
    tied = not has_head or model.lm_head.weight.data_ptr() == body.wte.weight.data_ptr()
    if c.activation_function not in ("relu", "gelu", "gelu_new"):
        raise ValueError(
            f"config.activation_function={c.activation_function!r} is not supported; expected "
            "one of ['gelu', 'gelu_new', 'relu']"
        )
    config = GPTConfig(vocab_size=c.vocab_size, context_length=c.n_positions, d_model=c.n_embd,
                       num_heads=c.n_head, num_layers=c.n_layer, d_ff=c.n_inner,
                       dropout=c.resid_pdrop, activation=c.activation_function, tie_weights=tied,
                       layer_norm_eps=c.layer_norm_epsilon)  # fmt: skip
    d, top = c.n_embd, "transformer." if has_head else ""

    def conv1d(t: torch.Tensor) -> torch.Tensor:
        return t.t()  # Conv1D (in, out) -> Linear (out, in); a bias (out,) stays as it is

    def qkv(i: int):
        return lambda t: t[..., i * d : (i + 1) * d].t()  # columns of c_attn for q, k or v

    rules: dict[str, Rule] = {"token_embedding": f"{top}wte", "position_embedding": f"{top}wpe",
                              "norm": f"{top}ln_f", "lm_head": "lm_head"}  # fmt: skip
    for i in range(c.n_layer):
        ours, theirs = f"blocks.{i}.", f"{top}h.{i}."
        rules |= {
            ours + "norm1": theirs + "ln_1",
            ours + "norm2": theirs + "ln_2",
            ours + "attn.w_q": (theirs + "attn.c_attn", qkv(0)),
            ours + "attn.w_k": (theirs + "attn.c_attn", qkv(1)),
            ours + "attn.w_v": (theirs + "attn.c_attn", qkv(2)),
            ours + "attn.w_o": (theirs + "attn.c_proj", conv1d),
            ours + "ffn.linear1": (theirs + "mlp.c_fc", conv1d),
            ours + "ffn.linear2": (theirs + "mlp.c_proj", conv1d),
        }
    return GPT(config).to(dtype=body.wte.weight.dtype), rules


def _rope_theta(c) -> float:
    rope_params = c.rope_parameters or {}
    if rope_params.get("rope_type", "default") != "default":
        raise ValueError(
            f"config.rope_parameters['rope_type']={rope_params.get('rope_type')!r} is not "
            "supported (ModernLM: 'default')"
        )
    return float(rope_params["rope_theta"])


def _per_head_rows(d_head: int):
    """``transformers`` pairs the coordinates of each head as ``(i, i + d/2)`` (``rotate_half``)
    while :func:`~course_lib.rope` pairs ``(2i, 2i + 1)``: permute each head's rows of ``W_Q``
    and ``W_K`` (and a QK-norm's gains) by :func:`~course_lib.halves_to_interleaved`."""
    perm = torch.as_tensor(halves_to_interleaved(d_head))

    def per_head_rows(weight: torch.Tensor) -> torch.Tensor:
        heads = weight.view(
            -1, d_head, *weight.shape[1:]
        )  # (heads, d_head, d_model) or (1, d_head)
        return heads[:, perm].reshape(weight.shape)  # halves -> interleaved pairs

    return per_head_rows


def _experts_rules(ours: str, theirs: str, num_experts: int, d_ff: int) -> dict[str, Rule]:
    """``transformers`` stores the experts of a layer as two tensors, ``gate_up_proj (E, 2 d_ff,
    d)`` (the gate's rows, then the up map's) and ``down_proj (E, d, d_ff)``; ours are ``E``
    separate :class:`~course_lib.nn.SwiGLUFeedForward`."""
    rules: dict[str, Rule] = {}
    for e in range(num_experts):
        rules |= {
            f"{ours}experts.{e}.gate.weight": (f"{theirs}experts.gate_up_proj",
                                               lambda t, e=e: t[e, :d_ff]),
            f"{ours}experts.{e}.up.weight": (f"{theirs}experts.gate_up_proj",
                                             lambda t, e=e: t[e, d_ff:]),
            f"{ours}experts.{e}.down.weight": (f"{theirs}experts.down_proj", lambda t, e=e: t[e]),
        }  # fmt: skip
    return rules


def _swiglu_rules(ours: str, theirs: str) -> dict[str, Rule]:
    return {f"{ours}gate": f"{theirs}gate_proj", f"{ours}up": f"{theirs}up_proj",
            f"{ours}down": f"{theirs}down_proj"}  # fmt: skip


def _llama(model) -> tuple[ModernLM, dict]:
    """Llama, Mistral, Mixtral, Qwen3, Qwen3-MoE and DeepSeek-V3 -> :class:`ModernLM`.

    All maps are ``nn.Linear`` on both sides, copied as they are, except: ``transformers`` pairs
    the coordinates of each head as ``(i, i + d/2)`` (``rotate_half``) while
    :func:`~course_lib.rope` pairs ``(2i, 2i + 1)``. Permuting the rows of each head's ``W_Q``
    and ``W_K`` (and the QK-norm gains) by :func:`~course_lib.halves_to_interleaved` makes our
    rotation act on the same pairs; scores ``q . k`` do not change under a permutation applied
    to both, and ``W_V``/``W_O`` are untouched. (This is the inverse of the permutation
    ``transformers``' ``convert_llama_weights_to_hf.py`` applies to Meta's checkpoints.)
    DeepSeek-V3 (``rope_interleave=True``) already pairs ``(2i, 2i + 1)``: copied as is.
    The experts of a layer are stored as two 3-D tensors there, ``E`` modules here."""
    c = model.config
    family = c.model_type
    mla = moe = None
    d_head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    _refuse(c, {"hidden_act": "silu"} | ({"attention_bias": False} if hasattr(c, "attention_bias")
                                         else {}), "ModernLM")  # fmt: skip
    if family == "llama":
        _refuse(c, {"mlp_bias": False, "head_dim": c.hidden_size // c.num_attention_heads},
                "ModernLM")  # fmt: skip
    if family == "qwen3_moe":
        _refuse(c, {"use_sliding_window": False}, "ModernLM")
        if c.decoder_sparse_step != 1 or c.mlp_only_layers:
            raise ValueError(
                f"config.decoder_sparse_step={c.decoder_sparse_step!r}, config.mlp_only_layers="
                f"{c.mlp_only_layers!r} are not supported (ModernLM: every layer MoE: 1, [])"
            )
        moe = MoEConfig(c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size,
                        normalize=bool(c.norm_topk_prob))  # fmt: skip
    if family == "mixtral":
        moe = MoEConfig(c.num_local_experts, c.num_experts_per_tok, c.intermediate_size)
    if family == "deepseek_v3":
        _refuse(c, {"rope_interleave": True, "num_key_value_heads": c.num_attention_heads},
                "ModernLM")  # fmt: skip
        mla = MLAConfig(c.kv_lora_rank, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim,
                        c.q_lora_rank)  # fmt: skip
        moe = MoEConfig(
            c.n_routed_experts, c.num_experts_per_tok, c.moe_intermediate_size,
            scoring="sigmoid", normalize=bool(c.norm_topk_prob),
            scaling=float(c.routed_scaling_factor), num_groups=c.n_group,
            top_groups=c.topk_group, shared_d_ff=c.moe_intermediate_size * c.n_shared_experts,
            first_dense_layers=c.first_k_dense_replace,
        )  # fmt: skip
    layer_types = getattr(c, "layer_types", None)
    window = getattr(c, "sliding_window", None)
    body = model.model
    tied = model.lm_head.weight.data_ptr() == body.embed_tokens.weight.data_ptr()
    config = ModernConfig(
        vocab_size=c.vocab_size, d_model=c.hidden_size, num_heads=c.num_attention_heads,
        num_kv_heads=c.num_key_value_heads, num_layers=c.num_hidden_layers,
        d_ff=c.intermediate_size, rope_theta=_rope_theta(c), rms_eps=c.rms_norm_eps,
        tie_weights=tied, context_length=c.max_position_embeddings,
        d_head=None if mla or d_head == c.hidden_size // c.num_attention_heads else d_head,
        qk_norm=family in ("qwen3", "qwen3_moe"), sliding_window=window,
        layer_types=tuple(layer_types) if layer_types and window else None, moe=moe, mla=mla,
    )  # fmt: skip
    per_head_rows = _per_head_rows(d_head)
    rules: dict[str, Rule] = {"token_embedding": "model.embed_tokens", "norm": "model.norm",
                              "lm_head": "lm_head"}  # fmt: skip
    for i in range(c.num_hidden_layers):
        ours, theirs = f"blocks.{i}.", f"model.layers.{i}."
        rules |= {ours + "norm1": theirs + "input_layernorm",
                  ours + "norm2": theirs + "post_attention_layernorm"}  # fmt: skip
        a, t = ours + "attn.", theirs + "self_attn."
        if mla is None:
            rules |= {
                a + "w_q": (t + "q_proj", per_head_rows),
                a + "w_k": (t + "k_proj", per_head_rows),
                a + "w_v": t + "v_proj",
                a + "w_o": t + "o_proj",
                a + "q_norm": (t + "q_norm", per_head_rows),
                a + "k_norm": (t + "k_norm", per_head_rows),
            }
        else:
            rules |= {a + "w_q": t + "q_proj", a + "w_dq": t + "q_a_proj",
                      a + "q_norm": t + "q_a_layernorm", a + "w_uq": t + "q_b_proj",
                      a + "w_dkv": t + "kv_a_proj_with_mqa", a + "kv_norm": t + "kv_a_layernorm",
                      a + "w_ukv": t + "kv_b_proj", a + "w_o": t + "o_proj"}  # fmt: skip
        f, m = ours + "ffn.", theirs + "mlp."
        if moe is None or i < moe.first_dense_layers:
            rules |= _swiglu_rules(f, m)
            continue
        rules |= _experts_rules(f, m, moe.num_experts, moe.d_ff)
        rules[f + "router.linear"] = m + "gate"
        if moe.scoring == "sigmoid":
            rules[f + "router.selection_bias"] = m + "gate.e_score_correction_bias"
        if moe.shared_d_ff is not None:
            rules |= _swiglu_rules(f + "shared_expert.", m + "shared_experts.")
    return ModernLM(config).to(dtype=body.embed_tokens.weight.dtype), rules


def _bert(model) -> tuple[BertEncoder, dict]:
    """``transformers`` names -> ours: ``embeddings.*_embeddings`` -> ``*_embeddings``,
    ``embeddings.LayerNorm`` -> ``embedding_norm``; per layer ``attention.self.query/key/value``
    -> ``self_attn.w_q/w_k/w_v``, ``attention.output.dense`` -> ``self_attn.w_o``,
    ``attention.output.LayerNorm`` -> ``norm1``, ``intermediate.dense`` -> ``ffn.linear1``,
    ``output.dense`` -> ``ffn.linear2``, ``output.LayerNorm`` -> ``norm2``; ``pooler.dense`` ->
    ``pooler``."""
    c = model.config
    if getattr(c, "position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"config.position_embedding_type={c.position_embedding_type!r} is not supported "
            "(BertEncoder: 'absolute')"
        )
    _refuse(c, {"is_decoder": False, "add_cross_attention": False}, "BertEncoder")
    config = BertEncoderConfig(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size,
        num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
        intermediate_size=c.intermediate_size,
        hidden_act=c.hidden_act if isinstance(c.hidden_act, str) else repr(c.hidden_act),
        max_position_embeddings=c.max_position_embeddings, type_vocab_size=c.type_vocab_size,
        layer_norm_eps=c.layer_norm_eps, hidden_dropout_prob=c.hidden_dropout_prob,
        pad_token_id=c.pad_token_id if c.pad_token_id is not None else 0,
    )  # fmt: skip
    rules: dict[str, Rule] = {
        "word_embeddings": "embeddings.word_embeddings",
        "position_embeddings": "embeddings.position_embeddings",
        "token_type_embeddings": "embeddings.token_type_embeddings",
        "embedding_norm": "embeddings.LayerNorm",
        "pooler": "pooler.dense",
    }
    for i in range(c.num_hidden_layers):
        ours, theirs = f"encoder.layers.{i}.", f"encoder.layer.{i}."
        rules |= {
            ours + "self_attn.w_q": theirs + "attention.self.query",
            ours + "self_attn.w_k": theirs + "attention.self.key",
            ours + "self_attn.w_v": theirs + "attention.self.value",
            ours + "self_attn.w_o": theirs + "attention.output.dense",
            ours + "norm1": theirs + "attention.output.LayerNorm",
            ours + "ffn.linear1": theirs + "intermediate.dense",
            ours + "ffn.linear2": theirs + "output.dense",
            ours + "norm2": theirs + "output.LayerNorm",
        }
    new = BertEncoder(config, add_pooler=getattr(model, "pooler", None) is not None)
    return new.to(dtype=model.embeddings.word_embeddings.weight.dtype), rules


def from_hf(model: nn.Module) -> nn.Module:
    """A copy of a ``transformers`` model as the course's, in eval mode, same dtype:

    * ``GPT2LMHeadModel`` (or ``GPT2Model``, untied head) -> :class:`~course_lib.GPT`;
    * ``LlamaForCausalLM``, ``MistralForCausalLM`` (sliding window), ``MixtralForCausalLM``
      (+ experts), ``Qwen3ForCausalLM`` (QK-norm, interleaved sliding layers),
      ``Qwen3MoeForCausalLM`` and ``DeepseekV3ForCausalLM`` (latent attention, sigmoid-routed
      experts with a shared one) -> :class:`~course_lib.ModernLM` (its config says which);
    * ``BertModel`` -> :class:`~course_lib.models.bert_encoder.BertEncoder`.

    Settings the course's model does not implement (another attention scaling or RoPE type,
    relative positions, a BERT used as a decoder, ...) are refused by name. The tests hold
    each copy to ``transformers``' outputs (1e-5; lecture 16's MoE models 1e-4).
    """
    hf = require("transformers", "from_hf")
    build = {hf.GPT2LMHeadModel: _gpt, hf.GPT2Model: _gpt, hf.LlamaForCausalLM: _llama,
             hf.MistralForCausalLM: _llama, hf.MixtralForCausalLM: _llama,
             hf.Qwen3ForCausalLM: _llama, hf.Qwen3MoeForCausalLM: _llama,
             hf.DeepseekV3ForCausalLM: _llama, hf.BertModel: _bert}  # fmt: skip
    kind = type(model)
    if kind not in build:
        what = "a config: build the model first, e.g. Qwen3ForCausalLM(config)" if isinstance(
            model, hf.PretrainedConfig) else "not supported"  # fmt: skip
        raise TypeError(
            f"model must be a transformers model of one of {sorted(k.__name__ for k in build)}, "
            f"got {kind.__name__} ({what})"
        )
    new, rules = build[kind](model)
    return copy_weights(new, model.state_dict(), rules).eval()
