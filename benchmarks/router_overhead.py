"""Router decision latency per lease at 8, 64 and 1024 engines with 100k rollouts in flight.

For each engine count the router is filled to ``--in-flight`` resident rollouts (groups of
``--group-size``), then each step releases a random held lease and times ``try_acquire`` of a
new group (the whole decision: policy choice, lease record, counter updates). The same loop is
run with a linear-scan least-loaded index plugged into the same Router as the in-run baseline,
so the figure is reported as a ratio too. Prints one JSON object as the last stdout line.

    uv run --frozen --all-packages --all-extras python benchmarks/router_overhead.py
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from typing import Any

from load_router import (
    LeastLoaded,
    PlacementIndex,
    PlacementOnlyEngine,
    PlacementPolicy,
    Router,
)


class _LinearIndex:
    """Baseline: least-loaded by scanning every engine (what a naive router does)."""

    def __init__(self) -> None:
        self.loads: dict[str, int] = {}
        self.caps: dict[str, int] = {}

    def add(self, engine_id: str, cap: int) -> None:
        self.loads[engine_id], self.caps[engine_id] = 0, cap

    def remove(self, engine_id: str) -> None:
        del self.loads[engine_id], self.caps[engine_id]

    def set_load(self, engine_id: str, load: int) -> None:
        self.loads[engine_id] = load

    def choose(self, key: str, size: int) -> str | None:
        best, best_load = None, None
        for engine_id, load in self.loads.items():
            if load + size <= self.caps[engine_id] and (best_load is None or load < best_load):
                best, best_load = engine_id, load
        return best


class LinearLeastLoaded:
    @property
    def name(self) -> str:
        return "least-loaded-linear-scan"

    def new_index(self) -> PlacementIndex:
        return _LinearIndex()


def measure(
    policy: PlacementPolicy, engines: int, in_flight: int, group: int, steps: int, seed: int
) -> dict[str, float]:
    cap = -(-in_flight // engines) + 4 * group  # room for the in-flight load plus churn
    router = Router([PlacementOnlyEngine(f"e{i}", cap) for i in range(engines)], policy=policy)
    rng = random.Random(seed)
    held = []
    for g in range(in_flight // group):
        lease = router.try_acquire(f"g{g}", group)
        assert lease is not None
        held.append(lease)
    samples = []
    clock = time.perf_counter_ns
    for step in range(steps):
        position = rng.randrange(len(held))
        held[position].release()
        start = clock()
        lease = router.try_acquire(f"n{step}", group)
        samples.append(clock() - start)
        assert lease is not None
        held[position] = lease
    samples.sort()
    resident = sum(e.resident for e in router.snapshot().engines)
    assert resident == in_flight - in_flight % group
    return {
        "median_us": statistics.median(samples) / 1000,
        "p99_us": samples[int(0.99 * (len(samples) - 1))] / 1000,
        "mean_us": statistics.fmean(samples) / 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes (seconds): 10k in flight, 2k steps"
    )
    parser.add_argument(
        "--engines", type=int, nargs="+", default=[8, 64, 1024], help="engine counts to measure"
    )
    parser.add_argument(
        "--in-flight", type=int, default=100_000, help="resident rollouts held while measuring"
    )
    parser.add_argument("--group-size", type=int, default=8, help="rollouts per leased group")
    parser.add_argument(
        "--steps", type=int, default=20_000, help="timed release+acquire steps per configuration"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the release order")
    args = parser.parse_args()
    in_flight, steps = (10_000, 2_000) if args.smoke else (args.in_flight, args.steps)
    results: dict[str, Any] = {}
    for engines in args.engines:
        heap = measure(LeastLoaded(), engines, in_flight, args.group_size, steps, args.seed)
        linear = measure(LinearLeastLoaded(), engines, in_flight, args.group_size, steps, args.seed)
        results[str(engines)] = {
            "least_loaded": {k: round(v, 3) for k, v in heap.items()},
            "linear_scan_baseline": {k: round(v, 3) for k, v in linear.items()},
            "median_ratio_vs_linear": round(heap["median_us"] / linear["median_us"], 3),
        }
        print(
            f"{engines:>5} engines: median {heap['median_us']:.2f} us (linear scan {linear['median_us']:.2f} us)"
        )
    largest = str(max(args.engines))
    print(
        json.dumps(
            {
                "benchmark": "router_overhead",
                "in_flight_rollouts": in_flight,
                "group_size": args.group_size,
                "steps": steps,
                "smoke": args.smoke,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "results": results,
                "target_median_us_at_largest": 20.0,
                "meets_target": results[largest]["least_loaded"]["median_us"] <= 20.0,
            }
        )
    )


if __name__ == "__main__":
    main()
