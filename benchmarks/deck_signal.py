"""Benchmark deck-evictor: how much rollout budget lands in zero-variance groups, and what it costs.

Part 1 (signal). A simulated population of tasks, each with a solve probability p: some nearly
unsolvable, some nearly always solved, the rest learnable (p rises a little after every group
that carries signal, i.e. mixed successes). Every update samples ``groups`` tasks from a Deck and
runs n = 8 rollouts each. We measure the share of rollouts that fall in all-0 or all-1 groups
(zero group-relative advantage, hence zero gradient) without eviction, with the paper's easy+hard
eviction, and with the final recipe's mastered-only eviction (streak 1 and 2, the latter also with
replay feedback: a probe below 0.75 returns a forgotten task). Arctic-SWE §3.3 reports
49.4 % → 19.6 % on R2E-Gym; the simulation reproduces the direction, not the
numbers. Retired tasks also slowly lose skill (a "4B-like" forgetting rate), and replay probes
show what the eviction-adjusted reward cannot.

Part 2 (cost). ``record`` and ``sample`` per call on a 100k-task deck, each against a bare
baseline measured in the same run (a dict counter increment; ``random.sample`` of 16 ids), and
the time and size of one atomic ``save``/``load``.

Prints one JSON object as the last stdout line. ``--smoke`` runs tiny sizes in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from deck_evictor import Deck, EvictionRules, ReplayPolicy

ROLLOUTS_PER_GROUP = 8


def population(tasks: int, seed: int) -> np.ndarray:
    """Per-task solve probabilities: 30 % near 0, 25 % near 1, 45 % learnable in (0.05, 0.6)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=tasks, p=[0.30, 0.25, 0.45])
    hard = rng.beta(0.3, 30.0, size=tasks)
    easy = 1.0 - rng.beta(0.3, 30.0, size=tasks)
    learnable = rng.uniform(0.05, 0.6, size=tasks)
    return np.where(kind == 0, hard, np.where(kind == 1, easy, learnable))


def simulate(
    rules: EvictionRules,
    probs: np.ndarray,
    *,
    updates: int,
    groups: int,
    seed: int,
    forget: float,
    reactivate_below: float | None = None,
) -> dict[str, Any]:
    """Run ``updates`` updates; return the zero-variance share and reward/replay figures.

    ``reactivate_below``: replay feedback (a probe below it returns a forgotten task).
    """
    p = probs.copy()
    ids = [f"task-{i}" for i in range(len(p))]
    index = {task_id: i for i, task_id in enumerate(ids)}
    replay = ReplayPolicy(every=10, size=groups, reactivate_below=reactivate_below)
    deck = Deck(ids, rules=rules, replay=replay, seed=seed)
    rng = np.random.default_rng(seed + 1)
    rollouts = zero_variance = 0
    exhausted_at: int | None = None
    for update in range(1, updates + 1):
        deck.advance(update)
        draw = deck.sample(groups)
        if draw.exhausted and exhausted_at is None:
            exhausted_at = update
        for task_id in draw.task_ids:
            i = index[task_id]
            wins = int(rng.binomial(ROLLOUTS_PER_GROUP, p[i]))
            rollouts += ROLLOUTS_PER_GROUP
            zero_variance += ROLLOUTS_PER_GROUP * (wins in (0, ROLLOUTS_PER_GROUP))
            if 0 < wins < ROLLOUTS_PER_GROUP:
                p[i] += 0.05 * (1.0 - p[i])  # learning needs signal: only mixed groups teach
            deck.record(task_id, wins, ROLLOUTS_PER_GROUP)
        retired = np.array([index[t] for t in deck.retired], dtype=np.int64)
        if retired.size:
            p[retired] *= 1.0 - forget  # skill decays on tasks no longer trained
        for task_id in deck.replay_schedule(update):
            wins = int(rng.binomial(ROLLOUTS_PER_GROUP, p[index[task_id]]))
            deck.record_replay(task_id, wins, ROLLOUTS_PER_GROUP)
    reward = deck.adjusted_reward()
    replay = deck.replay_reward()
    independent = float(np.mean(probs**8 + (1 - probs) ** 8))
    return {
        "zero_variance_share": zero_variance / rollouts,
        "rollouts": rollouts,
        "rollouts_with_signal": rollouts - zero_variance,
        "deck_exhausted_at_update": exhausted_at,
        "retired": len(deck.retired),
        "active_left": deck.active_count,
        "reactivations": deck.reactivations,
        "adjusted_reward": reward.value,
        "replay_adjusted_reward": reward.replay_adjusted,
        "easy_replay_reward": replay.reward,
        "easy_mean_forgetting": replay.mean_forgetting,
        "initial_zero_variance_if_uniform": independent,
    }


