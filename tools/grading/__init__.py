"""The whole grader, one idea per module (``python -m tools.grade`` runs :mod:`.cli`):

* :mod:`.cli` — the command line: one notebook's summary, or a class in parallel into a CSV;
* :mod:`.notebook` — a submitted file read as plain data (cells, exercise tags), never executed;
* :mod:`.course` — what the grader trusts (committed templates, checks, library) and the
  notebook's identity, decided by content;
* :mod:`.plan` — what runs in the sandbox (official cells restored) and where the checks come;
* :mod:`.sandbox` — the student's isolated IPython process (:class:`~.sandbox.Kernel`), started
  as ``grade_kernel.py`` (the student's side: runs cells and calls, answers as plain data) inside
  ``grade_sandbox.py`` (namespaces, a new root file system, an unprivileged uid);
* :mod:`.limits` — the cgroup limits of a notebook's processes (memory, pids);
* :mod:`.verdict` — checks called here, the student's function reached through the sandbox;
* :mod:`.reach` — answers that call their own reference (the "uses course_lib" column);
* :mod:`.running` — one notebook (:func:`~.running.grade`) and a class in parallel;
* :mod:`.results` — the result of a notebook, the student's summary and the class CSV;
* :mod:`.shards` — a class in shards on a cluster (``--shard I/N``, ``--shards N``) and their merge
  (``python -m tools.grade merge``); ``cluster/`` holds a Slurm array script and a Kubernetes
  Indexed Job;
* :mod:`.gradescope` — ``make gradescope``: the autograder zip of one exercise notebook and what its
  ``run_autograder`` runs (``autograder/``), Gradescope's results.json.
"""
