"""The course's tools, one package per role, run from the repository root as modules:

* :mod:`tools.grading` — the whole grader: its command line (``python -m tools.grade``, the
  documented command, runs :mod:`tools.grading.cli`), the student's sandboxed kernel, limits,
  results;
* :mod:`tools.site` — the static site, the slide decks, the quiz pages, the browser edition
  (JupyterLite) and the offline HTML export (``make site``, ``make slides``, ``make lite``);
* :mod:`tools.notebooks` — exercises and quiz notebooks generated from their sources, building
  and executing notebooks, the stored notebook form, slide metadata;
* :mod:`tools.training` — every script that makes a shipped checkpoint or corpus;
* :mod:`tools.dev` — the repository's chores: ``make lab``, ``make start``, ``make update``,
  ``make test``'s clean clone, ``environment.yml``, Python versions, mutation testing.

    .venv/bin/python -m tools.notebooks.nbbuild notebooks/NN_topic.ipynb
    .venv/bin/python -m tools.notebooks.make_exercises --check

They import each other as ``tools.role.x`` (no ``sys.path`` edits); tests import them the same
way (``pythonpath = ["."]`` in pyproject.toml). ``tests/test_tools_layout.py`` keeps the import
graph free of circles.
"""
