# The two commands a new user needs (each installs into .venv first):
#   make run    -- the library's main job (see README)
#   make test   -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= runs

.PHONY: install run test lint fmt docs notebooks scale clean wheel-smoke
# TL=4.3.0 installs that TransformerLens release (e.g. `make test VENV=.venv4 TL=4.3.0`); unset, a venv keeps its own
# and a new one gets 3.9.0.
TL ?=
install:
	@TRANSFORMER_LENS=$(TL) bash scripts/install.sh $(VENV)

run: install
	$(PY) -m analyses.reproduce --out $(OUT)

test: install
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadfile $(PYTEST_ARGS)

# The wheel a user installs, in a fresh venv, used from outside the checkout (scripts/wheel_smoke.sh; CI runs it).
wheel-smoke:
	bash scripts/wheel_smoke.sh

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

# The three headlines the laptop presets miss, along a scale axis (README "Along a scale axis"), into
# $(OUT)/sweeps/ (a report in $(OUT) shows them; about 2¼ hours on 2 cores; rerunning resumes).
FINDING3 := ft_iclgrm_transfers_to_icl ft_iclgrm_attributes_transfers_to_icl ft_icl_heldout pt_factual_recall \
	pt_icl_near_zero
scale: install
	$(PY) -m analyses.sweep noisy_icl:ioi --preset laptop --grid steps=1000,3000,10000 --seeds 0-2 --out $(OUT) \
		--measure adam_L3_counts adam_L3/counting/ours adam_L3/counting/baselines/less_often adam_L3_accuracy_gain
	$(PY) -m analyses.sweep ic_recall:pretrained_mlp --preset smoke --grid pretrain_weight_decay=0,0.1,0.3 \
		--seeds 0-2 --out $(OUT) --measure first_step_vs_ceiling cancelled_cross_terms within_pair across_pairs \
		right_first_step_vs_ceiling pretrain_recall
	$(PY) -m analyses.sweep contextual_recall:world_g --preset smoke --grid n_subjects=32,64,128,256 --seeds 0-2 \
		--out $(OUT) --measure $(FINDING3)
	$(PY) -m analyses.sweep contextual_recall:world_g --preset smoke --grid grammar_len=12,24,48,80 --seeds 0-2 \
		--out $(OUT) --name contextual_recall.world_g.grammar_len --measure $(FINDING3)

# Removes the environment and caches only: results under runs/ are yours (delete them by hand).
clean:
	rm -rf $(VENV) .pytest_cache
