"""The sinusoidal positional encoding of "Attention Is All You Need", as in the notes.

    PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))

Column pairs (2i, 2i + 1) share one frequency ``omega_i = 10000^(-2i/d_model)``: the first
pair turns fastest (one radian per position), the last one slowest.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_positive_int

__all__ = ["positional_encoding"]


def positional_encoding(num_positions: int, d_model: int) -> np.ndarray:
    """The sinusoidal table ``(num_positions, d_model)`` in float64; row ``pos`` encodes ``pos``.

    Row ``pos`` is added to the embedding of the token at position ``pos`` (counted from 0).

    Raises:
        ValueError: ``d_model`` is odd or not positive, or ``num_positions`` is negative
            (``num_positions = 0`` gives an empty ``(0, d_model)`` table).
        TypeError: a size that is not an integer.
    """
    num_positions = check_positive_int(num_positions, "num_positions", allow_zero=True)
    d_model = check_positive_int(d_model, "d_model", allow_zero=True)
    if d_model == 0 or d_model % 2:
        raise ValueError(
            f"d_model must be a positive even number (sin/cos come in pairs), got {d_model}"
        )
    pos = np.arange(num_positions, dtype=np.float64)[:, None]  # (num_positions, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # 2i = 0, 2, 4, ...
    angle = pos / 10000.0 ** (two_i / d_model)  # (num_positions, d_model / 2)
    pe = np.empty((num_positions, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe
