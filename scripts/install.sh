#!/usr/bin/env bash
# Create (or reuse) a virtual environment and install mechrecall into it, editable, with extras.
#
#   scripts/install.sh [VENV_DIR]          (default: .venv)
#   EXTRAS=test scripts/install.sh         (default: test,ray,slurm,notebooks -- the tests run the Ray and Slurm
#                                          executors and execute the notebooks)
#   TRANSFORMER_LENS=4.3.0 scripts/install.sh .venv4
#                                          the TransformerLens release to install (tested: 3.9.0 and 4.3.0). Unset:
#                                          the one already in the venv stays; a new venv gets 3.9.0.
#
# torch is installed first, chosen for the machine:
#   - already importable in the venv        -> left as it is;
#   - $TORCH_SPEC set (e.g. "torch==2.13.0 --index-url URL")  -> exactly that;
#   - an NVIDIA GPU answers `nvidia-smi -L` -> the registry's default (CUDA) build;
#   - otherwise (CPU-only machine)          -> a local CPU wheel if pip's find-links has one
#     (found with `pip download --no-index`), else PyTorch's CPU-only wheel index (if unreachable: stop, and say how to choose).
# Then `pip install -e .[$EXTRAS]`: its `torch>=2.1` is already satisfied, so no CUDA wheels are pulled.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
PY=${PYTHON:-python3}
EXTRAS=${EXTRAS:-test,ray,slurm,notebooks}
TL_TESTED=3.9.0  # a new venv's TransformerLens; 4.3.0 is the tested 4.x release (README: "Two TransformerLens majors")
STAMP="$VENV/.mechrecall-installed-${EXTRAS//,/-}${TRANSFORMER_LENS:+-tl$TRANSFORMER_LENS}"

if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt scripts/install.sh ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }
# pip, minus the noise of this machine's file:// index warnings; keeps pip's exit status (pipefail).
quiet_pip() { pip "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }
pip install -q --upgrade pip >/dev/null 2>&1 || true

if "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "install: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') already present"
elif [ -n "${TORCH_SPEC:-}" ]; then
  echo "install: torch from TORCH_SPEC=$TORCH_SPEC"
  # shellcheck disable=SC2086
  pip install -q $TORCH_SPEC
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "install: GPU found, installing the default (CUDA) torch build"
  pip install -q torch
elif wheel_dir=$(mktemp -d) && pip download -q --no-deps --no-index -d "$wheel_dir" "torch==$TORCH_VERSION" 2>/dev/null; then
  # pip's find-links (pip.conf / PIP_FIND_LINKS) holds a CPU wheel of this version: install that file.
  echo "install: no GPU, installing torch==$TORCH_VERSION from the local wheel $(ls "$wheel_dir")"
  quiet_pip install -q "$wheel_dir"/torch-*.whl
else
  echo "install: no GPU, installing torch==$TORCH_VERSION from PyTorch's CPU-only index"
  if ! pip install -q "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu --retries 1 --timeout 30; then
    # Never fall back to the default build silently: on a CPU-only Linux machine it is several GB of CUDA wheels.
    echo "install: PyTorch's CPU-only index is unreachable. Install torch yourself into $VENV, or set" >&2
    echo "  TORCH_SPEC (e.g. TORCH_SPEC='torch==$TORCH_VERSION' for the default build, CUDA wheels included) and rerun." >&2
    exit 1
  fi
fi

if [ -n "${TRANSFORMER_LENS:-}" ]; then
  TL_PIN="transformer-lens==$TRANSFORMER_LENS"
elif "$VENV/bin/python" -c "import importlib.metadata as m; m.version('transformer-lens')" 2>/dev/null; then
  TL_PIN=""  # keep the TransformerLens this venv has (the project allows 3.x and 4.x)
else
  TL_PIN="transformer-lens==$TL_TESTED"
fi
# shellcheck disable=SC2086
quiet_pip install -q -e ".[$EXTRAS]" $TL_PIN
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
from mechrecall import analyses, hooks, pretrained  # noqa: F401  (the four packages import)
print(f"install: ok (torch {version('torch')}, transformer-lens {version('transformer-lens')}, transformers {version('transformers')})")
PY
touch "$STAMP"
