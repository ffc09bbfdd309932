"""Lecture 14's chat template: conversations as one token stream, and the response-only mask.

A language model reads one sequence of ids. A conversation becomes one by putting a **role
token** before each message and an **end-of-turn token** after it::

    <|endoftext|> <|user|> ␣What is the first word of: open file?<|end|> <|assistant|> ␣open<|end|>
    \\____________________ the prompt: loss_mask False ____________________/            \\_ True _/

The three chat tokens are new ids added after lecture 11's byte-level BPE (512 tokens, ids
0..511): ``<|user|>`` 512, ``<|assistant|>`` 513, ``<|end|>`` 514. A message's text follows its
role token after one space, as words follow a space in the pretraining text (so the answer
``␣open`` is the same token as the word ``␣open`` in the question). The sequence starts with
``<|endoftext|>``, the token the pretrained model saw before every document.

**The response-only loss** trains only on what the assistant says: ``loss_mask`` is True
exactly on the assistant's tokens and its ``<|end|>`` (the model must learn to stop), False on
``<|endoftext|>``, on every role token and on everything the user wrote. To answer, the model
reads the prompt up to and including ``<|assistant|>`` (``add_generation_prompt=True``) and
generates until it writes ``<|end|>``.

**A real template: ChatML** (``template="chatml"``), the one SmolLM2-135M-Instruct was tuned
with (its GGUF file stores it as a Jinja template; :func:`render_chat` writes the same tokens)::

    <|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n
    <|im_start|>user\nWhat is the first word of: open file read?<|im_end|>\n
    <|im_start|>assistant\nopen<|im_end|>\n

The role is written as text after ``<|im_start|>``, then a newline and the message; a
conversation that does not start with a system message gets SmolLM2's default one. The text
between two special tokens is encoded as one piece, as ``transformers``' ``apply_chat_template``
encodes the rendered string. ``loss_mask`` is True on the assistant's content and its
``<|im_end|>``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from .._validation import check_choice, check_flag, check_str
from ..tokenization import BPETokenizer
from .language_modeling import END_OF_TEXT, lm_tokenizer

__all__ = [
    "USER",
    "ASSISTANT",
    "END_OF_TURN",
    "CHAT_TOKENS",
    "ROLES",
    "load_chat_tokenizer",
    "render_chat",
    "CHAT_TEMPLATES",
    "SMOLLM2_SYSTEM",
]

USER = "<|user|>"
ASSISTANT = "<|assistant|>"
END_OF_TURN = "<|end|>"
CHAT_TOKENS = (USER, ASSISTANT, END_OF_TURN)
ROLES = {"user": USER, "assistant": ASSISTANT}
BASE_VOCAB_SIZE = 512  # lecture 11's tokenizer (TINY_GPT_CONFIG.vocab_size)
CHAT_TEMPLATES = ("course", "chatml")
IM_START, IM_END = "<|im_start|>", "<|im_end|>"  # ChatML's two special tokens
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@functools.lru_cache(maxsize=1)
def load_chat_tokenizer() -> BPETokenizer:
    """Lecture 11's byte-level BPE (512 tokens) with the three chat tokens added as ids 512-514.

    ``encode(text)`` never produces a chat token (text is encoded as bytes: a user who types
    ``<|end|>`` gets the characters, not the token); :func:`render_chat` places them.
    ``decode`` skips them unless ``skip_special_tokens=False``.
    """
    base = lm_tokenizer(BASE_VOCAB_SIZE)
    vocab = dict(base.vocab)
    for token in CHAT_TOKENS:
        vocab[token] = len(vocab)
    return BPETokenizer(
        vocab,
        base.merges,
        special_tokens=[END_OF_TEXT, *CHAT_TOKENS],
        byte_level=True,
    )


def _check_messages(messages, roles=ROLES) -> list[tuple[str, str]]:
    if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError(
            "messages must be a list of {'role': 'user' | 'assistant', 'content': str} dicts, "
            f"got {type(messages).__name__}"
        )
    if not messages:
        raise ValueError("messages must hold at least one message, got an empty list")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            got = sorted(message) if isinstance(message, Mapping) else type(message).__name__
            raise TypeError(
                f"messages[{i}] must be a dict with the keys 'role' and 'content', got {got}"
            )
        role = message["role"]
        if role not in roles:
            raise ValueError(f"messages[{i}]['role'] must be one of {sorted(roles)}, got {role!r}")
        out.append((role, check_str(message["content"], f"messages[{i}]['content']")))
    return out


def render_chat(
    messages: Sequence[Mapping[str, str]],
    tokenizer: BPETokenizer,
    add_generation_prompt: bool = False,
    template: str = "course",
) -> tuple[list[int], list[bool]]:
    """One conversation as ``(ids, loss_mask)``, two lists of the same length.

    ``template="chatml"``: SmolLM2's ChatML (module docstring; roles "system", "user",
    "assistant"; the tokenizer of :func:`course_lib.pretrained.load_smollm2`). The rest of this
    docstring is the course's template (the default):

    ``messages``: ``[{"role": "user" | "assistant", "content": str}, ...]``. Each message
    becomes ``[role token] + encode(" " + content) + [<|end|>]``, after one ``<|endoftext|>``.
    ``loss_mask[t]`` is True exactly on the assistant's content tokens and its ``<|end|>``.
    ``add_generation_prompt=True`` appends ``<|assistant|>`` (mask False): the prompt the model
    answers.

    Raises:
        TypeError: messages not a list of ``{"role", "content"}`` dicts, or a tokenizer without
            the chat tokens (use :func:`load_chat_tokenizer`).
        ValueError: an empty list or an unknown role.
    """
    turns, vocab = _check_render_inputs(messages, tokenizer, add_generation_prompt, template)
    if template == "chatml":
        return _render_chatml(turns, tokenizer, add_generation_prompt)
    ids, mask = [vocab[END_OF_TEXT]], [False]
    for role, content in turns:
        body = tokenizer.encode(" " + content) + [vocab[END_OF_TURN]]
        ids += [vocab[ROLES[role]]] + body
        mask += [False] + [role == "assistant"] * len(body)
    if add_generation_prompt:
        ids.append(vocab[ASSISTANT])
        mask.append(False)
    return ids, mask


def _check_render_inputs(messages, tokenizer, add_generation_prompt, template):
    """render_chat's door: ``(turns, vocab)``, the messages as ``(role, content)`` pairs and the
    tokenizer's vocabulary, once the template, the flag, the messages and the tokenizer pass."""
    template = check_choice(template, "template", CHAT_TEMPLATES)
    check_flag(add_generation_prompt, "add_generation_prompt")
    if template == "chatml":
        turns = _check_messages(messages, roles=("system", "user", "assistant"))
        vocab = getattr(tokenizer, "vocab", None)
        if (
            not hasattr(tokenizer, "encode")
            or not isinstance(vocab, Mapping)
            or IM_START not in vocab
        ):
            raise TypeError(
                "tokenizer must know ChatML's <|im_start|> and <|im_end|> (the tokenizer of "
                f"load_smollm2()), got {type(tokenizer).__name__}"
            )
        return turns, vocab
    turns = _check_messages(messages)
    vocab = getattr(tokenizer, "vocab", None)
    if (
        not hasattr(tokenizer, "encode")
        or not isinstance(vocab, Mapping)
        or any(t not in vocab for t in (END_OF_TEXT, *CHAT_TOKENS))
    ):
        raise TypeError(
            "tokenizer must know the chat tokens <|endoftext|>, <|user|>, <|assistant|>, "
            f"<|end|> (use load_chat_tokenizer()), got {type(tokenizer).__name__}"
        )
    return turns, vocab


def _render_chatml(turns, tokenizer, add_generation_prompt: bool) -> tuple[list[int], list[bool]]:
    """ChatML as SmolLM2's template writes it (see the module docstring), of checked turns."""
    vocab = tokenizer.vocab
    if turns[0][0] != "system":
        turns = [("system", SMOLLM2_SYSTEM), *turns]
    ids: list[int] = []
    mask: list[bool] = []
    for role, content in turns:
        head = tokenizer.encode(role + "\n")
        body = tokenizer.encode(role + "\n" + content)  # one piece between two special tokens
        if body[: len(head)] != head:  # the role's tokens merged into the content's
            head = []
        answer = role == "assistant"
        ids += [vocab[IM_START], *body, vocab[IM_END], *tokenizer.encode("\n")]
        mask += [False] * (1 + len(head)) + [answer] * (len(body) - len(head) + 1) + [False]
    if add_generation_prompt:
        prompt = [vocab[IM_START], *tokenizer.encode("assistant\n")]
        ids += prompt
        mask += [False] * len(prompt)
    return ids, mask
