"""A GGUF file (llama.cpp's format) -> the course's :class:`~course_lib.ModernLM` and
byte-level :class:`~course_lib.tokenization.BPETokenizer`, read by the course's own code.

A GGUF file is a header, then the tensors' bytes::

    "GGUF"  version (u32)  n_tensors (u64)  n_metadata (u64)
    n_metadata x  key (string)  type (u32)  value        settings and the tokenizer's arrays
    n_tensors  x  name (string)  n_dims (u32)  dims (u64 each)  type (u32)  offset (u64)
    padding to `general.alignment` (32), then the tensors' bytes (each at its offset)

A string is its byte length (u64) then UTF-8 bytes; an array is its element type (u32), its
length (u64), then the elements. ``dims`` are ggml's order, fastest first, so a linear map
``(out, in)`` is stored with dims ``(in, out)``. :func:`read_gguf` reads the header with
``struct`` (fast: the 49,152 token strings take a fraction of a second) and leaves the tensor
bytes in the file (a memory map) until :meth:`GGUFFile.tensor` dequantises one with
:func:`course_lib.inference.dequantize`.

**Q and K rows.** llama.cpp's converter reorders the rows of each head of ``W_Q`` and ``W_K``
from ``transformers``' *halves* pairing ``(i, i + d/2)`` to the *interleaved* pairing
``(2i, 2i + 1)`` its RoPE uses (``transformers`` undoes it when it loads a GGUF). The course's
RoPE (:func:`course_lib.rope`) pairs ``(2i, 2i + 1)`` too, so the file's rows are already in
our order: :func:`from_gguf` copies them as they are, the exact permutation :func:`from_hf`
applies to a ``transformers`` Llama (the tests hold the two copies equal).
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .._validation import check_path
from ..inference.quantization import BLOCK_BYTES, BLOCK_SIZE, dequantize

__all__ = ["GGUFFile", "read_gguf", "from_gguf"]

_MAGIC = b"GGUF"
_VERSIONS = (2, 3)
# metadata value types: fixed-size ones as struct formats; 8 = string, 9 = array
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}  # fmt: skip
_STRING, _ARRAY = 8, 9
# ggml tensor types the course reads: id -> name (F32 values as they are; the rest blocks)
TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 8: "Q8_0"}


class _Header:
    """A cursor over the file's bytes that raises a clear error at the end of the file."""

    def __init__(self, data, path: Path):
        self.data, self.path, self.pos = data, path, 0

    def fail(self, what: str) -> ValueError:
        return ValueError(f"{self.path}: not a readable GGUF file: {what} (at byte {self.pos})")

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise self.fail(f"the file ends inside its header ({len(self.data)} bytes; truncated?)")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise self.fail(f"a string of {n} bytes runs past the end of the file (truncated?)")
        raw = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string is not UTF-8") from None

    def value(self, kind: int):
        if kind in _SCALAR:
            return self.take(_SCALAR[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, n = self.take("<I"), self.take("<Q")
            if item in _SCALAR:  # numbers: read them in one go
                dtype = np.dtype(_SCALAR[item])
                if self.pos + n * dtype.itemsize > len(self.data):
                    raise self.fail(f"an array of {n} numbers runs past the end of the file")
                out = np.frombuffer(self.data, dtype, count=n, offset=self.pos).copy()
                self.pos += n * dtype.itemsize
                return out
            if n > len(self.data):
                raise self.fail(f"an array claims {n} elements")
            return [self.value(item) for _ in range(n)]
        raise self.fail(f"unknown metadata value type {kind}")


@dataclass
class GGUFFile:
    """A GGUF file's header: ``metadata`` (key -> value) and ``tensors`` (name -> ``(shape,
    type name, offset)``, shape in torch order ``(out, in)``), the tensor bytes left in the file."""

    path: Path
    metadata: dict
    tensors: dict[str, tuple[tuple[int, ...], str, int]]
    data_start: int
    _data: mmap.mmap = field(repr=False)

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of tensor ``name`` (uint8, a view into the file)."""
        if not isinstance(name, str) or name not in self.tensors:
            raise ValueError(
                f"name: {self.path} has no tensor {name!r}; it has e.g. {list(self.tensors)[:3]}"
            )
        shape, kind, offset = self.tensors[name]
        n = int(np.prod(shape))
        nbytes = 4 * n if kind == "F32" else 2 * n if kind == "F16" else (
            n // BLOCK_SIZE * BLOCK_BYTES[kind])  # fmt: skip
        start = self.data_start + offset
        if start + nbytes > len(self._data):
            raise ValueError(
                f"{self.path}: tensor {name!r} ({kind}, shape {shape}) needs bytes {start}.."
                f"{start + nbytes} but the file has {len(self._data)} (truncated?)"
            )
        return np.frombuffer(self._data, np.uint8, count=nbytes, offset=start)

    def tensor(self, name: str) -> np.ndarray:
        """Tensor ``name`` as float32 (dequantised with :func:`~course_lib.inference.dequantize`)."""
        raw = self.raw(name)
        shape, kind, _ = self.tensors[name]
        if kind == "F32":
            return raw.view(np.float32).reshape(shape).copy()
        if kind == "F16":
            return raw.view(np.float16).astype(np.float32).reshape(shape)
        return dequantize(raw, kind, shape)


def read_gguf(path: str | os.PathLike) -> GGUFFile:
    """Read the header of the GGUF file ``path`` (metadata and where each tensor is).

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file for
    anything else wrong: not GGUF, another version, a truncated or corrupt header, a tensor of a
    type the course does not read (it reads F32, F16, Q4_0, Q4_1, Q8_0) or that runs past the end.
    """
    path = check_path(path, "path")
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise ValueError(f"{path}: not a GGUF file: it is empty")
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    h = _Header(data, path)
    if bytes(data[:4]) != _MAGIC:
        raise ValueError(f"{path}: not a GGUF file: it starts {bytes(data[:4])!r}, not b'GGUF'")
    h.pos = 4
    version = h.take("<I")
    if version not in _VERSIONS:
        raise ValueError(f"{path}: GGUF version {version}; the course reads versions {_VERSIONS}")
    n_tensors, n_kv = h.take("<Q"), h.take("<Q")
    if n_tensors > len(data) or n_kv > len(data):
        raise h.fail(f"it claims {n_tensors} tensors and {n_kv} metadata entries")
    metadata = {}
    for _ in range(n_kv):
        key = h.string()
        metadata[key] = h.value(h.take("<I"))
    tensors = {}
    for _ in range(n_tensors):
        name = h.string()
        n_dims = h.take("<I")
        if not 1 <= n_dims <= 4:
            raise h.fail(f"tensor {name!r} has {n_dims} dimensions")
        dims = tuple(h.take("<Q") for _ in range(n_dims))
        kind, offset = h.take("<I"), h.take("<Q")
        if kind not in TENSOR_TYPES:
            raise ValueError(
                f"{path}: tensor {name!r} is stored as ggml type {kind}; the course reads "
                f"{', '.join(f'{v} ({k})' for k, v in TENSOR_TYPES.items())}"
            )
        tensors[name] = (dims[::-1], TENSOR_TYPES[kind], offset)  # ggml order -> torch order
    alignment = int(metadata.get("general.alignment", 32))
    data_start = -(-h.pos // alignment) * alignment
    gguf = GGUFFile(path, metadata, tensors, data_start, data)
    for name in tensors:  # every tensor lies inside the file: nothing fails half-way later
        gguf.raw(name)
    return gguf


def _need(gguf: GGUFFile, key: str):
    if key not in gguf.metadata:
        raise ValueError(f"{gguf.path}: the metadata has no {key!r}; is it a complete GGUF file?")
    return gguf.metadata[key]


def _model_config(gguf: GGUFFile):
    """The :class:`~course_lib.ModernConfig` of a Llama-architecture GGUF file (``llama.*``
    metadata; tied embeddings when the file has no ``output.weight``). Anything else is refused
    by name: another architecture, a RoPE scaling, a head size the rotation does not cover."""
    from ..configs import ModernConfig

    arch = _need(gguf, "general.architecture")
    if arch != "llama":
        raise ValueError(
            f"{gguf.path}: general.architecture is {arch!r}; the course's ModernLM reads 'llama'"
        )
    m = gguf.metadata
    for key in ("llama.rope.scaling.type", "llama.rope.scaling.factor"):
        if key in m and m[key] not in ("none", 1.0):
            raise ValueError(f"{gguf.path}: {key} = {m[key]!r}; ModernLM has plain RoPE only")
    d_model, heads = (
        _need(gguf, "llama.embedding_length"),
        _need(gguf, "llama.attention.head_count"),
    )
    if m.get("llama.rope.dimension_count", d_model // heads) != d_model // heads:
        raise ValueError(
            f"{gguf.path}: RoPE rotates {m['llama.rope.dimension_count']} of the "
            f"{d_model // heads} coordinates of a head; ModernLM rotates them all"
        )
    return ModernConfig(
        vocab_size=int(m.get("llama.vocab_size", len(_need(gguf, "tokenizer.ggml.tokens")))),
        d_model=int(d_model),
        num_heads=int(heads),
        num_kv_heads=int(m.get("llama.attention.head_count_kv", heads)),
        num_layers=int(_need(gguf, "llama.block_count")),
        d_ff=int(_need(gguf, "llama.feed_forward_length")),
        rope_theta=float(m.get("llama.rope.freq_base", 10000.0)),
        rms_eps=float(_need(gguf, "llama.attention.layer_norm_rms_epsilon")),
        tie_weights="output.weight" not in gguf.tensors,
        context_length=int(_need(gguf, "llama.context_length")),
    )


def _names(config) -> dict[str, str]:
    """Our parameter name -> the GGUF tensor name (llama.cpp's names for a Llama model)."""
    names = {"token_embedding.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    if not config.tie_weights:
        names["lm_head.weight"] = "output.weight"
    for i in range(config.num_layers):
        ours, theirs = f"blocks.{i}.", f"blk.{i}."
        names |= {
            ours + "norm1.weight": theirs + "attn_norm.weight",
            ours + "attn.w_q.weight": theirs + "attn_q.weight",  # rows already interleaved
            ours + "attn.w_k.weight": theirs + "attn_k.weight",  # (see the module docstring)
            ours + "attn.w_v.weight": theirs + "attn_v.weight",
            ours + "attn.w_o.weight": theirs + "attn_output.weight",
            ours + "norm2.weight": theirs + "ffn_norm.weight",
            ours + "ffn.gate.weight": theirs + "ffn_gate.weight",
            ours + "ffn.up.weight": theirs + "ffn_up.weight",
            ours + "ffn.down.weight": theirs + "ffn_down.weight",
        }
    return names


def _state_dict(gguf: GGUFFile, config) -> dict[str, np.ndarray]:
    """Every weight of the :class:`~course_lib.ModernLM` of ``config`` as float32 numpy arrays,
    dequantised from the file (the tied LM head is the embedding and is not listed). Refuses a
    missing tensor, a tensor the model does not have, or a shape that does not fit, before
    dequantising anything."""
    shapes = {k: tuple(v.shape) for k, v in _empty_model(config).state_dict().items()}
    names = _names(config)
    extra = sorted(set(gguf.tensors) - set(names.values()))
    if extra:
        raise ValueError(f"{gguf.path}: tensors a Llama ModernLM does not have: {extra[:5]}")
    for ours, theirs in names.items():
        if theirs not in gguf.tensors:
            raise ValueError(f"{gguf.path}: the tensor {theirs!r} (for our {ours!r}) is missing")
        if gguf.tensors[theirs][0] != shapes[ours]:
            raise ValueError(
                f"{gguf.path}: {theirs!r} has shape {gguf.tensors[theirs][0]}, our {ours!r} "
                f"needs {shapes[ours]}"
            )
    return {ours: gguf.tensor(theirs) for ours, theirs in names.items()}


def _tokenizer(gguf: GGUFFile):
    """The file's byte-level BPE (``tokenizer.ggml.model == "gpt2"``) as the course's
    :class:`~course_lib.tokenization.BPETokenizer`: the vocabulary (id = position in
    ``tokenizer.ggml.tokens``), the merges in rank order, and the control tokens (type 3, e.g.
    ``<|im_start|>``) as special tokens. Text is split with GPT-2's pattern, as ``transformers``
    does for this file (``tokenizer.ggml.pre`` names no other split it knows)."""
    from ..tokenization import BPETokenizer, bytes_to_unicode

    model = _need(gguf, "tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(
            f"{gguf.path}: tokenizer.ggml.model is {model!r}; the course reads byte-level BPE "
            "('gpt2')"
        )
    tokens = _need(gguf, "tokenizer.ggml.tokens")
    types = gguf.metadata.get("tokenizer.ggml.token_type", [1] * len(tokens))
    alphabet = set(bytes_to_unicode().values())
    spelling = bytes_to_unicode()
    vocab = {
        t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i
        for i, t in enumerate(tokens)
    }
    merges = [tuple(m.split(" ")) for m in _need(gguf, "tokenizer.ggml.merges")]
    special = [t for t, kind in zip(tokens, types, strict=True) if kind == 3 and set(t) <= alphabet]
    return BPETokenizer(vocab, merges, special_tokens=special, byte_level=True)


def _empty_model(config):
    """A :class:`~course_lib.ModernLM` of ``config`` with no storage (torch's meta device):
    its parameter names and shapes, built in no time and without a random initialisation."""
    from ..models.modern import ModernLM

    with torch.device("meta"):
        return ModernLM(config)


def _model_from_state(config, state: dict) -> nn.Module:
    """A :class:`~course_lib.ModernLM` of ``config`` (eval mode) that *uses* the float32 tensors
    of ``state`` (our parameter names, as :func:`_state_dict` gives them) without copying
    them; the LM head is tied to the embedding again when ``config.tie_weights``."""
    model = _empty_model(config)
    full = dict(state)
    if config.tie_weights:
        full["lm_head.weight"] = full["token_embedding.weight"]
    model.load_state_dict(full, strict=True, assign=True)
    if config.tie_weights:
        model.lm_head.weight = model.token_embedding.weight  # one parameter again
    return model.eval()


def from_gguf(path: str | os.PathLike):
    """``(model, tokenizer)`` from a Llama-architecture GGUF file, dequantised by the course's
    code: :func:`read_gguf` -> :func:`_model_config` -> :func:`_state_dict` ->
    :func:`_model_from_state`, and :func:`_tokenizer`. Everything is checked before the
    model is built: a bad file raises a ``ValueError`` naming it, never a half-loaded model.
    (:func:`course_lib.pretrained.load_smollm2` adds a cache of the dequantised weights.)"""
    gguf = read_gguf(path)
    config = _model_config(gguf)
    tokenizer = _tokenizer(gguf)
    state = {k: torch.from_numpy(v) for k, v in _state_dict(gguf, config).items()}
    return _model_from_state(config, state), tokenizer
