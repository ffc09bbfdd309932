"""The torch layers of course_lib held against torch.nn, after copying the weights."""

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    FeedForward,
    MultiHeadAttention,
    count_parameters,
    padding_mask,
    residual,
    transformer_parameter_count,
)
from course_lib.interop import from_torch

TOL = 1e-6


def _max_diff(a, b):
    return (a - b).abs().max().item()


def _randomize(module):
    # Non-trivial biases and LayerNorm gains, so a missing term cannot hide behind zeros/ones.
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.3) if p.ndim == 1 else None
    return module


# --------------------------------------------------------------------------- attention


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("use_padding", [False, True])
def test_mha_from_torch_reproduces_outputs_and_per_head_weights(bias, cross, use_padding):
    d, h, batch, n_q = 16, 4, 3, 5
    n_k = 7 if cross else n_q
    ref = _randomize(nn.MultiheadAttention(d, h, bias=bias, batch_first=True).double())
    ours = from_torch(ref)
    q = torch.randn(batch, n_q, d, dtype=torch.float64)
    kv = torch.randn(batch, n_k, d, dtype=torch.float64) if cross else q
    mask = kpm = None
    if use_padding:
        mask = torch.as_tensor(padding_mask(np.array([n_k, 2, n_k - 1]), n_k))  # (batch, 1, n_k)
        kpm = ~mask[:, 0]  # torch: True = padding, the opposite convention
    out = ours(q, kv, kv, mask)
    w = ours.attention_weights
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=kpm, average_attn_weights=False)
    assert out.shape == (batch, n_q, d) and w.shape == (batch, h, n_q, n_k)
    assert _max_diff(out, ref_out) < TOL
    assert _max_diff(w, ref_w) < TOL
    if use_padding:
        assert torch.all(w[1, :, :, 2:] == 0)


def test_mha_masks_2d_3d_4d_agree():
    d, h = 8, 2
    mha = MultiHeadAttention(d, h).double()
    x = torch.randn(2, 4, d, dtype=torch.float64)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    out2, w2 = mha(x, x, x, causal), mha.attention_weights
    out3, w3 = mha(x, x, x, causal.expand(2, 4, 4)), mha.attention_weights
    out4, w4 = mha(x, x, x, causal.expand(2, h, 4, 4)), mha.attention_weights
    out5, w5 = mha(x, causal=True), mha.attention_weights  # GPT's call: the same numbers
    assert torch.equal(out2, out5) and torch.equal(w2, w5)
    assert torch.equal(out2, out3) and torch.equal(out2, out4)
    assert torch.equal(w2, w4) and torch.equal(w3, w4)
    assert torch.all(w2.triu(1) == 0)
    # torch's SDPA uses the same convention (True = may attend).
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(mha.split_heads(w(x), h) for w in (mha.w_q, mha.w_k, mha.w_v)), attn_mask=causal
    )
    ref = mha.w_o(ref.transpose(1, 2).reshape(2, 4, d))
    assert _max_diff(out2, ref) < 1e-12


def test_mha_errors_name_the_shapes():
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=4"):
        MultiHeadAttention(10, 4)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(
        ValueError, match=r"query must have shape \(batch, n, d_model=8\), got \(2, 3, 6\)"
    ):
        mha(torch.randn(2, 3, 6), x, x)
    with pytest.raises(ValueError, match=r"query must have shape .* got \(3, 8\)"):
        mha(torch.randn(3, 8), x, x)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not fit .*n_q=3, n_k=3"):
        mha(x, x, x, torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(5, 1, 3\) does not fit.*batch=2"):
        mha(x, x, x, torch.ones(5, 1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask must be 2-D .* got shape \(3,\)"):
        mha(x, x, x, torch.ones(3, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask must be boolean"):
        mha(x, x, x, torch.ones(3, 3))
    with pytest.raises(TypeError, match="torch.as_tensor"):
        mha(x, x, x, np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="hides every key"):
        mha(x, x, x, torch.zeros(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="must share the batch size"):
        mha(x, torch.randn(1, 3, 8), torch.randn(1, 3, 8))


def test_mha_from_torch_refuses_other_modules():
    with pytest.raises(TypeError, match="module must be a torch.nn.MultiheadAttention, Trans"):
        from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="kdim = vdim = embed_dim"):
        from_torch(nn.MultiheadAttention(4, 2, kdim=3, batch_first=True))


# --------------------------------------------------------------------------- layers


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_encoder_layer_from_torch(norm_first, bias):
    d, h, ff = 16, 4, 24
    ref = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, batch_first=True,
                                     norm_first=norm_first, bias=bias).double()  # fmt: skip
    _randomize(ref)
    ours = from_torch(ref)
    assert ours.norm_first == norm_first and ours.d_ff == ff
    x = torch.randn(3, 6, d, dtype=torch.float64)
    mask = torch.as_tensor(padding_mask(np.array([6, 3, 5]), 6))
    # Gradients enabled: torch's inference fast path is not taken, the math path is compared.
    ref_out = ref(x, src_key_padding_mask=~mask[:, 0])
    out = ours(x, mask)
    assert _max_diff(out, ref_out) < TOL
    assert ours.attention_weights.shape == (3, h, 6, 6)
    assert _max_diff(ours(x), ref(x)) < TOL


def test_encoder_layer_post_ln_is_the_notes_formula():
    layer = _randomize(EncoderLayer(8, 2).double())
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    mha = layer.self_attn(x, x, x)
    x1 = nn.functional.layer_norm(x + mha, (8,), layer.norm1.weight, layer.norm1.bias)
    ffn = layer.ffn.linear2(torch.relu(layer.ffn.linear1(x1)))
    x2 = nn.functional.layer_norm(x1 + ffn, (8,), layer.norm2.weight, layer.norm2.bias)
    assert _max_diff(layer(x), x2) < 1e-12
    assert layer.ffn.linear1.out_features == 32  # d_ff = 4 * d_model by default


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_from_torch(norm_first):
    d, h, n, n_mem = 16, 4, 5, 7
    ref = nn.TransformerDecoderLayer(d, h, 32, dropout=0.0, batch_first=True,
                                     norm_first=norm_first).double()  # fmt: skip
    _randomize(ref)
    ours = from_torch(ref)
    x = torch.randn(2, n, d, dtype=torch.float64)
    memory = torch.randn(2, n_mem, d, dtype=torch.float64)
    src = torch.as_tensor(padding_mask(np.array([7, 4]), n_mem))
    tgt = torch.as_tensor(padding_mask(np.array([5, 3]), n))
    causal_masked_out = nn.Transformer.generate_square_subsequent_mask(n, dtype=torch.float64) != 0
    ref_out = ref(x, memory, tgt_mask=causal_masked_out, tgt_key_padding_mask=~tgt[:, 0],
                  memory_key_padding_mask=~src[:, 0])  # fmt: skip
    out = ours(x, memory, self_mask=tgt, memory_mask=src)
    assert _max_diff(out, ref_out) < TOL
    assert ours.self_attention_weights.shape == (2, h, n, n)
    assert ours.cross_attention_weights.shape == (2, h, n, n_mem)
    assert torch.all(ours.self_attention_weights.triu(1) == 0)  # causal by default
    assert torch.all(ours.cross_attention_weights[1, :, :, 4:] == 0)
    # Without explicit masks: still causal, like torch with tgt_is_causal.
    ref_plain = ref(x, memory, tgt_mask=causal_masked_out, tgt_is_causal=True)
    assert _max_diff(ours(x, memory), ref_plain) < TOL
    assert _max_diff(ours(x, memory, causal=False), ref(x, memory)) < TOL


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_from_torch(norm_first):
    d, h = 8, 2
    enc_layer = nn.TransformerEncoderLayer(d, h, 16, 0.0, batch_first=True, norm_first=norm_first)
    dec_layer = nn.TransformerDecoderLayer(d, h, 16, 0.0, batch_first=True, norm_first=norm_first)
    final = nn.LayerNorm(d) if norm_first else None
    ref_enc = nn.TransformerEncoder(enc_layer, 3, norm=final, enable_nested_tensor=False).double()
    ref_dec = nn.TransformerDecoder(dec_layer, 2, norm=final).double()
    _randomize(ref_enc), _randomize(ref_dec)
    enc, dec = from_torch(ref_enc), from_torch(ref_dec)
    src = torch.randn(2, 6, d, dtype=torch.float64)
    tgt = torch.randn(2, 4, d, dtype=torch.float64)
    mask = torch.as_tensor(padding_mask(np.array([6, 4]), 6))
    ref_enc.eval(), ref_dec.eval()
    with torch.no_grad():  # with enable_nested_tensor=False no fast path zeros the padding
        ref_mem = ref_enc(src, src_key_padding_mask=~mask[:, 0])
        causal = nn.Transformer.generate_square_subsequent_mask(4) != 0
        ref_out = ref_dec(tgt, ref_mem, tgt_mask=causal, memory_key_padding_mask=~mask[:, 0])
        mem = enc(src, mask)
        out = dec(tgt, mem, memory_mask=mask)
    assert _max_diff(mem, ref_mem) < TOL
    assert _max_diff(out, ref_out) < TOL
    assert len(enc.attention_weights) == 3 and enc.attention_weights[2].shape == (2, h, 6, 6)
    assert len(dec.cross_attention_weights) == 2


def test_layer_errors():
    with pytest.raises(ValueError, match="d_model=6 is not divisible by num_heads=4"):
        EncoderLayer(6, 4)
    with pytest.raises(ValueError, match="d_model=6 is not divisible by num_heads=4"):
        DecoderLayer(6, 4)
    layer = EncoderLayer(8, 2)
    with pytest.raises(
        ValueError, match=r"x must have shape \(batch, n, d_model=8\), got \(1, 3, 5\)"
    ):
        layer(torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match=r"mask of shape \(1, 1, 4\) does not fit"):
        layer(torch.randn(1, 3, 8), torch.ones(1, 1, 4, dtype=torch.bool))
    dec = DecoderLayer(8, 2)
    with pytest.raises(ValueError, match=r"memory must have shape \(batch, n, d_model=8\)"):
        dec(torch.randn(1, 3, 8), torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match=r"self_mask of shape \(1, 1, 4\) does not fit"):
        dec(
            torch.randn(1, 3, 8),
            torch.randn(1, 5, 8),
            self_mask=torch.ones(1, 1, 4, dtype=torch.bool),
        )
    with pytest.raises(ValueError, match="dropout must be a probability"):
        EncoderLayer(8, 2, dropout=1.5)
    with pytest.raises(TypeError, match="TransformerEncoderLayer, TransformerDecoderLayer"):
        from_torch(nn.Linear(2, 2))
    silu = nn.TransformerEncoderLayer(8, 2, activation=nn.SiLU(), batch_first=True)
    with pytest.raises(ValueError, match="only relu, gelu and tanh-approximated gelu"):
        from_torch(silu)
    with pytest.raises(
        ValueError, match=r"activation must be one of \['gelu', 'gelu_new', 'relu'\]"
    ):
        EncoderLayer(8, 2, activation="swish")
    with pytest.raises(ValueError, match="layer_norm_eps must be a finite number > 0, got -1"):
        DecoderLayer(8, 2, layer_norm_eps=-1e-5)


# --------------------------------------------------------------------------- activations


@pytest.mark.parametrize("activation", ["gelu", nn.GELU(approximate="tanh")])
@pytest.mark.parametrize("eps", [1e-12, 1e-3])
def test_encoder_layer_gelu_and_eps_from_torch(activation, eps):
    d, h = 16, 4
    ref = nn.TransformerEncoderLayer(d, h, 24, dropout=0.0, batch_first=True,
                                     activation=activation, layer_norm_eps=eps).double()  # fmt: skip
    _randomize(ref)
    ours = from_torch(ref)
    assert ours.ffn.activation == ("gelu" if activation == "gelu" else "gelu_new")
    assert ours.norm1.eps == eps
    x = torch.randn(2, 5, d, dtype=torch.float64)
    assert _max_diff(ours(x), ref(x)) < TOL


def test_decoder_layer_gelu_new_from_torch():
    d, h = 8, 2
    ref = nn.TransformerDecoderLayer(d, h, 16, dropout=0.0, batch_first=True, norm_first=True,
                                     activation=nn.GELU(approximate="tanh"),
                                     layer_norm_eps=1e-6).double()  # fmt: skip
    _randomize(ref)
    ours = from_torch(ref)
    x, memory = torch.randn(2, 4, d, dtype=torch.float64), torch.randn(2, 3, d, dtype=torch.float64)
    ref_out = ref(x, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4).double(),
                  tgt_is_causal=True)  # fmt: skip
    assert _max_diff(ours(x, memory), ref_out) < TOL


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("relu", torch.relu),
        ("gelu", lambda t: 0.5 * t * (1 + torch.erf(t / 2**0.5))),  # exact: x Phi(x)
        # GPT-2's tanh approximation, written from the paper (Hendrycks & Gimpel 2016)
        (
            "gelu_new",
            lambda t: 0.5 * t * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (t + 0.044715 * t**3))),
        ),
    ],
)
def test_feedforward_activation_is_the_formula(name, reference):
    ffn = FeedForward(4, 8, activation=name).double()
    x = torch.linspace(-4, 4, 12, dtype=torch.float64).reshape(3, 4)
    expected = ffn.linear2(reference(ffn.linear1(x)))
    assert _max_diff(ffn(x), expected) < 1e-12
    if name == "gelu_new":  # and the approximation is what torch calls tanh-gelu, not exact gelu
        h = ffn.linear1(x)
        assert _max_diff(reference(h), torch.nn.functional.gelu(h, approximate="tanh")) < 1e-12
        assert _max_diff(reference(h), torch.nn.functional.gelu(h)) > 1e-6


