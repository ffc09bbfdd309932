"""Maintainer tools of the course, run from the repository root as modules:

    .venv/bin/python -m tools.nbbuild notebooks/NN_topic.ipynb
    .venv/bin/python -m tools.make_exercises --check

They import each other as ``tools.x`` (no ``sys.path`` edits); tests import them the same way
(``pythonpath = ["."]`` in pyproject.toml).
"""
