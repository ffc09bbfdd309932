"""``python -m tools.grade``: the documented command that grades notebooks.

The grader itself is :mod:`tools.grading` (its command line is :mod:`tools.grading.cli`).
"""
