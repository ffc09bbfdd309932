"""The grader, one idea per module (``python -m tools.grade`` is its command line):

* :mod:`.notebook` — a submitted file read as plain data (cells, exercise tags), never executed;
* :mod:`.course` — what the grader trusts (committed templates, checks, library) and the
  notebook's identity, decided by content;
* :mod:`.plan` — what runs in the sandbox (official cells restored) and where the checks come;
* :mod:`.sandbox` — the student's isolated IPython process (:class:`~.sandbox.Kernel`);
* :mod:`.verdict` — checks called here, the student's function reached through the sandbox;
* :mod:`.running` — one notebook (:func:`~.running.grade`) and a class in parallel;
* :mod:`.results` — the result of a notebook, the student's summary and the class CSV.
"""
