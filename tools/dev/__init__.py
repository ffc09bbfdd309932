"""The repository's chores:

* :mod:`.lab` (``make lab``), :mod:`.start` (``make start``), :mod:`.update` (``make update``):
  ``start`` and ``update`` run as scripts with any Python 3 (standard library only);
* :mod:`.in_clean_clone` — ``make test`` in a fresh clone with a private HOME;
* :mod:`.sync_environment` — ``environment.yml`` generated from ``requirements.txt``;
* :mod:`.check_python_versions` — ``make check-pythons``;
* :mod:`.mutate` — ``make mutants``.
"""
