# Two commands a student needs: `make lab` and `make test` (and `make start NB=01`, `make grade`).
# Everything else is for maintainers.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# tools/dev/start.py and tools/dev/update.py need no installed package: any Python 3 will do.
PYTHON_ANY := $(if $(wildcard $(PY)),$(PY),$(PYTHON))
STAMP  := $(VENV)/.installed
NB_DIRS := notebooks solutions

.PHONY: venv lab test check hygiene check-pythons start update lint format unit slow notebooks mutants \
	exercises quizzes grade gradescope benchmarks clean site slides lite fresh-install

venv: $(STAMP)

# Rebuilt only when the pinned requirements or the package metadata change. A linked .venv
# (the clean clone `make test` works in links the student's) is used as it is: re-installing
# there would point the editable course_lib at the temporary clone, which is then deleted.
ifeq ($(shell test -L $(VENV) && echo linked),linked)
$(STAMP):
	@test -f $@ || { echo "$(VENV) is a link to a venv that is not installed: run make venv there"; exit 1; }
else
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "Installing the pinned packages into $(VENV) (first time: ~730 MB download, 2.7 GB, 3-7 min)"
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --progress-bar on -r requirements.txt
	$(PY) -m pip install --progress-bar on --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)
endif

# JupyterLab on 127.0.0.1 with a fresh random token (passed in the environment, never on a
# command line), on LAB_PORT or the next free port, opening on the README rendered as a page.
LAB_PORT ?= 8888
lab: $(STAMP)
	@$(PY) tools/dev/lab.py --port $(LAB_PORT)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# Test tiers (times in CONTRIBUTING.md): unit = library and checks, slow = browser, site,
# grading pipeline and make lab (tests marked @pytest.mark.slow), notebooks = nbval.
unit: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow" tests

SLOW_TESTS ?= tests
slow: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup -m slow $(SLOW_TESTS)

# Maintainers: what the Colab badge promises is what runs: a fresh venv from pyproject.toml alone
# (course_lib[lectures], newest versions, torch at its pin) executes every lecture (tens of minutes).
fresh-install: $(STAMP)
	COURSE_FRESH_INSTALL=1 $(PY) -m pytest -q -s tests/test_fresh_install.py

# Maintainers: every mutant of tools/dev/mutate.py must make a test fail (not part of `make test`).
mutants: $(STAMP)
	$(PY) -m tools.dev.mutate

# The stored outputs are made on a CPU with AVX-512; nbval checks them on the AVX2 code paths of
# torch, MKL, oneDNN, numpy and OpenBLAS (what most laptops and AMD EPYC servers run), so an
# output that depends on the CPU's floating-point path fails here, not on a student's machine.
# (Set only on a CPU with AVX-512; elsewhere the native paths already are these.) NB_CPU= turns it off.
AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
NB_CPU ?= $(if $(AVX512),ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
	NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Haswell)
notebooks: $(STAMP)
	$(NB_CPU) $(PY) -m pytest -q -n 2 --dist loadfile --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg $(NB_DIRS)

# `make test` (students, CI): `make check` on the course as committed, in a temporary clean clone
# of HEAD (tools/dev/in_clean_clone.py), so nothing a student saved in this clone (run lectures, answers,
# own notebooks) can fail it, and nothing in it is modified. `make check` runs on the working tree
# (maintainers, before committing). CI checks out a clean clone: there both are the same.
TEST_TARGETS ?= check
test: $(STAMP)
	@$(PY) tools/dev/in_clean_clone.py $(MAKE) --no-print-directory -o $(STAMP) $(TEST_TARGETS)

# The four tiers in order, stopping at the first that fails, then each tier's wall-clock time.
CHECK_TIERS := lint unit slow notebooks
check: $(STAMP)
	@start=$$(date +%s); times=""; status=0; \
	for tier in $(CHECK_TIERS); do \
		t0=$$(date +%s); \
		if ! $(MAKE) --no-print-directory -o $(STAMP) $$tier; then times="$$times $$tier FAILED"; status=1; break; fi; \
		times="$$times $$tier $$(( $$(date +%s) - t0 )) s,"; \
	done; \
	echo "make check, wall-clock time per tier:$$times total $$(( $$(date +%s) - start )) s"; \
	exit $$status

