"""Tests for ``arctic_swe.ablate._run``: finished variants are skipped, interrupted ones resumed
through overfit's resume path, new ones started; the run order is the plan's.

The runner here records its calls and appends real metrics lines in place of the RL loop (the
loop itself runs in ``test_command.py``'s end-to-end test and in ``integration_tests``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from arctic_swe.ablate import AblationPlan, VariantState, open_plan, variant_configs
from arctic_swe.ablate._run import VariantEvent, run_ablation
from arctic_swe.config import RunConfig, RunDir, apply_overrides
from arctic_swe.metrics import MetricsLog
from arctic_swe.orchestrator import Inputs, TrainingResult

from .conftest import metrics_record, write_run


@dataclass
class RecordingRunner:
    """Writes the remaining updates of a run into its metrics log, as the loop would."""

    calls: list[tuple[str, bool]] = field(default_factory=list)

    def __call__(
        self, config: RunConfig, run: RunDir, inputs: Inputs, *, resume: bool = False, **kw: Any
    ) -> TrainingResult:
        self.calls.append((run.root.name, resume))
        log = MetricsLog(run.metrics)
        for step in range(len(log.read()) + 1, config.run.updates + 1):
            record = metrics_record(step, 0.1 * step)
            log.append(record)
            kw["on_update"](record)
        return TrainingResult(run, tuple(log.read()), None, (), None)


def test_done_variants_are_skipped_partial_resumed_new_started(tmp_path: Path) -> None:
    base = apply_overrides(RunConfig(), ["run.updates=3"])
    configs = variant_configs(base, ("full", "clip", "lenient"))
    plan = open_plan(AblationPlan(tmp_path / "ab", configs, tmp_path / "d", tmp_path / "p"))
    write_run(plan.run_dir("full").root, configs["full"], [0.1, 0.2, 0.3])  # finished
    write_run(plan.run_dir("clip").root, configs["clip"], [0.1])  # interrupted at update 1
    events: list[VariantEvent] = []
    runner = RecordingRunner()
    runs = run_ablation(
        plan,
        Inputs(tmp_path / "d", tmp_path / "p"),
        console=Console(),
        on_event=events.append,
        runner=runner,
    )
    assert runner.calls == [("clip", True), ("lenient", False)]
    starts = [(e.variant, e.state) for e in events if e.record is None]
    assert starts == [
        ("full", VariantState.DONE),
        ("clip", VariantState.PARTIAL),
        ("lenient", VariantState.NEW),
    ]
    assert [e.record.step for e in events if e.record and e.variant == "clip"] == [2, 3]
    assert {name: len(records) for name, records in runs.items()} == {
        "full": 3,
        "clip": 3,
        "lenient": 3,
    }
    runner.calls.clear()
    run_ablation(plan, Inputs(tmp_path / "d", tmp_path / "p"), console=Console(), runner=runner)
    assert runner.calls == []  # everything finished: nothing runs again
