"""The check of a concept-quiz item (``quizzes/NN_topic_quiz.ipynb``): one call per answer cell.

``check_quiz(answer_3, "01", 3)`` judges the student's answer to item 3 of lecture 01's quiz
against the quiz file (:mod:`course_lib.quiz`) and either prints one fixed line or raises
:class:`QuizError` naming the misconception behind the choice made. The grader calls it in its
own process with the answer read from the sandbox as plain data, like every exercise check.
"""

from __future__ import annotations

from functools import cache

from ..quiz import Quiz, judge, load_quiz, quiz_path
from . import ExerciseError

__all__ = ["QuizError", "check_quiz"]


class QuizError(ExerciseError):
    """A wrong quiz answer: the message says what was chosen and the misconception it names."""

    def __init__(self, lecture: str, number: int, message: str):
        super().__init__(f"{lecture}.{number}", message)
        text = f"\n\nQuiz {lecture}, item {number} is not right yet.\n{message}\n"
        self.args = (text,)


@cache
def _quiz(path) -> Quiz:
    return load_quiz(path)


def check_quiz(answer, lecture: str, number: int) -> None:
    """Judge the answer to item ``number`` of lecture ``lecture``'s quiz (raise if wrong)."""
    quiz = _quiz(quiz_path(lecture))  # quiz_path refuses a lecture that names no quiz
    if (
        isinstance(number, bool)
        or not isinstance(number, int)
        or not (1 <= number <= len(quiz.items))
    ):
        raise ValueError(f"number must be an item of quiz {lecture} (1-{len(quiz.items)}), "
                         f"got {number!r}")  # fmt: skip
    ok, why = judge(quiz.items[number - 1], answer)
    if not ok:
        raise QuizError(quiz.number, number, why)
    print(f"✅ Quiz {quiz.number}, item {number}: right.")
