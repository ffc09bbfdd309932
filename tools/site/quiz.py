"""The quizzes on the site (one page per lecture) and at the end of each deck.

Both are rendered from the quiz files (``course_lib/quizzes/*.toml``), the same source as the
graded notebooks. On a page every item is a labelled group of form controls (a fieldset whose
legend is the question; one radio button per choice with its label, or a labelled number box);
with solutions the answer and the reason behind every wrong choice sit in a ``<details>``
element, revealed on demand. Without solutions (``make site SOLUTIONS=0``) neither the answer
nor any explanation is in the page: the page says how to grade the quiz notebook instead.
In a deck each item is a slide; its answer goes to the speaker notes, only with solutions.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

from course_lib.quiz import Item, Quiz
from course_lib.quiz import load_quizzes as load_quizzes

from .rendering import Part, Slide, code_html, markdown_html, text_lines

__all__ = ["load_quizzes", "quiz_page", "quiz_slides", "section_anchors", "site_page"]


def site_page(quiz: Quiz) -> Path:
    """Where the quiz appears in the site (the path its notebook ``quizzes/..._quiz.ipynb`` maps to)."""
    return Path("quizzes") / f"{quiz.lecture}_quiz.html"


def section_anchors(lecture_page_html: str) -> dict[int, tuple[str, str]]:
    """``{N: (id, title)}`` of the ``## N.`` headings of a rendered lecture page."""
    found = {}
    for m in re.finditer(r'<h2 id="((\d+)\.-[^"]*)"[^>]*>(.*?)</h2>', lecture_page_html, re.S):
        title = re.sub(r"<[^>]+>|¶", "", m.group(3)).strip()
        found[int(m.group(2))] = (m.group(1), html.unescape(title))
    return found


_TEXT = MarkdownIt("commonmark", {"html": False})  # quiz text: "<bos>" is text, not a tag


def _md(text: str, inline: bool = True) -> str:
    return markdown_html(text, inline=inline, md=_TEXT)


def _answer_html(item: Item) -> str:
    if item.choices:
        head = f"<p><strong>Answer: ({item.right.letter})</strong> {_md(item.explain)}</p>"
        wrong = "".join(
            f"<li><strong>({c.letter})</strong> {_md(c.why)}</li>"
            for c in item.choices
            if not c.right
        )
        return f"{head}<p>Why not the others:</p><ul>{wrong}</ul>"
    unit = f" ({html.escape(item.unit)})" if item.unit else ""
    head = (
        f"<p><strong>Answer: {item.answer:g}</strong>{unit}, within ±{item.tolerance:g}. "
        f"{_md(item.explain)}</p>"
    )
    wrong = "".join(f"<li><strong>{m.value:g}</strong>: {_md(m.why)}</li>" for m in item.mistakes)
    return f"{head}<p>The usual wrong numbers:</p><ul>{wrong}</ul>"


def _item_html(quiz: Quiz, item: Item, lecture_link: str, anchors: dict, solutions: bool) -> str:
    key = f"q{quiz.number}-{item.number}"
    anchor, title = anchors.get(item.section, ("", ""))
    where = f"section {item.section}" + (f" ({html.escape(title)})" if title else "")
    href = lecture_link + (f"#{html.escape(anchor)}" if anchor else "")
    parts = [
        f'<fieldset class="quiz-item" id="{key}" aria-describedby="{key}-where">',
        f'<legend><span class="quiz-num">Item {item.number}.</span> {_md(item.question)}</legend>',
        f'<p class="quiz-where" id="{key}-where">Answered in <a href="{href}">{where}</a> '
        f"of lecture {quiz.number}.</p>",
    ]
    if item.code:
        parts.append(f'<pre class="quiz-code"><code>{html.escape(item.code)}</code></pre>')
    if item.choices:
        for c in item.choices:
            text = f"<pre>{html.escape(c.text)}</pre>" if item.kind == "output" else _md(c.text)
            parts.append(
                f'<div class="quiz-choice"><input type="radio" name="{key}" id="{key}-{c.letter}"'
                f' value="{c.letter}"><label for="{key}-{c.letter}">'
                f'<span class="quiz-letter">({c.letter})</span> {text}</label></div>'
            )
    else:
        unit = f" ({html.escape(item.unit)})" if item.unit else ""
        parts.append(
            f'<div class="quiz-number"><label for="{key}-value">Your answer{unit}:</label> '
            f'<input type="number" step="any" id="{key}-value" name="{key}"></div>'
        )
    if solutions:
        parts.append(
            f'<details class="quiz-answer"><summary>Show the answer to item {item.number}'
            f"</summary>{_answer_html(item)}</details>"
        )
    parts.append("</fieldset>")
    return "\n".join(parts)


