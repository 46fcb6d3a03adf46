#!/usr/bin/env bash
# Issue 13's table on a machine with a GPU: the bundled 1.5B model served once by our server (continuous
# batching), and the agent eval on the 24 a-/b- tasks per edit format x candidates with many runs at once
# (`--workers`), so decoding of concurrent runs shares forward passes. On a 2-core CPU one configuration
# takes hours; this is the run to make when a GPU is lent.
# Usage: scripts/gpu_eval.sh [OUT_DIR]   (default: runs/gpu-eval-<time>)
# Overrides (env): MODEL, FORMATS, CANDIDATES, TASKS (comma list; default: every a-/b- task), WORKERS,
# MAX_STEPS, PORT. A CPU smoke run of the plumbing:
#   MODEL=smollm2-135m FORMATS=whole CANDIDATES=1 TASKS=a-median WORKERS=1 MAX_STEPS=1 scripts/gpu_eval.sh
set -euo pipefail

cd "$(dirname "$0")/.."
DS=${DELTASERVE:-.venv/bin/deltaserve}
OUT=${1:-runs/gpu-eval-$(date +%Y%m%d-%H%M%S)}
MODEL=${MODEL:-qwen2.5-coder-1.5b}
FORMATS=${FORMATS:-udiff,search_replace,symbol,whole,auto}
CANDIDATES=${CANDIDATES:-1,4}
TASKS=${TASKS:-$(ls evals/tasks | grep -E '^(a|b)-' | paste -sd, -)}
WORKERS=${WORKERS:-24}
MAX_STEPS=${MAX_STEPS:-3}
PORT=${PORT:-8765}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"$DS" serve --model "$MODEL" --port "$PORT" --max-num-seqs 64 --log-level warning > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 600); do  # loading (and on first use assembling) the weights takes a while
    if curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null; then break; fi
    if ! kill -0 $SERVER 2>/dev/null; then
        tail -n 30 "$OUT/server.log"
        echo "gpu_eval: the server exited" >&2
        exit 1
    fi
    sleep 1
done
curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null || { echo "gpu_eval: the server never answered" >&2; exit 1; }

started=$(date +%s)
"$DS" eval agent --models "openai/$MODEL" --api-base "http://127.0.0.1:$PORT/v1" --formats "$FORMATS" \
    --candidates "$CANDIDATES" --max-steps "$MAX_STEPS" --tasks "$TASKS" --workers "$WORKERS" --out "$OUT/agent"
echo "gpu_eval: $(( $(date +%s) - started )) s of runs; table and plots in $OUT/agent (report.md)"
