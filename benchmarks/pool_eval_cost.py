"""What the measured pool evaluation (``run.pool_eval_every``) costs the RL loop.

Runs the real loop (namespace sandboxes, torch engine, router, trainer) twice on the same deck
and policy: once with the evaluation off (``run.pool_eval_every=0``, the in-run baseline) and
once with it every ``--every`` updates, ``--samples`` rollouts per pool task. The evaluation
runs in the background on its own engine, so its cost shows as slower updates while it
overlaps them (both share the machine's cores) plus the wait for the last evaluation after
the final update. Reports per mode the mean update time (updates 2..N), the whole loop time,
every evaluation's own wall time, and the ratios against the baseline; ``uptime``'s load
averages before and after (the machine is shared: state them with the figures).

Without ``--deck``/``--policy`` a small deck and a random-init tiny policy are built in a
temporary directory (its episodes end at the first turn: use a warm start for real figures).
Prints one JSON object as the last stdout line.

    uv run --frozen --all-packages --all-extras python benchmarks/pool_eval_cost.py \\
        --deck runs/deck --policy runs/warmstart
    uv run --frozen --all-packages --all-extras python benchmarks/pool_eval_cost.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.metrics import MetricsLog
from arctic_swe.orchestrator import Inputs, random_init_inputs, run_training


def _build_inputs(root: Path, pool: int) -> Inputs:
    return random_init_inputs(root, pool, deck_seed=5)


def _run(inputs: Inputs, root: Path, name: str, overrides: list[str]) -> dict[str, Any]:
    config = apply_overrides(RunConfig(), overrides)
    run = prepare_run_dir(root / name, config, resume=False)
    began = time.monotonic()
    run_training(config, run, inputs)
    whole = time.monotonic() - began
    records = MetricsLog(run.metrics).read()  # after the evaluations amended their lines
    measured = records[1:] or records  # the first update has nothing to overlap with
    evaluations = [r for r in records if r.pool_eval_rollouts > 0]
    return {
        "update_s": round(sum(r.wall_seconds for r in measured) / len(measured), 3),
        "updates_s": round(sum(r.wall_seconds for r in records), 2),
        "run_s": round(whole, 2),  # setup + updates + the wait for the last evaluations
        "evaluations": [
            {
                "step": r.pool_eval_step,
                "seconds": round(r.pool_eval_seconds, 2),
                "solved": r.pool_eval_solved,
                "rollouts": r.pool_eval_rollouts,
            }
            for r in evaluations
        ],
        "generated_tokens_per_s": round(
            sum(r.tokens_per_second for r in measured) / len(measured), 1
        ),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI)")
    parser.add_argument("--updates", type=int, default=6, help="optimizer steps per mode")
    parser.add_argument("--every", type=int, default=3, help="run.pool_eval_every of the on mode")
    parser.add_argument("--samples", type=int, default=2, help="run.pool_eval_samples")
    parser.add_argument("--workers", type=int, default=4, help="run.pool_eval_workers")
    parser.add_argument("--deck", default=None, help="deck directory (default: build a small one)")
    parser.add_argument("--policy", default=None, help="policy checkpoint with tokenizer")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (as overfit)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    updates = 2 if args.smoke else args.updates
    overrides = [f"run.updates={updates}", "metrics.live=false", "metrics.plots=false"]
    if args.smoke:
        overrides += [
            "deck.pool_size=4",
            "deck.rollouts_per_group=2",
            "engine.max_new_tokens=12",
            "harness.max_tokens=2048",
        ]
    cadence = {
        "every": 1 if args.smoke else args.every,
        "samples": 1 if args.smoke else args.samples,
        "workers": args.workers,
    }
    on = [f"run.pool_eval_{name}={value}" for name, value in cadence.items()]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        if args.deck and args.policy:
            inputs = Inputs(Path(args.deck), Path(args.policy))
        else:
            inputs = _build_inputs(root, 4 if args.smoke else 16)
        baseline = _run(inputs, root, "off", [*overrides, "run.pool_eval_every=0"])
        measured = _run(inputs, root, "on", [*overrides, *on])
    return {
        "benchmark": "pool_eval_cost",
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {args.threads} torch thread(s)",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "policy": args.policy or "random-init tiny",
        "pool_eval": cadence,
        "off": baseline,
        "on": measured,
        "update_time_ratio_on_over_off": round(measured["update_s"] / baseline["update_s"], 3)
        if baseline["update_s"] > 0
        else None,
        "run_time_ratio_on_over_off": round(measured["run_s"] / baseline["run_s"], 3)
        if baseline["run_s"] > 0
        else None,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