def quiz_page(
    quiz: Quiz, nav: str, static_head: str, lecture_link: str, anchors: dict, solutions: bool
) -> str:
    """The quiz as one HTML page (``nav``: the navigation bar's HTML)."""
    notebook = f"quizzes/{quiz.notebook_name}"
    intro = (
        f'<p>{len(quiz.items)} questions on <a href="{lecture_link}">lecture {quiz.number}</a>. '
        "Pick an answer for each, then "
        + (
            "open “Show the answer” to compare; every wrong choice says which misconception "
            "it stands for."
            if solutions
            else "grade them: the answers are not on this site."
        )
        + f" To have your answers graded, answer in the notebook <code>{notebook}</code> "
        f"(copy it first) and run <code>make grade NB=your-copy.ipynb</code>.</p>"
    )
    items = "\n".join(_item_html(quiz, i, lecture_link, anchors, solutions) for i in quiz.items)
    title = f"{quiz.number} · Quiz: {quiz.title}"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"{static_head}</head>\n<body>\n{nav}\n"
        f'<main class="course-page quiz">\n<h1>{html.escape(title)}</h1>\n{intro}\n'
        f'<form class="quiz-form" aria-label="Quiz on lecture {quiz.number}">\n{items}\n</form>\n'
        "</main>\n</body>\n</html>\n"
    )


def quiz_slides(quiz: Quiz, solutions: bool) -> list[Slide]:
    """The quiz as deck slides: a title slide, then one slide per item (answer in the notes)."""
    slides = [
        Slide(
            "Check your understanding",
            2,
            [
                Part(
                    f"<p>{len(quiz.items)} questions on this lecture: the quiz notebook "
                    f"<code>quizzes/{quiz.notebook_name}</code> grades them.</p>",
                    2,
                )
            ],  # fmt: skip
            new_stack=True,
        )
    ]
    for item in quiz.items:
        parts = [Part(_md(item.question, inline=False), text_lines(item.question, 60) * 1.4 + 0.4)]
        if item.code:
            parts.append(Part(code_html(item.code), text_lines(item.code, 95) * 0.95 + 0.6))
        if item.choices:
            if item.kind == "output":
                rows = "".join(
                    f'<li><span class="quiz-letter">({c.letter})</span> '
                    f'<code class="quiz-out">{html.escape(c.text)}</code></li>'
                    for c in item.choices
                )
            else:
                rows = "".join(
                    f'<li><span class="quiz-letter">({c.letter})</span> {_md(c.text)}</li>'
                    for c in item.choices
                )
            weight = sum(text_lines(c.text, 60) * 1.4 + 0.3 for c in item.choices)
            parts.append(Part(f'<ul class="quiz-choices">{rows}</ul>', weight))
        else:
            unit = f" ({item.unit})" if item.unit else ""
            parts.append(Part(f"<p><em>Answer with a number{html.escape(unit)}.</em></p>", 1.4))
        notes = []
        if solutions:
            notes.append(_answer_html(item))
        slides.append(Slide(f"Quiz {item.number} · section {item.section}", 3, parts, notes))
    return slides
