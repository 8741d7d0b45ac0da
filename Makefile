# The two commands a new user needs (each installs into .venv first):
#   make run    -- the library's main job (see README)
#   make test   -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= runs

.PHONY: install run test clean
install:
	@bash scripts/install.sh $(VENV)

run: install
	$(PY) -m analyses.induction_emergence --experiment demo --out $(OUT)

test: install
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(PYTEST_ARGS)

# Removes the environment and caches only: results under runs/ are yours (delete them by hand).
clean:
	rm -rf $(VENV) .pytest_cache
