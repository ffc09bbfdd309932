"""Notebooks made from their sources, one module per idea:

* :mod:`.make_exercises` — ``exercises/`` generated from ``solutions/`` (``make exercises``);
* :mod:`.make_quizzes` — ``quizzes/NN_topic_quiz.ipynb`` from ``course_lib/quizzes/`` (``make quizzes``);
* :mod:`.nbbuild` — build a notebook from a py:percent script and execute it
  (``run_notebook``, the one nbclient call);
* :mod:`.notebook_form` — the form JupyterLab saves, in which every notebook is stored;
* :mod:`.add_slide_metadata` — the slide type of every lecture cell, for the decks.
"""
