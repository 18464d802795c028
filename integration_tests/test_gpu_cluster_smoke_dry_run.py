"""The cluster smoke's dry run: ``benchmarks/gpu_cluster_smoke.sh --dry-run`` through the same
shell script the GPU machine runs (image-python style: ``PYTHONPATH`` to the packages' and
the app's ``src/``). On the CPU: ``arctic-swe serve`` as the engine, ``LocalWeightSender``
(gloo) as the trainer side of the NCCL path (Arctic-SWE §3.3). Both refresh paths must land
every update: the engine serves and labels each version, and the trainer's forward scores
its tokens to FP32 precision after every refresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ~100 s on a loaded 2-core machine (most of it the server's start-up): run in CI, as the GPU-day
# script's only check that can run without a GPU
def test_dry_run_refreshes_three_times_by_each_path_and_matches_the_trainer() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHON"] = sys.executable
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_cluster_smoke.sh"), "--dry-run"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "gpu_cluster_smoke"
    assert summary["dry_run"] is True
    failed = {name: st["error"] for name, st in summary["stages"].items() if not st["ok"]}
    assert not failed
    assert summary["all_ok"]
    assert summary["paths_ok"] == {"nccl": True, "reload": True}
    assert summary["seconds_to_ready"] > 0
    for path in ("nccl", "reload"):
        assert len(summary["refresh_seconds"][path]) == 3
        assert all(seconds > 0 for seconds in summary["refresh_seconds"][path])
    updates = summary["updates"]
    assert [(u["path"], u["version"]) for u in updates] == [
        ("nccl", 1), ("nccl", 2), ("nccl", 3), ("reload", 4), ("reload", 5), ("reload", 6),
    ]  # fmt: skip
    assert [u["served_version"] for u in updates] == [1, 2, 3, 4, 5, 6]
    assert summary["baseline"]["served_version"] == 0  # vLLM's start label "default"
    for row in [summary["baseline"], *updates]:
        assert row["tokens"] > 0
        assert row["max_abs_dlogprob"] < 1e-4, row  # the engine serves the trainer's weights
        assert 0 <= row["mismatch_kl"] < 1e-8
    assert summary["max_abs_dlogprob"]["baseline"] < 1e-4
    assert summary["versions"]["torch"]
    assert summary["device"] == "cpu"