#: (name, rules, replay feedback threshold) of each simulated deck.
SIGNAL_RUNS: tuple[tuple[str, EvictionRules, float | None], ...] = (
    ("no_eviction", EvictionRules.off(), None),
    ("easy_hard", EvictionRules.paper(), None),
    ("mastered_only", EvictionRules.mastered_only(), None),
    ("mastered_2", EvictionRules.mastered_only(2), None),
    ("mastered_2_feedback", EvictionRules.mastered_only(2), 0.75),
)


def signal_runs(probs: np.ndarray, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Part 1 for every deck of :data:`SIGNAL_RUNS` on the same population and seed."""
    return {
        name: simulate(
            rules,
            probs,
            updates=args.updates,
            groups=args.groups,
            seed=args.seed,
            forget=args.forget,
            reactivate_below=below,
        )
        for name, rules, below in SIGNAL_RUNS
    }


def per_call_seconds(fn: Any, calls: int) -> float:
    start = time.perf_counter()
    fn(calls)
    return (time.perf_counter() - start) / calls


def cost(tasks: int, calls: int, seed: int) -> dict[str, Any]:
    """Per-call cost of record/sample at ``tasks`` tasks vs bare baselines, and save/load."""
    ids = [f"repo__issue-{i}" for i in range(tasks)]
    deck = Deck(ids, rules=EvictionRules.paper(), seed=seed)
    rng = random.Random(seed)
    targets = [rng.choice(ids) for _ in range(calls)]
    outcomes = [rng.randint(1, 7) for _ in range(calls)]  # mixed groups: nothing retires

    def record(n: int) -> None:
        for task_id, wins in zip(targets[:n], outcomes[:n], strict=True):
            deck.record(task_id, wins, 8)

    counts = dict.fromkeys(ids, 0)

    def record_baseline(n: int) -> None:
        for task_id, wins in zip(targets[:n], outcomes[:n], strict=True):
            counts[task_id] += wins

    def sample(n: int) -> None:
        for _ in range(n):
            deck.sample(16)

    def sample_baseline(n: int) -> None:
        for _ in range(n):
            rng.sample(ids, 16)

    result: dict[str, Any] = {"tasks": tasks, "calls": calls}
    for name, fn, base in (
        ("record", record, record_baseline),
        ("sample", sample, sample_baseline),
    ):
        ours, bare = per_call_seconds(fn, calls), per_call_seconds(base, calls)
        result[f"{name}_us"] = ours * 1e6
        result[f"{name}_baseline_us"] = bare * 1e6
        result[f"{name}_ratio_vs_baseline"] = ours / bare
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "deck.state"
        start = time.perf_counter()
        deck.save(path)
        result["save_s"] = time.perf_counter() - start
        result["state_bytes"] = path.stat().st_size
        start = time.perf_counter()
        loaded = Deck.load(path)
        result["load_s"] = time.perf_counter() - start
        result["resumes_exactly"] = loaded.sample(16) == deck.sample(16)
    return result


def _finite(value: Any) -> Any:
    """NaN (e.g. replay reward with nothing probed) becomes null: strict JSON has no NaN."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--tasks", type=int, default=1000, help="simulated population size")
    parser.add_argument("--updates", type=int, default=500, help="simulated updates")
    parser.add_argument("--groups", type=int, default=16, help="groups (tasks) per update")
    parser.add_argument(
        "--forget", type=float, default=0.001, help="per-update skill decay of retired tasks"
    )
    parser.add_argument(
        "--cost-tasks", type=int, default=100_000, help="deck size for the cost part"
    )
    parser.add_argument("--cost-calls", type=int, default=100_000, help="calls timed per operation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.smoke:
        args.tasks, args.updates, args.cost_tasks, args.cost_calls = 200, 40, 5_000, 2_000
    probs = population(args.tasks, args.seed)
    runs = signal_runs(probs, args)
    base = runs["no_eviction"]["zero_variance_share"]
    for name, run in runs.items():
        run["zero_variance_ratio_vs_no_eviction"] = run["zero_variance_share"] / base
        print(f"{name:>19}: zero-variance share {run['zero_variance_share']:.1%}")
    costs = cost(args.cost_tasks, args.cost_calls, args.seed)
    print(
        f"at {costs['tasks']} tasks: record {costs['record_us']:.2f} us "
        f"(x{costs['record_ratio_vs_baseline']:.1f} a dict increment), sample(16) "
        f"{costs['sample_us']:.2f} us (x{costs['sample_ratio_vs_baseline']:.1f} random.sample), "
        f"save {costs['save_s']:.2f} s, load {costs['load_s']:.2f} s"
    )
    report = {
        "benchmark": "deck_signal",
        "smoke": args.smoke,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "config": {k: v for k, v in vars(args).items() if k != "smoke"},
        "paper_zero_variance_share": {"no_eviction": 0.494, "easy_hard": 0.196},
        "signal": runs,
        "cost": costs,
    }
    print(json.dumps(_finite(report), allow_nan=False))


if __name__ == "__main__":
    main()
