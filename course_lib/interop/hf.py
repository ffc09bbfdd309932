"""``transformers`` models -> the course's: GPT-2 -> :class:`GPT`, Llama -> :class:`ModernLM`,
BERT -> :class:`BertEncoder`. Each: check the settings we do not implement, build our config,
then a key map for :func:`copy_weights`."""

from __future__ import annotations

import torch
from torch import nn

from .._optional import require
from ..configs import BertEncoderConfig, GPTConfig, ModernConfig
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


def _llama(model) -> tuple[ModernLM, dict]:
    """All maps are ``nn.Linear`` on both sides, copied as they are, except one thing:
    ``transformers`` pairs the coordinates of each head as ``(i, i + d/2)`` (``rotate_half``)
    while :func:`~course_lib.rope` pairs ``(2i, 2i + 1)``. Permuting the rows of each head's
    ``W_Q`` and ``W_K`` by :func:`~course_lib.halves_to_interleaved` makes our rotation act on
    the same pairs; scores ``q . k`` do not change under a permutation applied to both, and
    ``W_V``/``W_O`` are untouched. (This is the inverse of the permutation ``transformers``'
    ``convert_llama_weights_to_hf.py`` applies to Meta's checkpoints.)"""
    c = model.config
    rope_params = c.rope_parameters or {}
    if rope_params.get("rope_type", "default") != "default":
        raise ValueError(
            f"config.rope_parameters['rope_type']={rope_params.get('rope_type')!r} is not "
            "supported (ModernLM: 'default')"
        )
    _refuse(c, {"attention_bias": False, "mlp_bias": False, "hidden_act": "silu",
                "head_dim": c.hidden_size // c.num_attention_heads}, "ModernLM")  # fmt: skip
    body = model.model
    tied = model.lm_head.weight.data_ptr() == body.embed_tokens.weight.data_ptr()
    config = ModernConfig(
        vocab_size=c.vocab_size, d_model=c.hidden_size, num_heads=c.num_attention_heads,
        num_kv_heads=c.num_key_value_heads, num_layers=c.num_hidden_layers,
        d_ff=c.intermediate_size, rope_theta=float(rope_params["rope_theta"]),
        rms_eps=c.rms_norm_eps, tie_weights=tied, context_length=c.max_position_embeddings,
    )  # fmt: skip
    d_head = c.hidden_size // c.num_attention_heads
    perm = torch.as_tensor(halves_to_interleaved(d_head))

    def per_head_rows(weight: torch.Tensor) -> torch.Tensor:
        heads = weight.view(-1, d_head, weight.shape[-1])  # (heads, d_head, d_model)
        return heads[:, perm].reshape(weight.shape)  # halves -> interleaved pairs

    rules: dict[str, Rule] = {"token_embedding": "model.embed_tokens", "norm": "model.norm",
                              "lm_head": "lm_head"}  # fmt: skip
    for i in range(c.num_hidden_layers):
        ours, theirs = f"blocks.{i}.", f"model.layers.{i}."
        rules |= {
            ours + "norm1": theirs + "input_layernorm",
            ours + "norm2": theirs + "post_attention_layernorm",
            ours + "attn.w_q": (theirs + "self_attn.q_proj", per_head_rows),
            ours + "attn.w_k": (theirs + "self_attn.k_proj", per_head_rows),
            ours + "attn.w_v": theirs + "self_attn.v_proj",
            ours + "attn.w_o": theirs + "self_attn.o_proj",
            ours + "ffn.gate": theirs + "mlp.gate_proj",
            ours + "ffn.up": theirs + "mlp.up_proj",
            ours + "ffn.down": theirs + "mlp.down_proj",
        }
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
    * ``LlamaForCausalLM`` -> :class:`~course_lib.ModernLM`;
    * ``BertModel`` -> :class:`~course_lib.models.bert_encoder.BertEncoder`.

    Settings the course's model does not implement (another attention scaling or RoPE type,
    relative positions, a BERT used as a decoder, ...) are refused by name. The tests hold
    each copy to ``transformers``' outputs to 1e-5.
    """
    hf = require("transformers", "from_hf")
    build = {hf.GPT2LMHeadModel: _gpt, hf.GPT2Model: _gpt, hf.LlamaForCausalLM: _llama,
             hf.BertModel: _bert}  # fmt: skip
    kind = type(model)
    if kind not in build:
        raise TypeError(
            "model must be a transformers GPT2LMHeadModel, GPT2Model, LlamaForCausalLM or "
            f"BertModel, got {kind.__name__}"
        )
    new, rules = build[kind](model)
    return copy_weights(new, model.state_dict(), rules).eval()
