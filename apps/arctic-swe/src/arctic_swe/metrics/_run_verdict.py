"""The verdict rule a run's configuration declared (its ``[verdict]`` section).

The rule's windows are fractions of the run's length: ``run.updates``, or, for a run that
stopped by its own stopping rule (``RUN/finished.json``: every task retired, or stalled), the
update it stopped at — both fixed before the run. A run still in progress (or crashed) is
judged against its planned length, so its final window is simply not reached yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arctic_swe.config import RunConfig, RunDir, RunEnd, load_run_config, read_run_end
from arctic_swe.metrics._evaluations import EvaluationLog
from arctic_swe.metrics._record import UpdateMetrics
from arctic_swe.metrics._summary import RunSummary, summarize
from arctic_swe.metrics._verdict import VerdictRule


def verdict_rule(config: RunConfig, end: RunEnd | None = None) -> VerdictRule:
    """The rule ``config``'s ``[verdict]`` section declares for a run that ended at ``end``
    (``None``: in progress, or ran all ``run.updates``)."""
    section = config.verdict
    updates = config.run.updates if end is None or not end.early else max(1, end.step)
    return VerdictRule(
        updates=updates,
        every=config.run.pool_eval_every,
        reference=(section.reference_start, section.reference_end),
        final_start=section.final_start,
        confidence=section.confidence,
        margin=section.margin,
    )


def read_verdict_rule(root: Path) -> VerdictRule | None:
    """The rule ``RUN/config.toml`` declared over the run's length (``None`` when the run has
    no saved configuration). Raises ``RunConfigError`` / ``RunDirError`` for a bad config or
    end record."""
    run = RunDir(Path(root))
    if not run.config.is_file():
        return None
    return verdict_rule(load_run_config(run), read_run_end(run))


def judged_summary(
    records: Sequence[UpdateMetrics], run: RunDir, config: RunConfig, end: RunEnd | None
) -> RunSummary:
    """The run's summary with the verdict its config declared, over ``RUN/evaluations.jsonl``
    (what ``overfit`` prints at the end). Raises ``MetricsError`` for a corrupt log."""
    evaluations = EvaluationLog(run.evaluations).read()
    return summarize(records, evaluations, verdict_rule(config, end))
