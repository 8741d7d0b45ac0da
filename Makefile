# The two commands a new user needs (each installs into .venv first):
#   make run    -- the library's main job (see README)
#   make test   -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= runs

.PHONY: install run test lint fmt docs notebooks clean
install:
	@bash scripts/install.sh $(VENV)

run: install
	$(PY) -m analyses.reproduce --out $(OUT)

test: install
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadfile $(PYTEST_ARGS)

# Re-execute every notebook (full mode) in a Jupyter kernel and save it with its outputs; FAST=1 for seconds-long runs.
notebooks: install
	$(PY) scripts/run_notebooks.py $(if $(filter 1,$(FAST)),--fast --no-save)

# Lint, format check and type check (CI runs this before the tests).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Rewrite the tree in the project's format and apply ruff's safe fixes.
fmt: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The README's per-paper summary and docs/claims.md, from the report in $(OUT)/report/ (runs nothing).
docs: install
	$(PY) -m analyses.reproduce --out $(OUT) --claims-doc docs/claims.md --update-readme README.md

# Removes the environment and caches only: results under runs/ are yours (delete them by hand).
clean:
	rm -rf $(VENV) .pytest_cache
