"""What one Pipeline-2 judgement costs, and what reusing a sandbox per task saves (swe-curate).

On a small real task (the ``clamp`` fix with a loose suite) this measures:

- offline counterfactual generation (mutating the gold patch on the host; no sandbox),
- scoring every counterfactual with ``SandboxScorer`` (one sandbox per task, reset between
  patches) against the baseline measured in the same run: a fresh ``Sandbox.create`` per
  patch, graded identically. The ratio is baseline / ours (higher is better).

Needs the namespace backend (root and swe-sandbox's root filesystem); prints
``{"skipped": reason}`` where it cannot run. Prints one JSON object as the last stdout line.

    python benchmarks/curate_judge_cost.py            # every counterfactual, 3 repeats
    python benchmarks/curate_judge_cost.py --smoke    # 2 counterfactuals, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from swe_curate import OfflineJudge, SandboxScorer, judge_context, make_patch
from swe_sandbox import NamespaceBackend, RepoSource, Sandbox, SandboxError, TaskSpec

BUGGY = "def clamp(x, lo, hi):\n    if x > hi:\n        return hi\n    return x\n"
GOLD = BUGGY.replace("    return x\n", "    if x < lo:\n        return lo\n    return x\n")
TESTS = "from geom import clamp\n\n\ndef test_high():\n    assert clamp(50, 0, 10) == 10\n"
LOOSE = TESTS + "\n\ndef test_low():\n    assert clamp(-5, 0, 10) == 0\n"


def make_task(root: Path) -> TaskSpec:
    (root / "geom.py").write_text(BUGGY)
    (root / "test_geom.py").write_text(TESTS)
    return TaskSpec(
        instance_id="bench-clamp",
        repo=RepoSource.directory(root),
        problem_statement="clamp() ignores its lower bound",
        gold_patch=make_patch({"geom.py": BUGGY}, {"geom.py": GOLD}),
        test_patch=make_patch({"test_geom.py": TESTS}, {"test_geom.py": LOOSE}),
        fail_to_pass=("test_geom.py::test_low",),
        pass_to_pass=("test_geom.py::test_high",),
    )


def fresh_grade(task: TaskSpec, backend: NamespaceBackend, patch: str) -> int:
    with Sandbox.create(task, backend) as sandbox:
        sandbox.apply_patch(patch)
        return sandbox.grade().reward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    repeats = 1 if args.smoke else args.repeats
    backend = NamespaceBackend()
    try:
        backend.check()
        _ = backend.rootfs
    except SandboxError as exc:
        print(json.dumps({"benchmark": "curate_judge_cost", "skipped": str(exc)}))
        return
    task = make_task(Path(tempfile.mkdtemp(prefix="curate-bench-")))
    ctx = judge_context(task, {})  # also warms swe-sandbox's per-task preparation cache
    began = time.perf_counter()
    counterfactuals = OfflineJudge().counterfactuals(ctx)
    generate_s = time.perf_counter() - began
    if args.smoke:
        counterfactuals = counterfactuals[:2]
    ours, baseline = [], []
    rewards_ours: list[int] = []
    rewards_base: list[int] = []
    for _ in range(repeats):
        with SandboxScorer(backend) as scorer:
            began = time.perf_counter()
            rewards_ours = [scorer.grade(task, cf.patch).reward for cf in counterfactuals]
            ours.append(time.perf_counter() - began)
        began = time.perf_counter()
        rewards_base = [fresh_grade(task, backend, cf.patch) for cf in counterfactuals]
        baseline.append(time.perf_counter() - began)
    assert rewards_ours == rewards_base, "reuse must not change a single reward"
    n = len(counterfactuals)
    result = {
        "benchmark": "curate_judge_cost",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, no GPU",
        "counterfactuals": n,
        "wrong_passing": sum(
            r
            for r, cf in zip(rewards_ours, counterfactuals, strict=True)
            if cf.kind.value == "wrong"
        ),
        "generate_s": round(generate_s, 4),
        "score_per_patch_s_reuse": round(statistics.median(ours) / n, 3),
        "score_per_patch_s_fresh": round(statistics.median(baseline) / n, 3),
        "speedup_fresh_over_reuse": round(statistics.median(baseline) / statistics.median(ours), 2),
        "repeats": repeats,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
