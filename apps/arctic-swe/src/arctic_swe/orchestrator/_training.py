"""``run_training``: one RL training run end to end, whatever it is for — the overfitting stress
test of ``arctic-swe overfit`` (Arctic-SWE §3.1), each variant of ``arctic-swe ablate``, the
loop child of ``arctic-swe cluster up``.

Order matters for the bad-input contract: the configuration and the run directory are checked
first (a clear error, nothing written elsewhere), then the deck and the warm-start policy are
built or reused, then the loop runs. A crash at any point leaves ``config.toml``, the metrics
written so far and the last complete checkpoint: ``--resume`` picks up from there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from arctic_swe.config import RunConfig, RunDir, RunEnd, clear_run_end, read_run_end
from arctic_swe.metrics import (
    LiveDisplay,
    MetricsLog,
    RunSummary,
    TensorBoardSink,
    UpdateMetrics,
    judged_summary,
    plot_run,
)
from arctic_swe.orchestrator._engines import torch_engine
from arctic_swe.orchestrator._loop import RLLoop
from arctic_swe.orchestrator._provenance import record_inputs
from arctic_swe.orchestrator._setup import EngineFactory, Inputs, open_components
from swe_sandbox import Backend


@dataclass(frozen=True)
class TrainingResult:
    """What a training run left behind."""

    run: RunDir
    records: tuple[UpdateMetrics, ...]  # the whole metrics log (resumed runs included)
    summary: RunSummary | None
    plots: tuple[Path, ...]
    end: RunEnd | None  # why the loop stopped (``RUN/finished.json``)


def run_training(
    config: RunConfig,
    run: RunDir,
    inputs: Inputs,
    *,
    resume: bool = False,
    console: Console | None = None,
    backend: Backend | None = None,
    engine_factory: EngineFactory = torch_engine,
    on_update: Callable[[UpdateMetrics], None] | None = None,
) -> TrainingResult:
    """Run (or resume) the RL loop of ``config`` in ``run`` from ``inputs`` until
    ``run.updates`` (or an early stop); returns the metrics, summary and plots."""
    console = console or Console(stderr=True)
    record_inputs(run, config, inputs, resume=resume, console=console)  # refuses a changed deck
    if resume:  # in progress again until its loop stops
        clear_run_end(run)

    async def main() -> None:
        async with open_components(
            config, run, inputs, resume=resume, backend=backend, engine_factory=engine_factory
        ) as parts:
            start = parts.trainer.steps
            sink = TensorBoardSink(run.root / "tensorboard", config.metrics.tensorboard)
            with LiveDisplay(
                config.run.updates, enabled=config.metrics.live, console=console, start=start
            ) as live:

                def seen(record: UpdateMetrics) -> None:
                    live.update(record)
                    sink.write(record)
                    if on_update is not None:
                        on_update(record)

                try:
                    await RLLoop(parts, seen).run()
                finally:
                    sink.close()

    asyncio.run(main())
    records = tuple(MetricsLog(run.metrics).read())
    plots: tuple[Path, ...] = ()
    if records and config.metrics.plots:
        plots = tuple(plot_run(records, run.plots))
    end = read_run_end(run)
    summary = judged_summary(records, run, config, end) if records else None
    return TrainingResult(run, records, summary, plots, end)
