"""BERT's masked-LM head, for an encoder that was shipped without one (MiniLM).

    hidden (..., H) -> dense (H -> H) -> GELU -> LayerNorm -> @ E.T + bias -> scores (..., V)

``E`` is the encoder's own word-embedding matrix ``(V, H)``: the output layer is *tied* to the
input embeddings (as in BERT), so the head only owns the dense layer, the LayerNorm and one
bias per token (~0.2M parameters for MiniLM: 384 x 384 + 2 x 384 + 30,522 + 384).
``tools/training/train_mlm_head.py`` trains it on a frozen MiniLM's vectors of the Python documentation;
:func:`course_lib.pretrained.fill_mask` uses it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_last_dim, check_positive_int, check_positive_number

__all__ = ["MlmHead"]


class MlmHead(nn.Module):
    """``forward(hidden, word_embeddings) -> scores``.

    Args:
        hidden_size: H, the encoder's vector size.
        vocab_size: V, the number of WordPiece tokens.
        layer_norm_eps: epsilon of the LayerNorm (BERT: 1e-12).

    Shapes: ``hidden`` ``(..., H)``, ``word_embeddings`` ``(V, H)`` -> scores ``(..., V)``.
    """

    def __init__(self, hidden_size: int, vocab_size: int, layer_norm_eps: float = 1e-12):
        super().__init__()
        self.hidden_size = check_positive_int(hidden_size, "hidden_size")
        self.vocab_size = check_positive_int(vocab_size, "vocab_size")
        check_positive_number(layer_norm_eps, "layer_norm_eps")
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        check_last_dim(hidden, "hidden", self.hidden_size, "hidden_size", like=self)
        if tuple(word_embeddings.shape) != (self.vocab_size, self.hidden_size):
            raise ValueError(
                f"word_embeddings must be (vocab_size, hidden_size) = "
                f"({self.vocab_size}, {self.hidden_size}), got {tuple(word_embeddings.shape)}"
            )
        h = self.norm(F.gelu(self.dense(hidden)))  # (..., H)
        return h @ word_embeddings.T + self.bias  # (..., V): tied to the input embeddings
