"""Turn any attention the course produces into one array ``(layers, heads, n_q, n_k)``.

The course makes attention weights in many shapes: the numpy functions give ``(n_q, n_k)`` or
``(heads, n_q, n_k)``; the torch modules give ``(batch, heads, n_q, n_k)`` (tagged
``attention_layout = "batch"``, so that a batch is never drawn as layers); Hugging Face models
give a tuple with one ``(batch, heads, n, n)`` tensor per layer. The plots and the interactive
views all accept any of these, and fail here with a message that names what was passed,
instead of deep inside bertviz or matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import check_index

__all__: list[str] = []  # private helpers

SHAPES_HELP = (
    "pass one of: (n_q, n_k); (heads, n_q, n_k); (layers, heads, n_q, n_k); "
    "(layers, 1, heads, n_q, n_k); or a list with one (heads, n_q, n_k) or (1, heads, n_q, n_k) "
    "array/tensor per layer (what Hugging Face returns as outputs.attentions)"
)


def _to_numpy(x, name: str) -> np.ndarray:
    """numpy or torch (any device, with or without grad) -> float64 numpy, refusing the rest."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor; torch is not imported here
        x = x.detach().cpu()
        if not x.is_floating_point() or x.element_size() < 4:  # ints, bool, float16, bfloat16
            x = x.float()
        x = x.numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for instance
        raise TypeError(
            f"{name} must be an array or tensor of numbers, got {type(x).__name__}"
        ) from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must contain real numbers, got dtype {arr.dtype} ({type(x).__name__})"
        )
    return arr.astype(np.float64)


def _one_layer(x, name: str) -> np.ndarray:
    """One layer's weights -> (heads, n_q, n_k)."""
    arr = _to_numpy(x, name)
    if arr.ndim == 2:
        return arr[None]
    if arr.ndim == 3:
        return arr
    if arr.ndim == 4:
        if arr.shape[0] != 1:
            raise ValueError(
                f"{name} has shape {arr.shape}: a batch of {arr.shape[0]} sequences; the views "
                "show one sequence, so pick one with [i : i + 1] (shape (1, heads, n_q, n_k))"
            )
        return arr[0]
    raise ValueError(f"{name} must have 2, 3 or 4 dimensions, got shape {arr.shape}; {SHAPES_HELP}")


def as_attention_stack(attention, name: str = "attention") -> np.ndarray:
    """Return ``attention`` as a float64 array ``(layers, heads, n_q, n_k)``, or raise.

    A list/tuple is one entry per layer; a single array or tensor is read by its number of
    dimensions (see ``SHAPES_HELP``). The weights must be finite and non-negative (they come
    out of a softmax); scores before the softmax are refused with a hint.
    """
    if isinstance(attention, (list, tuple)):
        if len(attention) == 0:
            raise ValueError(f"{name} is an empty {type(attention).__name__}; {SHAPES_HELP}")
        layers = [_one_layer(a, f"{name}[{i}]") for i, a in enumerate(attention)]
        shapes = {layer.shape for layer in layers}
        if len(shapes) != 1:
            listed = ", ".join(f"{name}[{i}] {a.shape}" for i, a in enumerate(layers))
            raise ValueError(f"every layer must have the same (heads, n_q, n_k), got {listed}")
        stack = np.stack(layers)
    elif getattr(attention, "attention_layout", None) == "batch":  # a torch module's weights
        arr = _to_numpy(attention, name)
        if arr.ndim != 4 or arr.shape[0] != 1:
            raise ValueError(
                f"{name} has shape {arr.shape}: a torch module's attention weights, read as "
                f"(batch, heads, n_q, n_k) with a batch of {arr.shape[0]}, not as "
                "(layers, heads, n_q, n_k); pick one sequence with [i] (heads, n_q, n_k), or "
                "pass one (heads, n_q, n_k) entry per layer, e.g. [w[i] for w in "
                "encoder.attention_weights]"
            )
        stack = arr  # (1, heads, n_q, n_k): one sequence, drawn as one row of heads
    else:
        arr = _to_numpy(attention, name)
        if arr.ndim == 2:
            stack = arr[None, None]
        elif arr.ndim == 3:
            stack = arr[None]
        elif arr.ndim == 4:
            stack = arr
        elif arr.ndim == 5:
            if arr.shape[1] != 1:
                raise ValueError(
                    f"{name} has shape {arr.shape}, read as (layers, batch, heads, n_q, n_k) with "
                    f"a batch of {arr.shape[1]}; pick one sequence with [:, i : i + 1]"
                )
            stack = arr[:, 0]
        else:
            raise ValueError(f"{name} has shape {arr.shape}; {SHAPES_HELP}")
    if stack.size == 0:
        raise ValueError(f"{name} is empty (shape {stack.shape})")
    return check_weights(stack, name)


