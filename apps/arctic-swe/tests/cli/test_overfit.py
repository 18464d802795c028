"""Tests for ``arctic_swe.cli._overfit``'s end-of-run verdict: the summary reads the run's
evaluations under the config's declared rule, and the verdict line says which figures it read."""

from __future__ import annotations

from pathlib import Path

from arctic_swe.cli._overfit import _verdict_line
from arctic_swe.config import EndReason, RunEnd, apply_overrides, prepare_run_dir, preset
from arctic_swe.metrics import EvalRecord, EvaluationLog, UpdateMetrics, judged_summary


def _record(step: int) -> UpdateMetrics:
    fields: dict[str, object] = dict.fromkeys(UpdateMetrics.__dataclass_fields__, 0)
    fields.update(step=step, version=step, replay_reward=-1.0, terminations={}, per_task_reward={})
    return UpdateMetrics(**fields)  # type: ignore[arg-type]


def _evaluation(step: int, cells: str) -> EvalRecord:
    return EvalRecord("pool", step, step, "pool", 0, {f"task-{k}": cells for k in range(4)})


def test_the_end_of_run_verdict_reads_the_evaluations(tmp_path: Path) -> None:
    config = apply_overrides(preset("tiny"), ["run.updates=12", "run.pool_eval_every=3"])
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    records = [_record(step) for step in range(1, 10)]
    bare = judged_summary(records, run, config, None)
    assert _verdict_line(bare).startswith("verdict: not measured (no pool evaluation")
    log = EvaluationLog(run.evaluations)
    for step, cells in ((0, "00"), (3, "01"), (6, "11"), (9, "11")):
        log.append(_evaluation(step, cells))
    # stopped at update 9 (every task retired): the windows are thirds of 9 updates
    end = RunEnd(EndReason.DECK_EXHAUSTED, step=9, updates=12, retired=4, pool_size=4)
    summary = judged_summary(records, run, config, end)
    assert summary.verdict.rule.updates == 9
    line = _verdict_line(summary)
    assert line.startswith("verdict: climbed and held — pool success, update 0 → final 0.000")
    assert "(t over 4 tasks, paired, 95 %)" in line
    assert "by more than 0.03" in line
