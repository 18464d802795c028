#!/usr/bin/env bash
# GPU suite of hybrid-numerics' Triton kernels for one short GPU window (< 5 min on an H200).
#
#   benchmarks/gpu_suite.sh            # on the GPU machine: every row
#   benchmarks/gpu_suite.sh --smoke    # seconds; without CUDA a CPU dry run (Triton interpreter)
#   benchmarks/gpu_suite.sh --help     # the options of gpu_suite.py
#
# Uses the image's python3 (override: PYTHON=...), no package index: PYTHONPATH points at the
# workspace packages' src/ (torch and triton come from the image). A carried fla-core wheel
# (FLA_WHEEL=path, or the first wheels/fla_core-*.whl) is installed, without dependencies, into
# a scratch directory on PYTHONPATH for the comparison rows. One JSON row per measurement,
# flushed as it is measured; the last line is a JSON summary.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

src_paths=""
for src in "$ROOT"/packages/*/src; do
  src_paths="${src_paths:+$src_paths:}$src"
done
export PYTHONPATH="${src_paths}${PYTHONPATH:+:$PYTHONPATH}"

wheel="${FLA_WHEEL:-}"
if [ -z "$wheel" ]; then
  wheel="$(ls "$ROOT"/wheels/fla_core-*.whl 2>/dev/null | head -n 1 || true)"
fi
if [ -n "$wheel" ] && [ -f "$wheel" ]; then
  target="$(mktemp -d)"
  if "$PY" -m pip install --quiet --no-deps --no-index --target "$target" "$wheel" >&2; then
    export PYTHONPATH="$PYTHONPATH:$target"
    echo "{\"row\": \"fla_wheel\", \"installed\": \"$(basename "$wheel")\"}"
  else
    echo "{\"row\": \"fla_wheel\", \"error\": \"pip could not install $(basename "$wheel")\"}"
  fi
fi

exec "$PY" "$ROOT/benchmarks/gpu_suite.py" "$@"
