"""Where an update's time goes in the asynchronous RL loop, and how much the overlap saves.

Runs the real loop (namespace sandboxes, torch engines, router, trainer) twice on the same deck
and policy: once asynchronous (``run.lookahead_batches=1``: batch k+1 generates while batch k
trains — the app's default) and once synchronous (``lookahead_batches=0``: generate, then train,
then generate) as the in-run baseline. For each it reports, per update, the wall time and its
parts: trainer waiting for a batch vs training vs weight refresh, plus the rollout-side time
(generation, tools, grading; summed over concurrent rollouts, so they overlap each other). The
paper's trainer waited 278 of 454 s per update (61 %).

Without ``--deck``/``--policy`` a small deck and a random-init tiny policy are built in a
temporary directory (a random policy ends episodes at the first turn, so tools and grading are
nearly idle; pass a warm-started policy for realistic figures). Prints one JSON object as the
last stdout line.

    uv run --frozen --all-packages --all-extras python benchmarks/update_breakdown.py
    uv run --frozen --all-packages --all-extras python benchmarks/update_breakdown.py --smoke
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path
from typing import Any

import torch

from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.metrics import UpdateMetrics
from arctic_swe.orchestrator import Inputs, random_init_inputs, run_training


def _build_inputs(root: Path, pool: int) -> Inputs:
    return random_init_inputs(root, pool, deck_seed=5)


def _breakdown(records: list[UpdateMetrics]) -> dict[str, float]:
    measured = records[1:] or records  # the first update has no overlap to exploit: skip it
    n = len(measured)
    wait = sum(r.wait_seconds for r in measured) / n
    train = sum(r.train_seconds for r in measured) / n
    return {
        "updates_measured": n,
        "update_s": round(sum(r.wall_seconds for r in measured) / n, 3),
        "waiting_s": round(wait, 3),
        "training_s": round(train, 3),
        "refresh_s": round(sum(r.refresh_seconds for r in measured) / n, 3),
        "wait_fraction": round(wait / (wait + train), 4) if wait + train > 0 else 0.0,
        "rollout_generation_s": round(sum(r.generate_seconds for r in measured) / n, 3),
        "rollout_tools_s": round(sum(r.tool_seconds for r in measured) / n, 3),
        "rollout_grading_s": round(sum(r.grade_seconds for r in measured) / n, 3),
        "generated_tokens_per_s": round(sum(r.tokens_per_second for r in measured) / n, 1),
        "stale_dropped": sum(r.stale_dropped for r in measured),
        "mean_lag": round(sum(r.lag_mean for r in measured) / n, 3),
    }


def _run(inputs: Inputs, root: Path, name: str, overrides: list[str]) -> dict[str, float]:
    config = apply_overrides(RunConfig(), overrides)
    run = prepare_run_dir(root / name, config, resume=False)
    result = run_training(config, run, inputs)
    return _breakdown(list(result.records))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI)")
    parser.add_argument("--updates", type=int, default=6, help="optimizer steps per mode")
    parser.add_argument("--deck", default=None, help="deck directory (default: build a small one)")
    parser.add_argument("--policy", default=None, help="policy checkpoint with tokenizer")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (as arctic-swe overfit)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    updates = 2 if args.smoke else args.updates
    overrides = [
        f"run.updates={updates}",
        "metrics.live=false",
        "metrics.plots=false",
        "deck.pool_size=8",
    ]  # otherwise the tiny preset's batch: 2 groups x 8 rollouts
    if args.smoke:
        overrides += [
            "deck.rollouts_per_group=2",
            "engine.max_new_tokens=12",
            "harness.max_tokens=2048",
        ]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        if args.deck and args.policy:
            inputs = Inputs(Path(args.deck), Path(args.policy))
        else:
            inputs = _build_inputs(root, 8)
        overlapped = _run(inputs, root, "async", [*overrides, "run.lookahead_batches=1"])
        baseline = _run(inputs, root, "sync", [*overrides, "run.lookahead_batches=0"])
    report: dict[str, Any] = {
        "benchmark": "update_breakdown",
        "machine": f"{platform.machine()} {torch.get_num_threads()} torch threads, no GPU",
        "policy": args.policy or "random-init tiny",
        "async": overlapped,
        "sync_baseline": baseline,
        "update_time_ratio_sync_over_async": round(baseline["update_s"] / overlapped["update_s"], 3)
        if overlapped["update_s"] > 0
        else None,
        "paper_wait_fraction": round(278 / 454, 4),
    }
    return report


if __name__ == "__main__":
    print(json.dumps(main()))
