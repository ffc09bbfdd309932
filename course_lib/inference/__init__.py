"""Inference on a CPU: quantised weights (llama.cpp's block formats). numpy only."""

from .quantization import *  # noqa: F403
from .quantization import __all__ as _quantization_all

__all__ = [*_quantization_all]
