"""The torch factories of :class:`~course_lib.checks.Built` recipes (a model, a read-only tensor):
what a check sends to the student's process to be built there. Like :mod:`.given`, shipped to the
grader's sandbox; nothing here computes an answer or imports a check.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import _validation
from ..models.transformer import TransformerTranslator
from ..nn import DecoderLayer, EncoderLayer

__all__ = [
    "make_layer",
    "scripted_model",
    "tiny_translator",
    "read_only_tensor",
    "exercise_model",
    "lm_tokenizer_512",
]


def make_layer(kind: str, d_model: int, num_heads: int, norm_first: bool, seed: int):
    """A float64 encoder or decoder layer with random weights AND biases (a Built factory)."""
    cls = {"encoder": EncoderLayer, "decoder": DecoderLayer}[
        _validation.check_choice(kind, "kind", ("encoder", "decoder"))
    ]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        layer = cls(d_model, num_heads, norm_first=norm_first).double().eval()
        with torch.no_grad():
            for p in layer.parameters():
                if p.ndim == 1:
                    p.normal_(0.0, 0.5)
    return layer


class _Scripted(nn.Module):
    """A stand-in model that 'translates' a source row starting with id k into ``script[k]``,
    then <eos> (so a batch row, or the same sentence decoded alone, gets the same output)."""

    def __init__(self, script: list[list[int]], vocab: int = 8, eos_id: int = 2):
        super().__init__()
        self.script, self.vocab, self.eos_id = script, vocab, eos_id

    def encode(self, src, src_mask):
        return src

    def decode(self, memory, src_mask, tgt_in):
        b, t = tgt_in.shape
        logits = torch.zeros(b, t, self.vocab)
        for i in range(b):
            script = self.script[int(memory[i, 0]) % len(self.script)]  # source row i says which
            for j in range(t):
                logits[i, j, script[j] if j < len(script) else self.eos_id] = 1.0
        return logits


def scripted_model(script: list[list[int]], vocab: int = 8, eos_id: int = 2) -> _Scripted:
    """A :class:`Built` factory: the stand-in model that says ``script[b]`` then <eos>."""
    return _Scripted(script, vocab, eos_id)


def tiny_translator(seed: int = 0) -> TransformerTranslator:
    """A :class:`Built` factory: a small untrained Transformer (12 source, 9 target ids)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return TransformerTranslator(12, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32).eval()


_IN_PLACE = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
             "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
             "__irshift__"}  # fmt: skip


class _ReadOnlyTensor(torch.Tensor):
    """A tensor whose in-place operations (and those of its views) raise: the caller's input."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        in_place = name in _IN_PLACE or (name.endswith("_") and not name.endswith("__"))
        if in_place and args and isinstance(args[0], cls):
            raise RuntimeError(
                f"{name}: this tensor is read-only (it is the caller's ids; an in-place change "
                "would change the caller's data)"
            )
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        sources = [a for a in args if isinstance(a, cls)]
        if isinstance(out, torch.Tensor) and any(_shares(out, a) for a in sources):
            return out.as_subclass(cls)  # a view of the caller's data stays read-only
        return out


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except RuntimeError:
        return False


def read_only_tensor(data: list, dtype: str = "int64") -> torch.Tensor:
    """A :class:`Built` factory: a tensor the student's function may read but not change."""
    return torch.tensor(data, dtype=getattr(torch, dtype)).as_subclass(_ReadOnlyTensor)


def exercise_model(kind: str = "modern", seed: int = 0, **config) -> object:
    """A randomly initialised decoder in eval mode, the recipe :class:`Built` sends to the
    student's process (plain keyword arguments in, the model out): ``ModernLM(ModernConfig(
    **config))`` (``kind="modern"``) or lecture 11's ``GPT(GPTConfig(**config))`` (``"gpt"``),
    its weights drawn from ``seed``."""
    from .. import GPT, GPTConfig, ModernConfig, ModernLM

    _validation.check_choice(kind, "kind", ("modern", "gpt"))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ModernLM(ModernConfig(**config)) if kind == "modern" else GPT(GPTConfig(**config))
    return model.eval()


def lm_tokenizer_512():
    """A :class:`Built` factory: lecture 11's byte-level BPE tokenizer (512 tokens)."""
    from ..data.language_modeling import lm_tokenizer

    return lm_tokenizer(512)
