"""Input checks shared by the public functions: clear errors at the boundary.

Every public function in ``course_lib`` validates its arguments here, so a student who passes
the wrong thing reads which argument was wrong, the shape it had and the shape it needed,
instead of a numpy broadcasting traceback or a silent NaN.

It is longer than the course's other modules on purpose: issue 18 asks for *one* validation
module for numpy and torch, so that each message is written once and every function body
stays as short as its formula.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

__all__: list[str] = []  # private helpers; nothing is re-exported


class _TorchOnFirstUse:
    """``torch``, imported the first time a torch check runs: the numpy half of course_lib (and
    the browser edition, which has no torch) imports this module without torch."""

    def __getattr__(self, attr: str):
        from ._optional import require

        module = require("torch", "this check")
        globals()["torch"] = module  # from now on the module itself, no detour
        return getattr(module, attr)


torch = _TorchOnFirstUse()


def as_float_array(x, name: str, *, min_ndim: int = 0) -> np.ndarray:
    """Return ``x`` as a floating numpy array, or raise a ``TypeError``/``ValueError`` naming it.

    Integer and boolean inputs are promoted to float64; float16/32/64 are kept as they are, so
    float32 stays float32. Strings, objects and complex numbers are refused. A torch tensor is
    read as the numpy array it converts to (the result is numpy), one that requires grad refused.
    """
    if getattr(x, "requires_grad", False):  # a torch tensor in an autograd graph
        raise TypeError(
            f"{name} is a torch tensor that requires grad; these numpy functions take plain "
            f"arrays: pass {name}.detach().numpy()"
        )
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for instance
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}") from exc
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f":
        raise TypeError(
            f"{name} must contain real numbers, got dtype {arr.dtype} ({type(x).__name__})"
        )
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}"
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one element")
    return arr


def check_scores_finite(scores: np.ndarray, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``scores`` (``q k^T``, scaled) if no entry overflowed to +-inf, else a ValueError naming
    q and k, their largest entries and their dtype. ``q`` and ``k`` are finite already, so an
    infinite score can only be an overflow."""
    if not np.isfinite(scores).all():
        raise ValueError(
            f"q @ k^T overflowed to inf; scale down q and k (largest |q| {np.abs(q).max():.3g}, "
            f"|k| {np.abs(k).max():.3g}; {scores.dtype} holds at most "
            f"{np.finfo(scores.dtype).max:.3g})"
        )
    return scores


def as_finite_array(x, name: str, *, min_ndim: int = 0) -> np.ndarray:
    """:func:`as_float_array`, refusing nan and inf (where they cannot mean anything)."""
    arr = as_float_array(x, name, min_ndim=min_ndim)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains nan or inf; it needs finite numbers")
    return arr


def check_float_buffer(x, name: str) -> np.ndarray:
    """Return ``x`` if it is a floating numpy array (to be overwritten in place), else raise."""
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"{name} must be a float numpy array (it is overwritten in place), "
            f"got {type(x).__name__}"
        )
    if x.dtype.kind != "f":
        raise TypeError(
            f"{name} must be a float numpy array (it is overwritten in place), got dtype {x.dtype}"
        )
    return x


def check_flag(value, name: str) -> bool:
    """``value`` if it is True or False (numpy's bools too); a str such as ``"no"`` would be
    silently true, so anything else is a ``TypeError`` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r:.40}")
    return bool(value)


def check_float_dtype(dtype, name: str, why: str) -> np.dtype:
    """``dtype`` as a floating numpy dtype (float16/32/64), else a ``TypeError`` saying ``why``."""
    try:
        dt = np.dtype(dtype) if isinstance(dtype, (type, str, np.dtype)) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise TypeError(f"{name} must be a floating dtype ({why}), got {dtype!r:.40}")
    return dt


def check_labels(labels, name: str, n: int, what: str) -> list:
    """``labels`` (a list of tokens, not a str) as a list of ``n`` entries, else raise naming
    ``name`` and ``what`` has ``n``."""
    labels = check_token_sequence(labels, name)
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} entries but {what} has {n}")
    return labels


def as_bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a boolean array (True = may attend), refusing non-boolean dtypes."""
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be boolean (True = may attend), got dtype {arr.dtype}; "
            "build it with causal_mask()/padding_mask() or a comparison such as `x > 0`"
        )
    return arr


