"""The GPU suite's dry run: ``benchmarks/gpu_suite.sh --smoke`` through the same shell script the
GPU machine runs (image-python style: ``PYTHONPATH`` to the packages' ``src/``). Without CUDA
it runs hybrid-numerics' Triton kernels under ``TRITON_INTERPRET=1``; every row must parse,
none may be an error row, and the state error vs float64 must be FP32-sized."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_suite_smoke_prints_a_json_row_per_measurement() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
    env["PYTHON"] = sys.executable
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_suite.sh"), "--smoke"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    summary = rows[-1]
    assert summary["benchmark"] == "gpu_suite"
    assert summary["errors"] == 0
    measured = [r for r in rows if r.get("impl") == "ours"]
    assert {r["row"] for r in measured} == {"forward", "forward_backward", "decode"}
    assert all("error" not in r and r["ms"] > 0 for r in measured)
    forward = next(r for r in measured if r["row"] == "forward")
    assert forward["state_rel_err_vs_f64"] <= 1e-5
