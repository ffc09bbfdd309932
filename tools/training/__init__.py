"""Every script that makes a shipped checkpoint or corpus (``course_lib/data/``), deterministic
(one thread, fixed seeds and steps), run as ``python -m tools.training.<script>``:

* corpora and data sets: :mod:`.make_pretraining_corpus`, :mod:`.make_docstring_corpus`,
  :mod:`.make_benchmark_set` (18);
* checkpoints: :mod:`.train_tiny_bert` (08), :mod:`.train_mlm_head` (08),
  :mod:`.fine_tune_minilm` (12), :mod:`.train_gpt` (11), :mod:`.modern_ladder` (13),
  :mod:`.train_assistant` (14), :mod:`.train_rl` (17);
* :mod:`.distributed`: what the training scripts share to run under ``torchrun`` with
  ``DistributedDataParallel`` (``--device``, each process's rows of the global batch).
"""