def check_weights(weights: np.ndarray, name: str) -> np.ndarray:
    """``weights`` if they are finite and non-negative (attention weights, after the softmax),
    else a ValueError naming ``name`` and pointing signed values to ``plot_heatmap``."""
    if not np.all(np.isfinite(weights)):
        raise ValueError(f"{name} contains nan or inf; attention weights must be finite")
    if weights.min() < -1e-6:
        raise ValueError(
            f"{name} has negative entries (min {weights.min():.3g}); pass the attention weights "
            "after the softmax, not the scores (draw signed values with plot_heatmap)"
        )
    return weights


def check_tokens(tokens, n: int, name: str, axis: str, shape: tuple[int, ...]) -> list[str]:
    """Return ``tokens`` as a list of str, or raise if their count differs from ``n``."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"{name} must be a list of strings (one per position), got {type(tokens).__name__}; "
            "for a Hugging Face tokenizer use tokenizer.convert_ids_to_tokens(input_ids[0])"
        )
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(
            f"{name} has {len(tokens)} tokens but the attention has {n} {axis} positions "
            f"(attention shape (layers, heads, n_q, n_k) = {shape}); count the special "
            "tokens such as [CLS] and [SEP] too"
        )
    return tokens


def check_indices(values, n: int, name: str) -> list[int] | None:
    """``None`` or a non-empty list of distinct indices in ``range(n)`` (one index alone is a
    list of one)."""
    if values is None:
        return None
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = [values]
    if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(
            f"{name} must be a list of indices in 0..{n - 1} (or one index, or None for all), "
            f"got {type(values).__name__} {values!r:.40}"
        )
    values = [check_index(v, f"{name}[{i}]", n) for i, v in enumerate(values)]
    if not values:
        raise ValueError(f"{name} is empty; pass None for all of them")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} has repeated entries: {values}")
    return values


def check_plot_options(*, ax=None, **options) -> None:
    """The options every plot shares, checked at its door: text (``title``, ``xlabel``, ...:
    a str or None), flags (``annotate``, ``mark_max``: True or False), ``cmap`` (a matplotlib
    colormap's name), ``vmin``/``vmax`` (None or a finite number), ``cell_size`` (a positive
    number) and ``ax`` (None or a matplotlib Axes). A ``TypeError``/``ValueError`` names the
    option."""
    import numbers

    from matplotlib import colormaps
    from matplotlib.axes import Axes

    from .._validation import check_flag, check_positive_number

    for name, value in options.items():
        if name in ("annotate", "mark_max", "prettify_tokens"):
            check_flag(value, name)
        elif name == "cmap":
            if not isinstance(value, str) or value not in colormaps:
                raise ValueError(
                    f"cmap must be the name of a matplotlib colormap, got {value!r:.40}"
                )
        elif name in ("vmin", "vmax"):
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                      or not np.isfinite(value)):  # fmt: skip
                raise ValueError(f"{name} must be None or a finite number, got {value!r:.40}")
        elif name == "cell_size":
            if not np.isfinite(check_positive_number(value, name)):
                raise ValueError(f"cell_size must be a finite number > 0 (inches), got {value!r}")
        elif value is not None and not isinstance(value, str):
            raise TypeError(
                f"{name} must be a str or None, got {type(value).__name__} {value!r:.40}"
            )
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
