#!/usr/bin/env bash
# The install a user makes: build the wheel, install it into a fresh venv (CPU torch, as scripts/install.sh
# chooses it), and from a folder outside the checkout run `mechrecall --help`, every experiment at `micro` and each
# pretrained part on a tiny local checkpoint (scripts/wheel_smoke.py). CI runs it (.ci/run); by hand:
#
#   scripts/wheel_smoke.sh [WORKDIR]     (default: a new temporary folder, removed at the end unless KEEP=1)
#   TRANSFORMER_LENS=4.3.0 scripts/wheel_smoke.sh   (default: the newest release the wheel's metadata allows)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
WORK=${1:-$(mktemp -d /tmp/mechrecall-wheel.XXXXXX)}
mkdir -p "$WORK"
if [ -z "${1:-}" ] && [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
quiet() { "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }

start=$(date +%s)
echo "wheel: building the wheel of $ROOT (isolated build: the build-system's setuptools)"
rm -rf "$WORK/dist"
quiet "$PY" -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
WHEEL=$(ls "$WORK"/dist/mechrecall-*.whl)
# build/ is setuptools' scratch folder in the checkout; the wheel is what counts
rm -rf "$ROOT/build" "$ROOT"/*.egg-info

VENV="$WORK/venv"
rm -rf "$VENV"
"$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }
if wheel_dir=$(mktemp -d) && pip download -q --no-deps --no-index -d "$wheel_dir" "torch==$TORCH_VERSION" 2>/dev/null; then
  echo "wheel: torch==$TORCH_VERSION from the local wheel $(ls "$wheel_dir")"
  quiet pip install -q "$wheel_dir"/torch-*.whl
else
  echo "wheel: torch==$TORCH_VERSION from PyTorch's CPU-only index"
  quiet pip install -q "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
fi
rm -rf "$wheel_dir"
echo "wheel: installing $(basename "$WHEEL")${TRANSFORMER_LENS:+ with transformer-lens==$TRANSFORMER_LENS}"
quiet pip install -q "$WHEEL" ${TRANSFORMER_LENS:+"transformer-lens==$TRANSFORMER_LENS"}

# From a folder outside the checkout, with nothing of it on the path: only the installed wheel can answer.
mkdir -p "$WORK/user"
cd "$WORK/user"
env -u PYTHONPATH OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 MPLBACKEND=Agg \
  "$VENV/bin/python" "$ROOT/scripts/wheel_smoke.py" --venv "$VENV" --checkout "$ROOT" --work "$WORK/user"
echo "wheel: ok in $(( $(date +%s) - start )) s"