# Repository hygiene alone, in seconds (also part of `make unit`): exercises generated from
# solutions, environment.yml from requirements.txt, tidy notebooks, documented public API.
hygiene: $(STAMP)
	$(PY) tools/notebooks/make_exercises.py --check
	$(PY) -m tools.notebooks.make_quizzes --check
	$(PY) -m tools.notebooks.add_slide_metadata --check
	$(PY) tools/dev/sync_environment.py --check
	$(PY) -m pytest -q tests/test_repo.py

# Maintainers: does requirements.txt install on each supported CPython and OS? (pip dry-run, network)
check-pythons: $(STAMP)
	$(PY) tools/dev/check_python_versions.py

# Your own copy of a lecture's exercises in the git-ignored my-work/ (never overwritten):
# make start NB=01 (or 1, 01_softmax)   ->   my-work/01_softmax_exercises.ipynb
# NB reaches the script through the environment (never a shell command line).
# make start NB=q01 (or q1, 01_softmax_quiz)  ->   my-work/01_softmax_quiz.ipynb
# A refusal ends with the course's message (the list of lectures), not make's "Error 1" line.
start:
	@$(PYTHON_ANY) tools/dev/start.py "$$NB" || true

# Take the course's updates: your changed files that the update would overwrite (run lectures,
# answers typed into exercises/) are copied to my-work/kept-<date-time>/ first, then git pulls.
update:
	@$(PYTHON_ANY) tools/dev/update.py

# Render quizzes/NN_topic_quiz.ipynb from course_lib/quizzes/NN_topic.toml (their single source).
quizzes: $(STAMP)
	$(PY) -m tools.notebooks.make_quizzes

# Regenerate exercises/ from solutions/ (the single source of exercise notebooks).
exercises: $(STAMP)
	$(PY) tools/notebooks/make_exercises.py

# Grade one student notebook: make grade NB=exercises/01_softmax.ipynb
# NB reaches the grader through the environment only (never through a shell command line), and
# the recipe ends without make's "*** Error" line: the summary says what passed
# (`python -m tools.grade NB` exits 1 when an exercise fails, for scripts).
grade: $(STAMP)
	@test -n "$$NB" || { echo "usage: make grade NB=path/to/notebook.ipynb"; exit 2; }
	@$(PY) -m tools.grade || true

# Instructors: the Gradescope autograder of one exercise notebook (or quiz), into build/gradescope/:
# make gradescope EXERCISE=01 (or 01_softmax; q01: lecture 01's quiz) [VISIBILITY=after_due_date]
# (INSTRUCTORS.md, "Gradescope"). EXERCISE reaches the tool through the environment.
VISIBILITY ?= visible
gradescope: $(STAMP)
	@test -n "$$EXERCISE" || { echo "usage: make gradescope EXERCISE=01   (q01 for lecture 01's quiz)"; exit 2; }
	$(PY) -m tools.grading.gradescope build "$$EXERCISE" --visibility "$(VISIBILITY)"

benchmarks: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

# The course as static HTML (README + every notebook with outputs) and as reveal.js decks, both
# offline: KaTeX and reveal.js come from the npm registry (cached in build/vendor/).
# The site includes the decks, the browser edition (make lite, in build/site/lite, linked from the
# lectures it has) and, by default, the solutions: make site SOLUTIONS=0 leaves them out.
SOLUTIONS ?= 1
site: $(STAMP)
	$(PY) -m tools.site.build_site site build/site --lite $(if $(filter 0,$(SOLUTIONS)),--no-solutions)

slides: $(STAMP)
	$(PY) -m tools.site.build_site slides build/slides $(if $(filter 0,$(SOLUTIONS)),--no-solutions)

# The browser edition (JupyterLite, nothing to install): lectures 01-04, 06 and 10 with their
# exercises and a course_lib wheel without the .pt files; it loads Pyodide from a CDN when opened.
lite: $(STAMP)
	$(PY) -m tools.site.build_lite build/lite

clean:
	rm -rf $(VENV) build _site graded
