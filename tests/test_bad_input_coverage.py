"""Every public function and class of course_lib has at least three bad-input rows (issue 18).

THE FORMAT OF A BAD-INPUT ROW (tests/test_bad_inputs.py and tests/test_bad_inputs_torch.py)
--------------------------------------------------------------------------------------------
Each of the two files defines a module-level list ``CASES`` of tuples

    (callable, args, kwargs, error, fragment)            # 5 elements, or
    (callable, args, kwargs, error, fragment, target)    # 6 elements

and runs every row with ``pytest.raises(error)`` on ``callable(*args, **kwargs)`` and asserts
``fragment in str(exc)``. ``fragment`` names the argument, what it got and what it needs
(``"d_model must be >= 1, got 0"``). A row must raise: a row that returns a value is a silent
wrong answer.

Which public object a row counts for (its key is ``(obj.__module__, obj.__qualname__)``):

* ``target`` (6th element) if given: the public function or class the row tests; a method
  (``C.GPT.forward``) counts for its class. Use it for every lambda, ``functools.partial`` or
  helper function that calls into the library, e.g. a forward call on a built module:
  ``(lambda: C.GPT(cfg)(torch.ones(2, 3)), (), {}, TypeError, "ids must be ...", C.GPT)``.
* otherwise ``callable`` itself: a function or class counts for itself; a bound method
  (``model.generate``) for its class; an instance (an ``nn.Module`` called as ``layer(x)``)
  for its class; a ``functools.partial`` for the function it wraps.
* a lambda or local function without a ``target`` counts for nothing; the coverage test fails
  and names it.

``CASES`` must stay importable (no fixtures); build objects at module level or inside the
lambda. ``EXEMPT`` below lists, with a reason, the few public objects that take no input that
can be bad. The public objects are walked with ``pkgutil`` over every non-private submodule:
its ``__all__``, or, without one, the public functions and classes defined in that module;
``course_lib.checks.lectureNN`` are left out (their mistake tables test them).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import course_lib

HERE = Path(__file__).parent
CASE_FILES = ("test_bad_inputs.py", "test_bad_inputs_torch.py")
MIN_ROWS = 3

# Public objects that take no input that can be bad: {"module:qualname": reason}.
_RECORD = "a result record (NamedTuple/dataclass) that only holds what {} returns; no validation"
_NO_ARGS = "takes no argument: {}"
_INNER = "an inner step run unchecked inside a checked forward; its door is {}"
# What the exercise notebooks are given and the factories of the checks' Built recipes (they lived
# in course_lib.checks.lectureNN until the grader's sandbox got stubs of those modules).
_GIVEN = {
    "given": ("halves_encoding", "mystery_attention", "shipped_sweep", "shipped_test_predictions",
              "mystery_sampler", "sampler_keeps", "mystery_rope", "rope_with_fault"),
    "given_torch": ("make_layer", "scripted_model", "tiny_translator", "read_only_tensor",
                    "exercise_model", "lm_tokenizer_512"),
}  # fmt: skip
_GIVEN_REASON = (
    "an exercise notebook's given input or a check's Built factory, called with the course's "
    "own fixed values"
)
EXEMPT: dict[str, str] = {
    "course_lib.softmax:OnlineSoftmaxState": _RECORD.format("online_softmax_start/step"),
    "course_lib.chunked_attention:ChunkedAttention": _RECORD.format(
        "chunked_attention_with_logsumexp"
    ),
    "course_lib.chunked_attention:AttentionCost": _RECORD.format("attention_cost"),
    "course_lib.bleu.formula:BLEUScore": _RECORD.format("compute_bleu/corpus_bleu"),
    "course_lib.bleu.statistics:BLEUStatistics": _RECORD.format("bleu_statistics"),
    "course_lib.tokenization.bpe_training:BPETraining": _RECORD.format("train_bpe_with_history"),
    "course_lib.viz.views:AttentionView": _RECORD.format("head_view/model_view (already checked)"),
    "course_lib.checks:RemoteFunction": "the grader's interface for a student's function in "
    "another process; its only method is overridden there and takes the student's arguments",
    "course_lib.tokenization.byte_level:bytes_to_unicode": _NO_ARGS.format("GPT-2's byte table"),
    **{f"course_lib.checks.{m}:{n}": _GIVEN_REASON for m, names in _GIVEN.items() for n in names},
    # the torch side (tests/test_bad_inputs_torch.py)
    "course_lib.pretrained:minilm_path": _NO_ARGS.format("the shipped MiniLM directory"),
    "course_lib.pretrained:load_minilm": _NO_ARGS.format("loads the shipped MiniLM"),
    "course_lib.pretrained:load_minilm_encoder": _NO_ARGS.format("loads the shipped MiniLM"),
    "course_lib.pretrained:load_minilm_mlm": _NO_ARGS.format("loads the shipped MiniLM"),
    "course_lib.interop.gguf:GGUFFile": _RECORD.format("read_gguf (which checks the file)")
    + "; raw/tensor refuse an unknown tensor name (tests/test_gguf.py)",
    "course_lib.pretrained:smollm2_path": _NO_ARGS.format("the installed SmolLM2 GGUF file"),
    "course_lib.pretrained:weights_cache_dir": _NO_ARGS.format("the per-user cache folder"),
    "course_lib.data.language_modeling:lm_documents": _NO_ARGS.format("the shipped documents"),
    "course_lib.data.pretraining:load_pretraining_corpus": _NO_ARGS.format("the shipped corpus"),
    "course_lib.data.language_modeling:LMCorpus": _RECORD.format("lm_corpus"),
    "course_lib.data.translation.batches:Batch": _RECORD.format("make_batch")
    + "; the models and translation_loss check what they read from it",
    "course_lib.data.translation.sampling:TranslationData": _RECORD.format("make_translation_data"),
    "course_lib.models.bert_encoder:BertEncoderOutput": _RECORD.format("BertEncoder.forward"),
    # inner steps of the torch blocks: run unchecked, validation happens at the model's door
    "course_lib.nn.attention:attend": _INNER.format("MultiHeadAttention.forward"),
    "course_lib.nn.attention:causal_mask_from": _INNER.format("MultiHeadAttention.forward"),
    "course_lib.nn.residual:residual": _INNER.format("EncoderLayer/DecoderLayer.forward"),
    "course_lib.nn.rope:rotate": _INNER.format("rope_qk, the attention's qk_transform"),
    "course_lib.nn.rope:rope_qk_unchecked": "unchecked by name: "
    + _INNER.format("ModernLM.forward; rope_qk is it with its input checked"),
    "course_lib.data.chat:load_chat_tokenizer": _NO_ARGS.format("the shipped tokenizer + chat"),
    "course_lib.data.instructions:instruction_words": _NO_ARGS.format("the fixed word split"),
    "course_lib.data.instructions:Instruction": _RECORD.format("make_instruction"),
    "course_lib.models.rl:GRPOLog": _RECORD.format("grpo_train"),
    "course_lib.quiz:Choice": _RECORD.format("load_quiz (which validates the file)"),
    "course_lib.quiz:Mistake": _RECORD.format("load_quiz (which validates the file)"),
    "course_lib.quiz:Item": _RECORD.format("load_quiz (which validates the file)"),
    "course_lib.quiz:Quiz": _RECORD.format("load_quiz (which validates the file)"),
    "course_lib.quiz:QuizFormatError": "the error load_quiz raises; its message is the argument",
    "course_lib.checks.quiz:QuizError": "raised only by check_quiz, with the quiz's own values",
}


def _load_cases(filename: str) -> list[tuple]:
    """The ``CASES`` list of ``tests/<filename>``."""
    path = HERE / filename
    spec = importlib.util.spec_from_file_location(f"_bad_input_cases_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.CASES)


def _unwrapped(obj):
    """A ``functools.cache``/``wraps`` wrapper's function, else ``obj``."""
    return obj if inspect.isclass(obj) else inspect.unwrap(obj)


