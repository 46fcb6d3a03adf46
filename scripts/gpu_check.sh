#!/usr/bin/env bash
# The CUDA path, checked end to end on a machine with an NVIDIA GPU (the CPU runs never touch it):
#   1. the engine and server tests with CUDA visible: every Engine built with device "auto" runs on the GPU
#      (quant resolves to none there; the int4/int8 kernels are CPU-only and their tests pin device="cpu");
#   2. HF parity: greedy SmolLM2 on the GPU vs transformers (fp32, tests/engine/test_smollm2.py);
#   3. bench engine (bf16; llama.cpp, built for CPU, runs on the CPU as a reference), bench prefix, bench spec.
# Usage: scripts/gpu_check.sh [LOG_DIR]   (default: runs/gpu-check-<time>); exit status: the first failure.
set -euo pipefail

cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DS=${DELTASERVE:-.venv/bin/deltaserve}
LOG_DIR=${1:-runs/gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$LOG_DIR"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_check: torch sees no CUDA device here; nothing to check" >&2
    exit 2
fi
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
    | tee "$LOG_DIR/device.txt"
nvidia-smi >> "$LOG_DIR/device.txt" 2>&1 || true

step() {  # step NAME COMMAND...: run it, keep its output, stop at the first failure
    local name=$1
    shift
    echo "== $name: $*"
    if ! "$@" > "$LOG_DIR/$name.log" 2>&1; then
        tail -n 40 "$LOG_DIR/$name.log"
        echo "gpu_check: $name failed (full log: $LOG_DIR/$name.log)" >&2
        exit 1
    fi
    tail -n 3 "$LOG_DIR/$name.log"
}

step engine-tests "$PY" -m pytest -q -p no:cacheprovider tests/engine tests/server -m "not slow"
step hf-parity "$PY" -m pytest -q -p no:cacheprovider tests/engine/test_smollm2.py
step bench-engine "$DS" bench engine --ours bf16 --hf on --repeats 3
step bench-prefix "$DS" bench prefix --dtype bfloat16
step bench-spec "$DS" bench spec
echo "gpu_check: all steps passed; logs in $LOG_DIR"
