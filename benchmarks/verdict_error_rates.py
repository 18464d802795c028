"""How often the stress test's verdict rule is wrong, by simulation at the shipped sizes.

The verdict (``arctic_swe.metrics.run_verdict``, Arctic-SWE §3.1) says whether a run's measured
pool success climbed from update 0 to the final window and whether it fell from a reference
window to the final one, each from a paired t interval over tasks. This script feeds it
simulated runs whose truth is known and counts its verdicts:

- **policies** (each task ``k`` has its own curve ``p_k(t) = p0_k + shape(t / T) (p1_k - p0_k)``,
  ``p0_k ~ Beta(--start-a, --start-b)`` and ``p1_k = p0_k + g_k (1 - p0_k)``, ``g_k ~
  Beta(--gain-a, --gain-b)``: tasks start and learn unevenly): ``flat`` (shape 0), ``held``
  (climbs over the first third, then constant), ``collapse`` (climbs over the first third,
  holds to half way, falls back to the warm start's rates by 5/6 and stays there),
  ``still-climbing`` (linear over the whole run);
- **outcome models**: ``independent`` (every evaluation draws fresh outcomes) and ``crn``
  (common random numbers: each task x sample stream has one uniform ``u`` for the whole run
  and an outcome is ``u < p`` — what the evaluator's fixed streams do when nothing but the
  policy changes);
- **sizes**: ``tiny`` (36 updates), ``long-360`` (the ``long`` preset's 360) and ``long-110``
  (where long runs have stopped: every task retired at update 110, so the loop's last grid
  evaluation is 108 and its extra final one 110 — the thinned one); all evaluate every 9
  updates from update 0, 16 tasks x 2 samples (the shipped pool).

A wrong verdict is: on ``flat``, anything but "no measurable change"; on ``held`` and
``still-climbing``, any label saying it fell; on ``collapse``, any label saying it held.
Each share comes with its Wilson 95 % interval over the simulated runs. The old rule
(final window >= 0.9 x the best window of the same length, evaluations from update 9 on, as the
loop had them) is scored on the same runs: "not held" on ``flat``/``held``/``still-climbing``
is its wrong verdict, "held" on ``collapse``.

Pure Python, seeded. Prints one JSON object as the last stdout line.

    uv run --frozen --all-packages --all-extras --no-extra vllm python benchmarks/verdict_error_rates.py
    uv run --frozen --all-packages --all-extras --no-extra vllm python benchmarks/verdict_error_rates.py \\
        --runs 200 --sizes tiny
    uv run --frozen --all-packages --all-extras --no-extra vllm python benchmarks/verdict_error_rates.py --smoke
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from rich.progress import Progress

from arctic_swe._wilson import wilson_interval
from arctic_swe.config import preset
from arctic_swe.metrics import (
    CLIMBED_AND_HELD,
    CLIMBED_THEN_FELL,
    FELL,
    NO_CHANGE,
    STILL_CLIMBING,
    EvalRecord,
    VerdictRule,
    run_verdict,
)

#: name -> (run length, evaluation steps).
SIZES: dict[str, tuple[int, tuple[int, ...]]] = {
    "tiny": (36, tuple(range(0, 37, 9))),
    "long-360": (360, tuple(range(0, 361, 9))),
    "long-110": (110, (*range(0, 109, 9), 110)),
}
MODELS = ("independent", "crn")
EVERY = 9


def _collapse(x: float) -> float:
    if x <= 1 / 3:
        return 3 * x
    if x <= 1 / 2:
        return 1.0
    return max(0.0, 1.0 - 3 * (x - 1 / 2))


#: policy -> shape(fraction of the run) in [0, 1].
POLICIES: dict[str, Callable[[float], float]] = {
    "flat": lambda x: 0.0,
    "held": lambda x: min(1.0, 3 * x),
    "collapse": _collapse,
    "still-climbing": lambda x: x,
}
FELL_LABELS = {CLIMBED_THEN_FELL, FELL}
HELD_LABELS = {CLIMBED_AND_HELD, STILL_CLIMBING}


def wrong(policy: str, label: str) -> bool:
    """Whether ``label`` contradicts the simulated truth."""
    if policy == "flat":
        return label != NO_CHANGE
    if policy == "collapse":
        return label in HELD_LABELS
    return label in FELL_LABELS


def old_rule_held(rates: Sequence[tuple[int, float]]) -> bool:
    """The replaced rule on ``(step, rate)`` evaluations from update 9 on: the final k
    evaluations (k = those in the last third) >= 0.9 x the best k consecutive ones."""
    last = rates[-1][0]
    k = max(1, sum(1 for step, _ in rates if 3 * step > 2 * last))
    means = [sum(r for _, r in rates[i : i + k]) / k for i in range(len(rates) - k + 1)]
    return means[-1] >= 0.9 * max(means)


def simulate_run(
    args: argparse.Namespace, rng: random.Random, size: str, model: str, policy: str
) -> tuple[str, bool]:
    """One simulated run: (the verdict's label, the old rule's "held")."""
    updates, steps = SIZES[size]
    tasks = [f"task-{k:02d}" for k in range(args.tasks)]
    start = [rng.betavariate(args.start_a, args.start_b) for _ in tasks]
    top = [p + rng.betavariate(args.gain_a, args.gain_b) * (1 - p) for p in start]
    shape = POLICIES[policy]
    streams = [[rng.random() for _ in range(args.samples)] for _ in tasks]
    records = []
    for step in steps:
        x = shape(step / updates)
        outcomes = {}
        for k, task in enumerate(tasks):
            p = start[k] + x * (top[k] - start[k])
            draws = streams[k] if model == "crn" else [rng.random() for _ in streams[k]]
            outcomes[task] = "".join("1" if u < p else "0" for u in draws)
        records.append(EvalRecord("pool", step, step, "eval", 0, outcomes))
    rule = VerdictRule(updates, EVERY, confidence=args.confidence, margin=args.margin)
    old = old_rule_held([(r.step, r.rate) for r in records if r.step > 0])
    return run_verdict(records, rule).label, old


def share(count: int, runs: int) -> dict[str, float]:
    low, high = wilson_interval(count, runs)
    return {"share": round(count / runs, 4), "low": round(low, 4), "high": round(high, 4)}


def scenario(args: argparse.Namespace, size: str, model: str, policy: str, tick: Any) -> Any:
    rng = random.Random(f"{args.seed}/{size}/{model}/{policy}")
    labels: Counter[str] = Counter()
    old_wrong = wrong_count = 0
    for _ in range(args.runs):
        label, old_held = simulate_run(args, rng, size, model, policy)
        labels[label] += 1
        wrong_count += wrong(policy, label)
        old_wrong += old_held if policy == "collapse" else not old_held
        tick()
    return {
        "size": size,
        "model": model,
        "policy": policy,
        "runs": args.runs,
        "wrong": share(wrong_count, args.runs),
        "labels": {label: share(n, args.runs) for label, n in sorted(labels.items())},
        "old_rule_wrong": share(old_wrong, args.runs),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--runs", type=int, default=2000, help="simulated runs per scenario (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the simulation (default: %(default)s)"
    )
    parser.add_argument(
        "--tasks", type=int, default=16, help="pool tasks (default: the shipped %(default)s)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=2,
        help="samples per pool task (default: the shipped %(default)s)",
    )
    parser.add_argument(
        "--start-a",
        type=float,
        default=0.6,
        help="warm-start task rates p0 ~ Beta(a, b): a (default: %(default)s)",
    )
    parser.add_argument(
        "--start-b", type=float, default=1.2, help="... b (default: %(default)s; mean a / (a + b))"
    )
    parser.add_argument(
        "--gain-a",
        type=float,
        default=2.0,
        help="share g of a task's headroom learnt, g ~ Beta(a, b): a (default: %(default)s)",
    )
    parser.add_argument(
        "--gain-b", type=float, default=2.0, help="... b (default: %(default)s; mean a / (a + b))"
    )
    shipped = preset("long").verdict
    parser.add_argument(
        "--confidence",
        type=float,
        default=shipped.confidence,
        help="verdict.confidence (default: the shipped %(default)s)",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=shipped.margin,
        help="verdict.margin (default: the shipped %(default)s)",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        choices=sorted(SIZES),
        default=list(SIZES),
        help="run sizes (default: all)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=MODELS,
        default=list(MODELS),
        help="outcome models (default: both)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        choices=sorted(POLICIES),
        default=list(POLICIES),
        help="simulated policies (default: all)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--smoke", action="store_true", help="10 runs per scenario (a few seconds; CI)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs = 10
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    plan = [(s, m, p) for s in args.sizes for m in args.models for p in args.policies]
    began = time.monotonic()
    with Progress(disable=args.quiet, transient=True) as progress:
        bar = progress.add_task("simulated runs", total=len(plan) * args.runs)
        results = [scenario(args, *key, tick=lambda: progress.advance(bar)) for key in plan]
    print(
        json.dumps(
            {
                "benchmark": "verdict_error_rates",
                "conditions": {k: v for k, v in vars(args).items() if k not in ("quiet", "smoke")}
                | {"every": EVERY, "python": platform.python_version()},
                "seconds": round(time.monotonic() - began, 1),
                "scenarios": results,
            }
        )
    )


if __name__ == "__main__":
    main()