def _key(obj) -> tuple[str, str] | None:
    """``(module, qualname)`` of the public object ``obj`` stands for, or None (untargeted)."""
    if isinstance(obj, functools.partial):
        obj = obj.func
    if inspect.ismethod(obj):
        obj = obj.__func__
    obj = _unwrapped(obj)
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        obj = type(obj)  # an instance called as obj(...): an nn.Module, say
    qualname = getattr(obj, "__qualname__", "")
    if "<" in qualname:  # <lambda>, f.<locals>.g
        return None
    return obj.__module__, qualname.split(".")[0]


def row_key(row: tuple) -> tuple[str, str] | None:
    """The key a ``CASES`` row counts for (its 6th element if given, else its callable)."""
    return _key(row[5] if len(row) > 5 else row[0])


def _private_or_exercise(module_name: str) -> bool:
    parts = module_name.split(".")
    return any(p.startswith("_") for p in parts) or bool(
        re.fullmatch(r"course_lib\.checks\.lecture\d+", module_name)
    )


def public_objects() -> dict[tuple[str, str], str]:
    """``{(module, qualname): "where it is public"}`` for every public function and class."""
    found: dict[tuple[str, str], str] = {}
    modules = [course_lib] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(course_lib.__path__, "course_lib.")
        if not _private_or_exercise(info.name)
    ]
    for module in modules:
        declared = getattr(module, "__all__", None)
        names = declared if declared is not None else [n for n in vars(module) if n[0] != "_"]
        for name in names:
            obj = _unwrapped(getattr(module, name))
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            defined_in = getattr(obj, "__module__", "") or ""
            if not defined_in.startswith("course_lib") or _private_or_exercise(defined_in):
                continue
            if declared is None and defined_in != module.__name__:
                continue  # imported for its own use, not exported
            found.setdefault((defined_in, obj.__qualname__), f"{module.__name__}.{name}")
    return found


ALL_CASES = {name: _load_cases(name) for name in CASE_FILES}


def _counts() -> dict[tuple[str, str] | None, int]:
    counts: dict[tuple[str, str] | None, int] = {}
    for rows in ALL_CASES.values():
        for row in rows:
            counts[row_key(row)] = counts.get(row_key(row), 0) + 1
    return counts


def test_every_public_callable_has_three_bad_inputs():
    counts = _counts()
    short = {
        f"{mod}:{qual} ({where})": counts.get((mod, qual), 0)
        for (mod, qual), where in public_objects().items()
        if f"{mod}:{qual}" not in EXEMPT and counts.get((mod, qual), 0) < MIN_ROWS
    }
    assert not short, f"public callables with fewer than {MIN_ROWS} bad-input rows: {short}"


def test_every_row_counts_for_a_public_object():
    public = public_objects()
    stray = [
        (file, i, row[0])
        for file, rows in ALL_CASES.items()
        for i, row in enumerate(rows)
        if row_key(row) not in public
    ]
    assert not stray, f"rows whose callable/target is no public object of course_lib: {stray}"


def test_exemptions_are_public_and_have_reasons():
    public = {f"{mod}:{qual}" for mod, qual in public_objects()}
    assert set(EXEMPT) <= public, set(EXEMPT) - public
    assert all(len(reason) > 20 for reason in EXEMPT.values())
