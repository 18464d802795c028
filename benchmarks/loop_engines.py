"""The RL loop on in-process engines vs HTTP engine servers, and in-flight vs drain refresh.

Runs the real loop (namespace sandboxes, router, trainer, the tiny policy) once per mode on the
same deck and policy, each with 2 engines:

* ``inprocess-inflight`` — two in-process torch engines, in-flight refresh (the baseline);
* ``inprocess-drain`` — the same, refreshes wait for running turns (the comparison mode);
* ``http-inflight`` — two ``arctic-swe serve`` processes the run launches (``engine.launch = 2``),
  driven over HTTP on 127.0.0.1 (the ``tiny-http`` preset's topology).

For each it reports the mean update wall time, refresh time (pause to resume, including the
weights file write), generated tokens per second and the run's total wall time (HTTP: includes
starting the two servers), and the ratios against the in-process in-flight baseline measured in
the same invocation. Without ``--deck``/``--policy`` a small deck and a random-init tiny policy
are built (episodes end at the first turn; pass a warm-started policy for realistic turns).
Prints one JSON object as the last stdout line.

    .venv/bin/python benchmarks/loop_engines.py --smoke
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from update_breakdown import _build_inputs

from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.metrics import UpdateMetrics
from arctic_swe.orchestrator import Inputs, run_training

MODES: dict[str, list[str]] = {
    "inprocess-inflight": ["engine.engines=2", "engine.refresh_mode=inflight"],
    "inprocess-drain": ["engine.engines=2", "engine.refresh_mode=drain"],
    "http-inflight": ["engine.kind=http", "engine.launch=2", "engine.refresh_mode=inflight"],
}


def _figures(records: list[UpdateMetrics], wall: float) -> dict[str, float]:
    measured = records[1:] or records  # the first update has no overlap: skip it
    n = len(measured)
    return {
        "updates_measured": n,
        "update_s": round(sum(r.wall_seconds for r in measured) / n, 3),
        "refresh_s": round(sum(r.refresh_seconds for r in measured) / n, 3),
        "generated_tokens_per_s": round(sum(r.tokens_per_second for r in measured) / n, 1),
        "lag_token_mean": round(sum(r.lag_token_mean for r in measured) / n, 3),
        "run_wall_s": round(wall, 1),
    }


def _run(inputs: Inputs, root: Path, name: str, overrides: list[str]) -> dict[str, float]:
    config: RunConfig = apply_overrides(RunConfig(), overrides)
    run = prepare_run_dir(root / name, config, resume=False)
    began = time.monotonic()
    result = run_training(config, run, inputs)
    return _figures(list(result.records), time.monotonic() - began)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI)")
    parser.add_argument("--updates", type=int, default=4, help="optimizer steps per mode")
    parser.add_argument("--deck", default=None, help="deck directory (default: build a small one)")
    parser.add_argument("--policy", default=None, help="policy checkpoint with tokenizer")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads of the loop")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    updates = 2 if args.smoke else args.updates
    overrides = [
        f"run.updates={updates}",
        "metrics.live=false",
        "metrics.plots=false",
        "deck.pool_size=8",
        "deck.replay_size=0",
    ]
    if args.smoke:
        overrides += [
            "deck.rollouts_per_group=2",
            "engine.max_new_tokens=12",
            "harness.max_tokens=2048",
        ]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        if args.deck and args.policy:
            inputs = Inputs(Path(args.deck), Path(args.policy))
        else:
            inputs = _build_inputs(root, 8)
        for name, extra in MODES.items():
            results[name] = _run(inputs, root, name, [*overrides, *extra])
    base = results["inprocess-inflight"]
    ratios = {
        f"{name}_update_s_over_baseline": round(r["update_s"] / base["update_s"], 3)
        for name, r in results.items()
        if name != "inprocess-inflight" and base["update_s"] > 0
    }
    return {
        "benchmark": "loop_engines",
        "machine": f"{platform.machine()} {torch.get_num_threads()} torch threads, no GPU",
        "policy": args.policy or "random-init tiny",
        "updates": updates,
        "modes": results,
        **ratios,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
