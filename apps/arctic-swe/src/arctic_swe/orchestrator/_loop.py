"""The asynchronous RL loop (ARCHITECTURE.md §4; Arctic-SWE §3.3 "fully asynchronous").

``1 + run.lookahead_batches`` batches are always in flight (tiny default 2 ahead; 0 is the synchronous baseline): while the trainer takes step ``k`` on a worker thread, the
engines keep generating the groups of batch ``k+1`` on the event loop (tools and grading run in
the sandbox pool's threads). The trainer takes the first ``groups_per_update`` groups that
finish — whichever task they belong to — so slow groups carry over and age; the off-policy cap
(``PolicyClock.screen``) drops and counts groups older than ``max_off_policy`` versions.

The trainer is a :class:`arctic_swe.trainer.TrainerHandle`: the in-process trainer (its step
on a worker thread) or the FSDP2 trainer process over HTTP (its step an awaited request); the
loop cannot tell them apart, and in both the event loop keeps generating during the step.

After each optimizer step: the new weights are written once (safetensors) and every engine
refreshes through the router's protocol (pause admission, load, invalidate caches: a turn in
flight is re-prefilled, a parked sequence released; resume); the deck records the trained
groups (eviction), replay probes of retired tasks are launched (a probe that finds a task
forgotten puts it back in the pool), the metrics line is written, and a checkpoint is taken.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import PreTrainedTokenizerFast

from arctic_swe.config import EndReason, RunConfig, RunDir, RunEnd, write_run_end
from arctic_swe.engine import derive_seed
from arctic_swe.harness import HarnessConfig
from arctic_swe.metrics import MetricsLog, UpdateMetrics, trailing_zero_gradient, zero_gradient
from arctic_swe.orchestrator._batch import build_samples, tally, token_versions
from arctic_swe.orchestrator._groups import GroupJob, GroupOutcome, run_group
from arctic_swe.trainer import (
    LayerTypeKL,
    LoopState,
    StepStats,
    TrainerHandle,
    TrainSample,
    numerics_figures,
)
from arctic_swe.weights import run_weights
from deck_evictor import Deck
from load_router import EngineState, PolicyClock, Router, UpdateLagStats
from swe_sandbox import SandboxPool, TaskSpec

if TYPE_CHECKING:
    from arctic_swe.orchestrator._engines import EngineSet
    from arctic_swe.orchestrator._pool_eval import PoolEvaluator


@dataclass
class Components:
    """Everything the loop drives (built by :func:`arctic_swe.orchestrator.build_components`)."""

    config: RunConfig
    run: RunDir
    tasks: dict[str, TaskSpec]
    tokenizer: PreTrainedTokenizerFast
    stop_id: int
    harness: HarnessConfig
    trainer: TrainerHandle
    router: Router
    pool: SandboxPool
    deck: Deck
    clock: PolicyClock
    log: MetricsLog
    # in-flight training groups at the checkpoint, as (task id, group seed), and the launch
    # counter the group seeds are derived from (both restored by ``--resume``)
    resume_groups: list[tuple[str, int | None]] = field(default_factory=list)
    launched: int = 0
    engines: EngineSet | None = None  # the engines behind the router (and launched servers)
    # measured pool success (run.pool_eval_every) and the evaluations a checkpoint left pending
    pool_eval: PoolEvaluator | None = None
    resume_pool_evals: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Counters:
    stale: int = 0
    dropped_rollouts: int = 0
    requeued: int = 0
    lost_rollouts: int = 0
    released_rollouts: int = 0
    engine_groups: dict[str, int] = field(default_factory=dict)
    replay_probes: int = 0  # probes of retired tasks recorded this update
    reactivated: int = 0  # of those, probes that brought a forgotten task back


class RLLoop:
    """Runs updates until ``config.run.updates`` optimizer steps are taken or the deck has no
    active task left (then the last update is checkpointed too); either way ``RUN/finished.json``
    records why it stopped. ``on_update`` sees every metrics record as it is written."""

    def __init__(
        self, parts: Components, on_update: Callable[[UpdateMetrics], None] | None = None
    ) -> None:
        self.parts = parts
        self.on_update = on_update
        self.queue: asyncio.Queue[GroupOutcome] = asyncio.Queue()
        self.inflight: dict[asyncio.Task[GroupOutcome], GroupJob] = {}
        self.probing: set[str] = set()
        self.counters = _Counters()
        self.bugs: list[BaseException] = []
        self.published: Path | None = None  # the newest weights file
        # (version, metrics cursor) of the last update when it has no checkpoint yet
        self._unsaved: tuple[int, int] | None = None
        # updates in a row without a gradient, up to now (a resumed run continues its log's;
        # only counted when a stall limit is set)
        stall_limit = parts.config.run.stop_after_zero_gradient
        self.zero_streak = trailing_zero_gradient(parts.log.read()) if stall_limit else 0

    # ------------------------------------------------------------------ the loop
    async def run(self) -> list[UpdateMetrics]:
        parts, records = self.parts, []
        try:
            if parts.pool_eval is not None:
                # evaluations of updates the resume retrains are void; the warm start's is not
                parts.pool_eval.forget_after(parts.trainer.steps)
                parts.pool_eval.resume(parts.resume_pool_evals)
                parts.pool_eval.start()
            for task_id, seed in parts.resume_groups:
                n = parts.config.deck.rollouts_per_group
                self._launch(GroupJob(parts.tasks[task_id], n, seed=seed))
            batches = 1 + parts.config.run.lookahead_batches
            while self._training_groups_inflight() < batches * parts.config.deck.groups_per_update:
                if not self._launch_batch():
                    break
            while parts.trainer.steps < parts.config.run.updates and not self._stalled():
                record = await self._update()
                if record is None:
                    break
                records.append(record)
                self.zero_streak = self.zero_streak + 1 if zero_gradient(record) else 0
            # The look-ahead batch will never train: stop it before the last evaluations run.
            await self._cancel_inflight()
            if self._unsaved is not None:
                # Stopped early (deck exhausted): the final weights are what the last pool
                # evaluation measured and what `arctic-swe evaluate RUN` must load.
                await self._checkpoint(*self._unsaved)
            if parts.pool_eval is not None:
                await parts.pool_eval.finish()
            write_run_end(parts.run, self._end())
        finally:
            await self._cancel_inflight()
            if parts.pool_eval is not None:
                await parts.pool_eval.cancel()
        return records

    async def _update(self) -> UpdateMetrics | None:
        parts, cfg = self.parts, self.parts.config
        began = time.monotonic()
        self.counters = _Counters()
        kept = await self._collect(cfg.deck.groups_per_update)
        waited = time.monotonic() - began
        if not kept:
            return None
        # Completion order is timing; the batch order (hence the float sums of the step) is not.
        kept.sort(key=lambda group: (group.task_id, group.seed or 0))
        samples = build_samples(kept, cfg.trainer.invalid_reward)
        step_began = time.monotonic()
        # Awaited, never blocking: the groups in flight keep generating batch k+1 meanwhile.
        stats = await parts.trainer.step(
            samples, versions=token_versions(kept), version=parts.clock.version + 1
        )
        trained = time.monotonic() - step_began
        version = parts.clock.advance()  # closes this update's lag statistics
        lag = parts.clock.history[-1]
        refresh_seconds = await self._publish(version)
        audit = await self._layer_audit(samples, stats.step)
        for group in kept:
            parts.deck.record(group.task_id, group.successes, len(group.trajectories))
        self._launch_batch()
        record = self._record(stats, kept, lag, waited, trained, refresh_seconds, began)
        record = replace(
            record,
            trainer_world_size=parts.trainer.world_size,
            step_started=step_began,
            **numerics_figures(stats.omega, audit),
        )
        cursor = parts.log.append(record)
        if parts.pool_eval is not None and self.published is not None:
            parts.pool_eval.after_update(stats.step, version, self.published)
        self._unsaved = (version, cursor)
        if parts.trainer.steps % cfg.run.checkpoint_every == 0 or (
            parts.trainer.steps == cfg.run.updates
        ):
            await self._checkpoint(version, cursor)
            self._unsaved = None
        if self.on_update is not None:
            self.on_update(record)
        return record

    async def _collect(self, wanted: int) -> list[GroupOutcome]:
        """Wait for ``wanted`` fresh, non-empty training groups (probes are recorded aside)."""
        parts = self.parts
        kept: list[GroupOutcome] = []
        while len(kept) < wanted:
            if self.queue.empty() and not self.inflight:
                break
            outcome = await self.queue.get()
            if self.bugs:
                raise self.bugs[0]
            self._count(outcome)
            if outcome.probe:
                self._record_probe(outcome)
                continue
            if outcome.record is None or len(outcome.trajectories) < 1:
                # Its rollouts were already counted as lost (engine down) or dropped (sandbox).
                if self._training_groups_inflight() < parts.config.deck.groups_per_update:
                    self._launch_batch()
                continue
            screened = parts.clock.screen([outcome.record])
            if screened.dropped:
                self.counters.stale += 1
                if self._training_groups_inflight() < parts.config.deck.groups_per_update:
                    self._launch_batch()
                continue
            kept.append(outcome)
        return kept

    def _record_probe(self, outcome: GroupOutcome) -> None:
        """Replay feedback (Arctic-SWE §3.3, "Scale Findings"): the probe's score goes to the
        deck, which puts the task back in the pool when it was forgotten
        (``deck.reactivate_below``); if the deck had run dry, training resumes on it."""
        parts = self.parts
        self.probing.discard(outcome.task_id)
        if not outcome.trajectories:
            return
        was_dry = parts.deck.exhausted  # its batches launched no training group
        result = parts.deck.record_replay(
            outcome.task_id, outcome.successes, len(outcome.trajectories)
        )
        self.counters.replay_probes += 1
        if result.reactivated:
            self.counters.reactivated += 1
            if was_dry:
                self._launch_batch()

    def _count(self, outcome: GroupOutcome) -> None:
        counters = self.counters
        counters.dropped_rollouts += outcome.dropped_rollouts
        counters.requeued += outcome.retries
        counters.lost_rollouts += outcome.lost_rollouts
        counters.released_rollouts += outcome.released_rollouts
        if outcome.engine_id is not None and outcome.error is None:
            engine = outcome.engine_id
            counters.engine_groups[engine] = counters.engine_groups.get(engine, 0) + 1

    # ------------------------------------------------------------------ launching
    def _launch_batch(self) -> bool:
        """Sample the next batch of tasks (deck clock +1) and launch its groups and any replay
        probes that are due; ``False`` when the deck has no active task left."""
        parts, cfg = self.parts, self.parts.config
        parts.deck.advance()
        draw = parts.deck.sample(cfg.deck.groups_per_update)
        for task_id in draw.task_ids:
            self._launch(GroupJob(parts.tasks[task_id], cfg.deck.rollouts_per_group))
        probes = parts.deck.replay_schedule() if cfg.deck.replay_size > 0 else ()
        for task_id in probes:
            if task_id not in self.probing:
                self.probing.add(task_id)
                job = GroupJob(parts.tasks[task_id], cfg.deck.rollouts_per_group, probe=True)
                self._launch(job)
        return bool(draw.task_ids)

    def _launch(self, job: GroupJob) -> None:
        parts = self.parts
        if job.seed is None:  # a new group: its seed follows from the run seed and launch count
            job = replace(job, seed=derive_seed(parts.config.run.seed, parts.launched))
            parts.launched += 1
        coroutine = run_group(
            job,
            parts.router,
            parts.pool,
            parts.tokenizer,
            parts.harness,
            parts.stop_id,
            max_retries=parts.config.run.max_group_retries,
        )
        task = asyncio.get_running_loop().create_task(coroutine)
        self.inflight[task] = job
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[GroupOutcome]) -> None:
        job = self.inflight.pop(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:  # an unexpected bug: surface it in the trainer's wait
            outcome = GroupOutcome(
                job.task.instance_id, job.probe, (), None, job.n, 0, 0.0, error=repr(error)
            )
            self.bugs.append(error)
        else:
            outcome = task.result()
        self.queue.put_nowait(outcome)

    def _end(self) -> RunEnd:
        """Why the loop stopped: the update budget, a stall (``run.stop_after_zero_gradient``),
        or no training group left to collect (every pool task retired, or — unexpectedly —
        none could be run)."""
        parts = self.parts
        steps, updates = parts.trainer.steps, parts.config.run.updates
        if steps >= updates:
            reason = EndReason.UPDATES
        elif self._stalled():
            reason = EndReason.STALLED
        elif parts.deck.exhausted:
            reason = EndReason.DECK_EXHAUSTED
        else:
            reason = EndReason.NO_GROUPS
        return RunEnd(reason, steps, updates, len(parts.deck.retired), len(parts.deck))

    def _stalled(self) -> bool:
        """``run.stop_after_zero_gradient`` updates in a row had no gradient (0: never)."""
        limit = self.parts.config.run.stop_after_zero_gradient
        return limit > 0 and self.zero_streak >= limit

    def _training_groups_inflight(self) -> int:
        return sum(1 for job in self.inflight.values() if not job.probe)

    async def _cancel_inflight(self) -> None:
        tasks = list(self.inflight)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------------ after a step
    async def _publish(self, version: int) -> float:
        """Write the new weights once and refresh every engine through the router."""
        parts = self.parts
        began = time.monotonic()
        weights_dir = run_weights(parts.run.root)
        # in process: written here; remote: rank 0 already wrote it during the step
        path = await parts.trainer.publish(version, weights_dir)
        self.published = path
        engine = parts.config.engine
        await parts.router.refresh(
            str(path),
            version,
            invalidate_caches=engine.invalidate_caches,
            mode=engine.refresh_mode,
            refresh_timeout=parts.engines.refresh_timeout if parts.engines else None,
        )
        parts.trainer.prune_published(weights_dir, path)
        return time.monotonic() - began

    async def _layer_audit(self, samples: list[TrainSample], step: int) -> LayerTypeKL | None:
        """Mismatch KL by layer type on the batch's first rollout at updates 1, 1 + every, …
        (on a worker thread: the engines keep generating); None when not due or remote."""
        metrics = self.parts.config.metrics
        every = metrics.kl_by_layer_every
        if not every or (step - 1) % every or not samples:
            return None
        return await self.parts.trainer.layer_audit(samples[0], metrics.kl_by_layer_tokens)

    async def _checkpoint(self, version: int, cursor: int) -> None:
        parts = self.parts
        pending = [
            [job.task.instance_id, job.seed] for job in self.inflight.values() if not job.probe
        ]
        extras: dict[str, Any] = {"inflight_groups": pending, "launched": parts.launched}
        if parts.pool_eval is not None:
            extras["pool_eval_pending"] = parts.pool_eval.pending()
        await parts.trainer.checkpoint(
            parts.run.checkpoints,
            LoopState(parts.deck, version, cursor, extras),
            keep=parts.config.run.keep_checkpoints,
            tokenizer=parts.tokenizer,
        )

    def _record(
        self,
        stats: StepStats,
        kept: list[GroupOutcome],
        lag: UpdateLagStats,
        waited: float,
        trained: float,
        refresh_seconds: float,
        began: float,
    ) -> UpdateMetrics:
        parts = self.parts
        batch = tally(kept)
        adjusted = parts.deck.adjusted_reward()
        replay = parts.deck.replay_reward()
        wall = time.monotonic() - began
        return UpdateMetrics(
            step=stats.step,
            version=parts.clock.version,
            wall_seconds=wall,
            reward=batch.reward,
            solved_rate=batch.solved_rate,
            adjusted_reward=_finite(adjusted.value, batch.reward),
            replay_reward=_finite(replay.reward, -1.0),
            entropy=stats.entropy,
            mismatch_kl=stats.mismatch_kl,
            masked_frac=stats.masked_frac,
            loss=stats.loss,
            grad_norm=_finite(stats.grad_norm, 0.0),
            lag_mean=lag.mean_lag,
            lag_max=lag.max_lag,
            stale_dropped=self.counters.stale,
            dropped_rollouts=self.counters.dropped_rollouts,
            requeued_groups=self.counters.requeued,
            groups=len(kept),
            rollouts=batch.rollouts,
            trainable_tokens=stats.trainable_tokens,
            generated_tokens=batch.generated_tokens,
            wait_seconds=waited,
            train_seconds=trained,
            refresh_seconds=refresh_seconds,
            tokens_per_second=batch.generated_tokens / wall if wall > 0 else 0.0,
            generate_seconds=batch.generate_seconds,
            tool_seconds=batch.tool_seconds,
            grade_seconds=batch.grade_seconds,
            retired=len(parts.deck.retired),
            active_tasks=parts.deck.active_count,
            terminations=batch.terminations,
            per_task_reward=batch.per_task_reward,
            lost_rollouts=self.counters.lost_rollouts,
            released_rollouts=self.counters.released_rollouts,
            engines_up=sum(e.state is EngineState.UP for e in parts.router.snapshot().engines),
            engine_groups=dict(sorted(self.counters.engine_groups.items())),
            lag_token_mean=lag.mean_token_lag,  # per token: versions change inside turns
            replay_adjusted=_finite(adjusted.replay_adjusted, _finite(adjusted.value, -1.0)),
            replay_probes=self.counters.replay_probes,
            reactivated=self.counters.reactivated,
        )


def _finite(value: float, fallback: float) -> float:
    return value if math.isfinite(value) else fallback