def check_positive_int(value, name: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an ``int`` if it is a (positive) integer, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    low = 0 if allow_zero else 1
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def broadcast_shape(shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Broadcast the named shapes together, or raise a ``ValueError`` that names them all."""
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = ", ".join(f"{k} {v}" for k, v in shapes.items())
        raise ValueError(f"shapes do not broadcast: {listed}") from None


def check_dropout(p, name: str = "dropout") -> float:
    """Return ``p`` as a float if it is a dropout probability in ``[0, 1)``, else raise."""
    if not isinstance(p, numbers.Real) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1), got {p!r}")
    return float(p)


def check_heads(
    d_model: int, num_heads: int, num_kv_heads: int | None = None,
    names: tuple[str, str] = ("d_model", "num_heads"),
) -> None:  # fmt: skip
    """``d_model`` and ``num_heads`` positive integers with ``num_heads`` dividing ``d_model``
    (and ``num_kv_heads`` dividing ``num_heads``). The one place this rule is written; ``names``
    spell the sizes as the caller's config does (e.g. ``hidden_size``, ``num_attention_heads``)."""
    d_name, h_name = names
    check_positive_int(d_model, d_name)
    check_positive_int(num_heads, h_name)
    if d_model % num_heads:
        raise ValueError(
            f"{d_name}={d_model} is not divisible by {h_name}={num_heads}; each head gets "
            f"{d_name} / {h_name} features"
        )
    if num_kv_heads is not None and num_heads % check_positive_int(num_kv_heads, "num_kv_heads"):
        raise ValueError(
            f"num_kv_heads={num_kv_heads} must divide {h_name}={num_heads} (each key/value "
            "head serves the same number of query heads)"
        )


def check_eps(eps, name: str = "eps") -> float:
    """Return ``eps`` as a float if it is a number >= 0 (added inside a square root), else raise."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0 <= eps < np.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {eps!r}")
    return float(eps)


def inner_checks_off(model) -> None:
    """Turn off the input checks of ``model``'s submodules (their ``checks`` flag): the model's
    own ``forward`` checks its input at the door, once for all layers."""
    for module in model.modules():
        if module is not model and hasattr(module, "checks"):
            module.checks = False


def check_features(x, name: str, d_model: int, size_name: str = "d_model", *, like=None):
    """Return ``x`` if it is a torch tensor ``(batch, n, d_model)`` (of the dtype of the module
    ``like``'s weights, if given), else raise naming it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor (token vectors), got {x.dtype}")
    if x.ndim != 3 or x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (batch, n, {size_name}={d_model}), got {tuple(x.shape)}"
        )
    return _check_dtype_like(x, name, like)


def check_last_dim(x, name: str, size: int, size_name: str = "d_model", *, like=None):
    """Return ``x`` if it is a floating torch tensor ``(..., size)`` (of the dtype of the module
    ``like``'s weights, if given), else raise naming it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor (..., {size_name}={size}), got {type(x).__name__}"
        )
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != size:
        raise ValueError(f"{name} must end with {size_name}={size}, got {tuple(x.shape)}")
    return _check_dtype_like(x, name, like)


def _check_dtype_like(x, name: str, module):
    """``x`` if ``module`` is None or its first floating weight has ``x``'s dtype; else a
    ``TypeError`` naming ``x`` and both dtypes (torch's own says only "mat1 and mat2")."""
    if module is None:
        return x
    weight = next((p for p in module.parameters() if p.is_floating_point()), None)
    if weight is not None and weight.dtype != x.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but {type(module).__name__}'s weights are "
            f"{weight.dtype}: convert one to the other ({name}.to({weight.dtype}) or "
            f"model.to({x.dtype}))"
        )
    return x


def check_shape(x, name: str, layout: str, shape: tuple) -> torch.Tensor:
    """Return ``x`` if it is a torch tensor whose shape matches ``shape`` (``None`` = any size
    on that axis), else raise naming it and the ``layout`` it needs."""
    check_tensor(x, name, len(shape), layout)
    if any(want is not None and got != want for got, want in zip(x.shape, shape, strict=True)):
        raise ValueError(f"{name} must have shape {layout}, got {tuple(x.shape)}")
    return x


def check_positive_number(value, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number > 0, else raise naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__} {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_qkv(q, k, v, names: tuple[str, str, str] = ("q", "k", "v")):
    """q ``(..., n_q, d_k)``, k ``(..., n_k, d_k)``, v ``(..., n_k, d_v)`` as finite float arrays of
    one dtype, with broadcastable leading axes; else a ``ValueError``/``TypeError`` naming them
    (by ``names``: ``("q_block", "k_block", "v_block")`` for one block of chunked attention)."""
    nq, nk, nv = names
    q = as_float_array(q, nq, min_ndim=2)
    k = as_float_array(k, nk, min_ndim=2)
    v = as_float_array(v, nv, min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"{nq} and {nk} must have the same feature size d_k: {nq} has shape {q.shape} "
            f"(..., n_q, d_k={q.shape[-1]}), {nk} has shape {k.shape} (..., n_k, d_k={k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"{nk} and {nv} must have the same number of positions n_k: {nk} has shape {k.shape} "
            f"(n_k={k.shape[-2]}), {nv} has shape {v.shape} (n_k={v.shape[-2]})"
        )
    broadcast_shape({f"{n}[..., :-2]": a.shape[:-2] for n, a in ((nq, q), (nk, k), (nv, v))})
    for name, arr in ((nq, q), (nk, k), (nv, v)):
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains nan or inf; attention needs finite inputs")
    dtype = np.result_type(q, k, v)
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False)


def check_attention_mask(mask, n_q: int, n_k: int, batch: tuple[int, ...]) -> np.ndarray:
    """A boolean numpy mask (True = may attend) that broadcasts to ``(*batch, n_q, n_k)`` without
    enlarging it and leaves every query at least one key; else a ``ValueError``/``TypeError``."""
    m = as_bool_mask(mask, "mask")
    expected = (*batch, n_q, n_k)
    try:
        full = np.broadcast_shapes(m.shape, expected)
    except ValueError:
        raise ValueError(
            f"mask of shape {m.shape} does not broadcast to the scores' shape {expected} "
            "(..., n_q, n_k)"
        ) from None
    if full != expected:
        raise ValueError(
            f"mask of shape {m.shape} would enlarge the scores' shape {expected} to {full}; "
            "it must broadcast to (..., n_q, n_k)"
        )
    hidden = ~np.broadcast_to(m, full).any(axis=-1)
    if hidden.any():
        where = tuple(int(i) for i in np.argwhere(hidden)[0])
        raise ValueError(
            f"mask hides every key from some query (first at index {where} of (..., n_q)); "
            "each query needs at least one True in its row"
        )
    return m


def check_token_sequence(tokens, name: str) -> list:
    """A list/tuple/array of tokens (strings or ids) as a list; a ``str`` is refused, since
    iterating it would silently give its characters."""
    if isinstance(tokens, str):
        raise TypeError(
            f"{name} must be a list of tokens, got the str {tokens!r:.40}; "
            f"split it into tokens first (e.g. {name}.split())"
        )
    if not isinstance(tokens, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a list of tokens, got {type(tokens).__name__}")
    return list(tokens)


def check_special_tokens(special_tokens, unk_token) -> list[str]:
    """``special_tokens`` as a list of str, and ``unk_token`` None or a str; else a TypeError
    naming the argument."""
    tokens = check_token_sequence(special_tokens, "special_tokens")
    for i, t in enumerate(tokens):
        check_str(t, f"special_tokens[{i}]")
    if unk_token is not None:
        check_str(unk_token, "unk_token")
    return tokens


def check_finite_loss(loss, step: int):
    """A scalar loss tensor that is finite; else a ``TypeError``/``ValueError`` naming the step."""
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise TypeError(
            "loss_fn must return a scalar torch.Tensor, got "
            f"{type(loss).__name__}{tuple(loss.shape) if isinstance(loss, torch.Tensor) else ''}"
        )
    if not torch.isfinite(loss).all():
        raise ValueError(
            f"the loss is {loss.item()} at step {step}: training stopped (a nan/inf loss would "
            "silently ruin every weight); check the batch (e.g. no position to predict), "
            "lower lr, or clip gradients"
        )
    return loss


def check_module(module, name: str = "model"):
    """Return ``module`` if it is a ``torch.nn.Module``, else a ``TypeError`` naming it."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(module).__name__}")
    return module


def check_callable(fn, name: str, what: str = "callable"):
    """Return ``fn`` if it is callable, else a ``TypeError`` saying what it should be."""
    if not callable(fn):
        raise TypeError(f"{name} must be {what}, got {type(fn).__name__}")
    return fn


def check_path(path, name: str):
    """A file path (str or os.PathLike) as a ``pathlib.Path``."""
    import os
    from pathlib import Path

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or Path), got {type(path).__name__}")
    return Path(path)


def check_str(text, name: str) -> str:
    """Return ``text`` if it is a ``str``, else a ``TypeError`` naming it."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


def check_tensor(x, name: str, ndim: int | None, layout: str) -> torch.Tensor:
    """Return ``x`` if it is a torch tensor with ``ndim`` axes (None: any), else raise naming it
    and the ``layout`` it needs (e.g. ``"(batch, n)"``). Checks type and rank only: no data scan."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {layout}, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have shape {layout}, got {tuple(x.shape)}")
    return x


def check_token_ids(
    ids, name: str, layout: str = "(batch, n)", vocab_size: int | None = None,
    size_name: str = "vocab_size",
):  # fmt: skip
    """Return ``ids`` if it is a non-empty ``torch.long`` tensor of the ``layout``'s rank whose
    values lie in ``[0, vocab_size)``; else a ``TypeError``/``ValueError`` naming it. The range
    check reads the ids once (a few numbers per position, nothing next to the model)."""
    ndim = layout.strip("()").rstrip(",").count(",") + 1  # "(batch, n)" -> 2, "(n,)" -> 1
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
        got = f"{ids.dtype} tensor" if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be a torch.long tensor of token ids {layout}, got {got}")
    if ids.ndim != ndim or ids.numel() == 0:
        raise ValueError(
            f"{name} must have shape {layout} with no empty axis, got {tuple(ids.shape)}"
        )
    if vocab_size is not None and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(
            f"{name} must lie in [0, {size_name}={vocab_size}), got ids from {int(ids.min())} "
            f"to {int(ids.max())}"
        )
    return ids


def check_index(value, name: str, size: int, size_name: str | None = None) -> int:
    """Return ``value`` if it is an integer in ``[0, size)``, else raise naming it. The message
    names the bound (``[0, vocab_size=5)``) or, without ``size_name``, spells the range out
    (``0..4``: a layer or head number)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        where = f"[0, {size_name}={size})" if size_name else f"0..{size - 1}"
        raise ValueError(f"{name} must be in {where}, got {value}")
    return int(value)


def checkpoint_path(path, default):
    """The checkpoint file to load: ``default`` for None, else ``path`` if it names an existing
    file; a ``TypeError``/``FileNotFoundError`` naming ``path`` otherwise."""
    from pathlib import Path

    if path is None:
        return default
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"path {str(path)!r}: no such checkpoint file")
    return path


def read_checkpoint(path, kind: str) -> dict:
    """``torch.load(path)`` (CPU, ``weights_only=True``), or a ``ValueError`` naming the file when
    it is not a file saved with ``torch.save`` (a text file, a truncated download, ...)."""
    import pickle
    import zipfile

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError, zipfile.BadZipFile, KeyError) as exc:
        raise ValueError(
            f"path {str(path)!r} is not a {kind} checkpoint: torch.load cannot read it "
            f"({type(exc).__name__}); give a file saved with torch.save"
        ) from None


def check_checkpoint(ckpt, keys: tuple[str, ...], path, kind: str, config_fields=None) -> dict:
    """``ckpt`` if it is a dict holding ``keys`` (and, given ``config_fields``, a ``"config"``
    with no other field), else a ``ValueError`` saying what it is not."""
    missing = [k for k in keys if not isinstance(ckpt, dict) or k not in ckpt]
    extra = (
        [] if missing or config_fields is None else sorted(set(ckpt["config"]) - set(config_fields))
    )
    if missing or extra:
        lacks = f"it lacks {missing}" if missing else f"its config has the fields {extra}"
        raise ValueError(
            f"path {str(path)!r} is not a {kind} checkpoint: {lacks} (another model's?)"
        )
    return ckpt


def check_src_mask(src: torch.Tensor, src_mask) -> torch.Tensor:
    """A boolean ``(batch, S)`` mask of the real source tokens, the first of each row real."""
    if not isinstance(src_mask, torch.Tensor) or src_mask.dtype != torch.bool:
        raise TypeError(
            "src_mask must be a boolean tensor (True = real token), e.g. batch.src_mask"
        )
    if src_mask.shape != src.shape:
        raise ValueError(
            f"src_mask must have the shape of src {tuple(src.shape)}, got {tuple(src_mask.shape)}"
        )
    if not src_mask[:, 0].all():
        raise ValueError("src_mask must mark at least the first token of every sentence as real")
    if (src_mask[:, 1:] & ~src_mask[:, :-1]).any():  # a real token after a padded one
        row = int((src_mask[:, 1:] & ~src_mask[:, :-1]).any(dim=1).nonzero()[0])
        raise ValueError(
            f"src_mask row {row} has a hole ({src_mask[row].int().tolist()}): the real tokens "
            "come first and the padding after them, as make_batch builds it"
        )
    return src_mask


def check_translation_sizes(src_vocab: int, tgt_vocab: int, pad_id: int, **sizes: int) -> None:
    """Vocabulary sizes and layer widths of a translation model: positive integers, with
    ``pad_id`` a valid id of both vocabularies."""
    for name, value in {"src_vocab": src_vocab, "tgt_vocab": tgt_vocab, **sizes}.items():
        check_positive_int(value, name)
    check_index(pad_id, "pad_id", src_vocab, "src_vocab")
    check_index(pad_id, "pad_id", tgt_vocab, "tgt_vocab")


def check_choice(value, name: str, choices, where: str = ""):
    """Return ``value`` if it is one of ``choices`` (str keys), else a ``ValueError`` listing them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}{where}, got {value!r}")
    return value


def check_type(value, name: str, kind: type):
    """Return ``value`` if it is a ``kind``, else a ``TypeError`` naming it and what it got."""
    if not isinstance(value, kind):
        raise TypeError(
            f"{name} must be a {kind.__name__}, got {type(value).__name__} {value!r:.40}"
        )
    return value


def check_probability(p, name: str) -> float:
    """Return ``p`` as a float if it is a probability in ``[0, 1]``, else raise naming it."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


def check_class_ids(values, name: str, num_classes: int) -> np.ndarray:
    """``values`` as an integer array of class ids in ``[0, num_classes)``, else raise naming it."""
    v = np.asarray(values)
    if v.dtype.kind not in "iuf" or v.ndim != 1:
        raise TypeError(
            f"{name} must be a list or 1-D array of class ids, got {type(values).__name__}"
            + (f" of dtype {v.dtype}, shape {v.shape}" if isinstance(values, np.ndarray) else "")
        )
    bad = v[(v < 0) | (v >= num_classes)] if v.dtype.kind in "iu" else v.ravel()
    if bad.size:
        raise ValueError(
            f"{name} must lie in [0, num_classes={num_classes}), got {bad[0].item()!r}"
        )
    return v


def check_generator(generator, name: str = "generator"):
    """``generator`` if it is None or a ``torch.Generator``, else a TypeError naming it."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"{name} must be a torch.Generator or None, got {type(generator).__name__} "
            f"{generator!r:.40}; make one with torch.Generator().manual_seed(0)"
        )
    return generator


def check_context(model) -> int:
    """A language model's context length: its integer ``context_length`` attribute, else a TypeError."""
    context = getattr(model, "context_length", None)
    if isinstance(context, bool) or not isinstance(context, int):
        raise TypeError(
            f"model must have an integer context_length attribute (its context length), got "
            f"{type(model).__name__} with context_length={context!r}"
        )
    return context
