"""Lecture 14's chat template and response-only mask, token by token (values read by hand)."""

from __future__ import annotations

import pytest

from course_lib.data.chat import CHAT_TOKENS, load_chat_tokenizer, render_chat
from course_lib.data.language_modeling import lm_tokenizer


@pytest.fixture(scope="module")
def tok():
    return load_chat_tokenizer()


def test_chat_tokens_extend_lecture_11s_tokenizer(tok):
    base = lm_tokenizer(512)
    assert len(tok) == 515
    assert [tok.vocab[t] for t in CHAT_TOKENS] == [512, 513, 514]
    for text in ("Reverse the words: open file", "héllo <|end|> 42"):
        assert tok.encode(text) == base.encode(text)  # text never becomes a chat token
    assert 514 not in tok.encode("<|end|>")
    assert tok.decode([513, 462, 316, 514]) == " open"
    assert (
        tok.decode([513, 462, 316, 514], skip_special_tokens=False) == "<|assistant|> open<|end|>"
    )


def test_render_chat_token_by_token(tok):
    ids, mask = render_chat(
        [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "open"}], tok
    )
    pieces = [tok.decode([i], skip_special_tokens=False) for i in ids]
    assert pieces == ["<|endoftext|>", "<|user|>", " ", "H", "i", " the", "re", "<|end|>",
                      "<|assistant|>", " op", "en", "<|end|>"]  # fmt: skip
    assert ids[:2] == [0, 512] and ids[7:9] == [514, 513] and ids[-1] == 514
    # True exactly on the assistant's tokens and its <|end|>
    assert mask == [False] * 9 + [True] * 3


def test_two_turns_and_the_generation_prompt(tok):
    chat = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    ids, mask = render_chat(chat, tok)
    pieces = [tok.decode([i], skip_special_tokens=False) for i in ids]
    assert pieces == ["<|endoftext|>", "<|user|>", " a", "<|end|>", "<|assistant|>", " b",
                      "<|end|>", "<|user|>", " c", "<|end|>", "<|assistant|>", " d", "<|end|>"]  # fmt: skip
    assert [p for p, m in zip(pieces, mask, strict=True) if m] == [" b", "<|end|>", " d", "<|end|>"]
    prompt, prompt_mask = render_chat(chat[:1], tok, add_generation_prompt=True)
    assert prompt == ids[:5] and prompt_mask == [False] * 5  # the prompt of the first answer


@pytest.mark.parametrize(
    ("messages", "error", "fragment"),
    [
        ([{"role": "system", "content": "x"}], ValueError, "must be one of ['assistant', 'user']"),
        ([], ValueError, "at least one message"),
        ("hello", TypeError, "messages must be a list"),
        ([{"role": "user"}], TypeError, "messages[0] must be a dict with the keys"),
        ([{"role": "user", "content": 3}], TypeError, "messages[0]['content'] must be a str"),
    ],
)
def test_bad_messages(tok, messages, error, fragment):
    with pytest.raises(error) as info:
        render_chat(messages, tok)
    assert fragment in str(info.value)


def test_a_tokenizer_without_chat_tokens_is_refused():
    with pytest.raises(TypeError, match="load_chat_tokenizer"):
        render_chat([{"role": "user", "content": "x"}], lm_tokenizer(512))
