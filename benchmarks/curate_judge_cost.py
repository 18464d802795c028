"""What curation costs per stage, serial against parallel, and which verdicts it reaches.

Runs swe-curate's whole pipeline (``run_pipeline``: audit → judge → strengthen, the offline
judge, the namespace sandbox pool) on the held-out cases of swe-curate's test suite (six small
duration-parsing repositories, one per verdict the judge must reach), twice on fresh output
directories: with ``--workers 1`` (the baseline) and with ``--workers 4``, in the same run.

Reports per stage the tasks and tasks/hour *per worker* (from each stage record's elapsed time),
the batch's wall time and tasks/hour for each worker count, the speed-up ratio (4 workers /
1 worker, higher is better), and the verdict table (expected vs judged vs final per case; the
two runs must agree). Needs root and swe-sandbox's root filesystem; prints ``{"skipped": …}``
where it cannot run. Prints one JSON object as the last stdout line.

    python benchmarks/curate_judge_cost.py            # six cases, workers 1 and 4
    python benchmarks/curate_judge_cost.py --smoke    # two cases, workers 1 and 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swe_curate import (
    AuditConfig,
    OfflineJudge,
    PipelineConfig,
    PoolRunner,
    RecordStore,
    RunOutput,
    import_rows,
    run_pipeline,
    stage_rates,
    task_to_row,
)
from swe_sandbox import Limits, NamespaceBackend, SandboxError

# The held-out cases live with swe-curate's tests (they are its acceptance suite).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/swe-curate/tests"))
from curate_cases import CASES, EXPECTED, make_task  # type: ignore[import-not-found]


def write_rows(root: Path, cases: list[str]) -> Path:
    path = root / "rows.jsonl"
    rows = [json.dumps(task_to_row(make_task(root, case))) for case in cases]
    path.write_text("\n".join(rows) + "\n")
    return path


def one_run(
    rows: Path, out: Path, backend: NamespaceBackend, workers: int, reruns: int
) -> dict[str, Any]:
    config = PipelineConfig(workers=workers, audit=AuditConfig(reruns=reruns))
    began = time.perf_counter()
    with PoolRunner(backend, Limits(grade_timeout_s=120, exec_timeout_s=120), workers) as pool:
        finals = run_pipeline(import_rows(rows), RunOutput(out), pool.scorer, OfflineJudge, config)
    wall = time.perf_counter() - began
    records = RecordStore(out / "records.jsonl")
    judged = {r.instance_id: r.verdict.value for r in records.records("judge")}
    return {
        "workers": workers,
        "tasks": len(finals),
        "wall_s": round(wall, 1),
        "tasks_per_hour": round(3600 * len(finals) / wall, 1),
        "stages_per_worker": stage_rates(records),
        "judged": judged,
        "final": {r.instance_id: r.verdict.value for r in finals},
    }


def verdict_table(cases: list[str], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for case in cases:
        iid = f"durations-{case.replace('_', '-')}"
        judged = {run["judged"].get(iid) for run in runs}
        final = {run["final"].get(iid) for run in runs}
        table.append(
            {
                "case": case,
                "expected": EXPECTED[case],
                "judged": "/".join(sorted(v or "-" for v in judged)),
                "final": "/".join(sorted(v or "-" for v in final)),
                "holds": judged == {EXPECTED[case]},
            }
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="two cases, workers 1 and 2")
    parser.add_argument("--workers", type=int, default=4, help="the parallel run's workers")
    parser.add_argument("--reruns", type=int, default=2, help="audit reruns per tree")
    args = parser.parse_args()
    cases = ["good_literal", "exact_message"] if args.smoke else list(CASES)
    parallel = 2 if args.smoke else args.workers
    backend = NamespaceBackend()
    try:
        backend.check()
        _ = backend.rootfs
    except SandboxError as exc:
        print(json.dumps({"benchmark": "curate_judge_cost", "skipped": str(exc)}))
        return
    root = Path(tempfile.mkdtemp(prefix="curate-bench-"))
    rows = write_rows(root, cases)
    runs = [
        one_run(rows, root / f"out-{workers}", backend, workers, args.reruns)
        for workers in (1, parallel)
    ]
    table = verdict_table(cases, runs)
    for row in table:
        print(
            f"{row['case']:<18} expected {row['expected']:<17} judged {row['judged']:<17} "
            f"final {row['final']:<17} {'ok' if row['holds'] else 'WRONG'}"
        )
    serial, fast = runs
    print(
        json.dumps(
            {
                "benchmark": "curate_judge_cost",
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, namespace backend",
                "cases": len(cases),
                "runs": [
                    {k: v for k, v in r.items() if k not in ("judged", "final")} for r in runs
                ],
                "speedup": round(serial["wall_s"] / fast["wall_s"], 2),
                "verdicts": table,
                "verdicts_hold": all(row["holds"] for row in table),
                "runs_agree": serial["final"] == fast["final"],
            }
        )
    )


if __name__ == "__main__":
    main()
