#!/usr/bin/env bash
# One vLLM engine and one trainer rank on one GPU, refreshed by the NCCL path and the reload
# path through arctic-swe's engine client (< 5 min on an H200).
#
#   benchmarks/gpu_cluster_smoke.sh              # on the GPU machine
#   benchmarks/gpu_cluster_smoke.sh --dry-run    # CPU: arctic-swe serve + gloo (what CI runs)
#   benchmarks/gpu_cluster_smoke.sh --help       # every option of gpu_cluster_smoke.py
#
# Uses the image's python3 (override: PYTHON=...), no package index: PYTHONPATH points at the
# workspace packages' src/ and the app's src/ (torch and vLLM come from the interpreter).
# Arguments pass through; the last stdout line is one JSON object.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

src_paths=""
for src in "$ROOT"/packages/*/src "$ROOT"/apps/arctic-swe/src; do
  src_paths="${src_paths:+$src_paths:}$src"
done
export PYTHONPATH="${src_paths}${PYTHONPATH:+:$PYTHONPATH}"

exec "$PY" "$ROOT/benchmarks/gpu_cluster_smoke.py" "$@"