def test_residual_is_post_ln_or_pre_ln():
    norm, sub = nn.LayerNorm(4).double(), nn.Linear(4, 4).double()
    _randomize(norm)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    drop = nn.Identity()
    assert _max_diff(residual(x, sub, norm, drop), norm(x + sub(x))) == 0
    assert _max_diff(residual(x, sub, norm, drop, norm_first=True), x + sub(norm(x))) == 0


# --------------------------------------------------------------------------- parameter counts


def test_parameter_count_of_the_2017_base_transformer_matches_torch():
    # nn.Transformer: 6 + 6 layers, d_model 512, d_ff 2048, final LayerNorms; 44,140,544 params.
    with torch.device("meta"):  # shapes only, no memory for the weights
        ref = nn.Transformer(512, 8, 6, 6, 2048, batch_first=True)
    expected = sum(p.numel() for p in ref.parameters())
    assert expected == 44_140_544
    got = transformer_parameter_count(512, 2048, num_encoder_layers=6, num_decoder_layers=6,
                                      final_norm=True)  # fmt: skip
    assert got == expected


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_parameter_count_formula_matches_our_modules(bias, heads):
    enc = Encoder(3, 8, heads, 20, bias=bias)
    dec = Decoder(2, 8, heads, bias=bias, final_norm=True)
    assert count_parameters(nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))) == (3 * 2 + 2) + (
        2 + 1
    )
    assert count_parameters(enc) == transformer_parameter_count(
        8, 20, num_encoder_layers=3, bias=bias
    )
    assert count_parameters(dec) == transformer_parameter_count(
        8, num_decoder_layers=2, bias=bias, final_norm=True
    )
    ref = nn.TransformerEncoderLayer(8, heads, 20, bias=bias)
    assert count_parameters(EncoderLayer(8, heads, 20, bias=bias)) == sum(
        p.numel() for p in ref.parameters()
    )


def test_count_parameters_trainable_only_and_errors():
    layer = EncoderLayer(8, 2)
    layer.norm1.requires_grad_(False)
    assert count_parameters(layer) - count_parameters(layer, trainable_only=True) == 16
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        count_parameters([1, 2])
    with pytest.raises(ValueError, match="num_encoder_layers must be >= 0"):
        transformer_parameter_count(8, num_encoder_layers=-1)
