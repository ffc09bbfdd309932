# Two commands a student needs: `make lab` and `make test`. Everything else is for maintainers.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# JupyterLab refuses to run as root without this flag (containers, CI machines, Binder-like hosts).
ROOT_FLAG := $(shell [ "$$(id -u)" = "0" ] && echo --allow-root)
NB_DIRS := notebooks solutions

.PHONY: venv lab test lint format unit slow notebooks mutants exercises grade benchmarks clean site slides

venv: $(STAMP)

# Rebuilt only when the pinned requirements or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet pip==26.3
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# A fresh random token every start (never empty), bound to localhost only.
LAB_PORT ?= 8888
lab: $(STAMP)
	@token=$$($(PY) -c 'import secrets; print(secrets.token_hex(24))'); \
	echo ""; \
	echo "  Open the course at: http://127.0.0.1:$(LAB_PORT)/lab/tree/README.md?token=$$token"; \
	echo "  (Ctrl-C twice to stop; another port: make lab LAB_PORT=8889)"; \
	echo ""; \
	exec $(VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --port=$(LAB_PORT) \
		--ServerApp.port_retries=0 $(ROOT_FLAG) --IdentityProvider.token=$$token \
		--ServerApp.root_dir=$(CURDIR)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

# Test tiers (times in CONTRIBUTING.md): unit = library and checks, slow = browser, site,
# grading pipeline and make lab (tests marked @pytest.mark.slow), notebooks = nbval.
unit: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow" tests

slow: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile -m slow tests

# Maintainers: every mutant of tools/mutate.py must make a test fail (not part of `make test`).
mutants: $(STAMP)
	$(PY) -m tools.mutate

notebooks: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg $(NB_DIRS)

test: lint unit slow notebooks

# Regenerate exercises/ from solutions/ (the single source of exercise notebooks).
exercises: $(STAMP)
	$(PY) tools/make_exercises.py

# Grade one student notebook: make grade NB=exercises/01_softmax.ipynb
# NB reaches the grader through the environment only (never through a shell command line), and
# the recipe ends without make's "*** Error" line: the summary says what passed
# (`python -m tools.grade NB` exits 1 when an exercise fails, for scripts).
grade: $(STAMP)
	@test -n "$$NB" || { echo "usage: make grade NB=path/to/notebook.ipynb"; exit 2; }
	@$(PY) -m tools.grade || true

benchmarks: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

# The course as static HTML (README + every notebook with outputs) and as reveal.js decks, both
# offline: KaTeX and reveal.js come from the npm registry (cached in build/vendor/).
# The site includes the decks and, by default, the solutions: make site SOLUTIONS=0 leaves them out.
SOLUTIONS ?= 1
site: $(STAMP)
	$(PY) -m tools.build_site site build/site $(if $(filter 0,$(SOLUTIONS)),--no-solutions)

slides: $(STAMP)
	$(PY) -m tools.build_site slides build/slides

clean:
	rm -rf $(VENV) build _site graded
