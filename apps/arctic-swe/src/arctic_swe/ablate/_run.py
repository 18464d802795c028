"""Run an ablation: every variant in turn, each as a normal ``overfit`` run (``run_training``),
from the same deck, warm start, seed and number of updates.

Sequential on purpose: the tiny stress test already fills the 2 cores it was sized for, and
variants that share cores would not share a time budget. A finished variant is skipped, an
interrupted one resumed from its last checkpoint (``run_training(..., resume=True)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rich.console import Console

from arctic_swe.ablate._plan import AblationPlan, VariantState
from arctic_swe.config import RunConfig, RunDir, prepare_run_dir
from arctic_swe.metrics import MetricsLog, UpdateMetrics
from arctic_swe.orchestrator import Inputs, TrainingResult, run_training


class Runner(Protocol):
    """``run_training``'s signature, as far as the ablation calls it."""

    def __call__(
        self,
        config: RunConfig,
        run: RunDir,
        inputs: Inputs,
        *,
        resume: bool = ...,
        console: Console | None = ...,
        on_update: Callable[[UpdateMetrics], None] | None = ...,
    ) -> TrainingResult: ...


@dataclass(frozen=True)
class VariantEvent:
    """What the progress display hears: a variant starting (``record`` None) or an update."""

    variant: str
    state: VariantState
    record: UpdateMetrics | None = None


def run_ablation(
    plan: AblationPlan,
    inputs: Inputs,
    *,
    console: Console,
    on_event: Callable[[VariantEvent], None] = lambda event: None,
    runner: Runner = run_training,
) -> dict[str, list[UpdateMetrics]]:
    """Run every variant of ``plan`` not yet finished; return each variant's metrics.

    ``plan`` must come from :func:`open_plan` (its directory and manifest checked).
    """
    for variant, config in plan.configs.items():
        state = plan.state(variant)
        on_event(VariantEvent(variant, state))
        if state is VariantState.DONE:
            continue
        resume = state is VariantState.PARTIAL
        run = prepare_run_dir(plan.run_dir(variant).root, config, resume=resume)
        runner(
            config,
            run,
            inputs,
            resume=resume,
            console=console,
            on_update=_relay(variant, state, on_event),
        )
    return {v: MetricsLog(plan.run_dir(v).metrics).read() for v in plan.configs}


def _relay(
    variant: str, state: VariantState, on_event: Callable[[VariantEvent], None]
) -> Callable[[UpdateMetrics], None]:
    """``run_training``'s per-update callback, as this variant's events."""

    def seen(record: UpdateMetrics) -> None:
        on_event(VariantEvent(variant, state, record))

    return seen
