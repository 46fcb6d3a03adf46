#!/usr/bin/env bash
# The engine's GPU check on a bare GPU machine (scripts/gpu_check.py: parity with transformers on the same
# GPU, host syncs per step, decode against HF generate and the HBM roofline; gpu_check.json in OUT_DIR).
# Such machines reach no package registry and have their own torch, transformers and tokenizers but no
# pydantic: `make gpu-wheels` fills .gpu-wheels/ here (git-ignored) with the few wheels to carry along.
# The repository is used in place (no install): its folders are mapped to the deltaserve namespace.
# Usage: scripts/gpu_check.sh [OUT_DIR] [gpu_check.py options]   (default OUT_DIR: $OUT, else runs/gpu-check-<time>)
# Exit status: 0 parity passed; 1 parity failed; 2 no CUDA device or missing packages.
set -euo pipefail

cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT_DIR=${1:-${OUT:-runs/gpu-check-$(date +%Y%m%d-%H%M%S)}}
shift || true
mkdir -p "$OUT_DIR"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DELTASERVE_CACHE="$work/cache"

if ! "$PY" -c "import pydantic" 2>/dev/null; then
    if [ ! -d .gpu-wheels ]; then
        echo "gpu_check: pydantic is missing and there is no .gpu-wheels/ (run 'make gpu-wheels' where pip works)" >&2
        exit 2
    fi
    "$PY" -m pip install -q --no-index --find-links .gpu-wheels --target "$work/site" pydantic
fi
mkdir -p "$work/ns/deltaserve"
for part in engine tools harness evals; do ln -s "$PWD/$part" "$work/ns/deltaserve/$part"; done
export PYTHONPATH="$work/ns:$PWD${PYTHONPATH:+:$PYTHONPATH}:$work/site"

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee "$OUT_DIR/device.txt"
nvidia-smi >> "$OUT_DIR/device.txt" 2>&1 || true
"$PY" scripts/gpu_check.py --out "$OUT_DIR" "$@" 2>&1 | tee "$OUT_DIR/gpu_check.log"
exit "${PIPESTATUS[0]}"
