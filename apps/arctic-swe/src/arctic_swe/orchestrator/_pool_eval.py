"""Measured pool success during a run (Arctic-SWE §3.1: does the pool reward climb *and hold*).

The deck's eviction-adjusted reward imputes 1.0 to every retired task forever and leaves out
tasks never sampled, so it cannot show a collapse on retired tasks. Every
``run.pool_eval_every`` updates (and at the end of the run) this samples **every** pool task,
retired ones included, ``run.pool_eval_samples`` times under one fixed policy version — the
weights that update just published — with seeds fixed by (``run.seed``, task, sample, turn), the
same at every evaluation. It is ``arctic-swe evaluate``'s own code
(:func:`arctic_swe.evaluate.evaluate_policy_async`) on its own in-process torch engine and its
own sandbox pool, run as a background asyncio task: training never waits for it. Evaluations
run one at a time, in launch order.

Bookkeeping: the published file is hard-linked to ``RUN/pool_eval/policy-vN.safetensors`` (the
loop deletes superseded weight files), the result amends the line of the update that published
it (``pool_success`` and its Wilson interval, :meth:`MetricsLog.amend`) and is written whole to
``RUN/pool_eval/step-N.json``; then the link is removed. A checkpoint lists the evaluations not
yet harvested; ``--resume`` redoes them from their links (same weights, same seeds: the same
number), so a crash never loses or duplicates a point.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arctic_swe._atomic import atomic_write_text
from arctic_swe.config import RunConfig, RunDir
from arctic_swe.evaluate import PolicyEvaluation, evaluate_policy_async
from arctic_swe.harness import HarnessConfig
from arctic_swe.metrics import MetricsLog
from arctic_swe.weights import weights_file
from swe_sandbox import Backend, TaskSpec

#: Under the run directory: weight links of pending evaluations and every result.
POOL_EVAL_DIR = "pool_eval"


@dataclass(frozen=True)
class PoolEvalJob:
    """One evaluation: the weights update ``step`` published as policy ``version``."""

    step: int
    version: int
    weights: Path


@dataclass
class _Running:
    job: PoolEvalJob
    task: asyncio.Task[tuple[PolicyEvaluation, float]]


class PoolEvaluator:
    """Launches, runs (in the background, one at a time) and records pool evaluations."""

    def __init__(
        self,
        config: RunConfig,
        run: RunDir,
        tasks: Sequence[TaskSpec],
        policy_dir: Path,
        harness: HarnessConfig,
        log: MetricsLog,
        backend: Backend | None = None,
    ) -> None:
        self.every = config.run.pool_eval_every
        self.samples = config.run.pool_eval_samples
        self.workers = config.run.pool_eval_workers
        self.seed = config.run.seed
        self.tasks = list(tasks)
        self.policy_dir = policy_dir
        self.harness = harness
        self.log = log
        self.backend = backend
        self.dir = run.root / POOL_EVAL_DIR
        self.running: list[_Running] = []
        self.last: PoolEvalJob | None = None  # the newest published weights
        self.launched: set[int] = set()  # steps evaluated or being evaluated
        self.missing: list[int] = []  # resumed evaluations whose weights were gone
        self._gate: asyncio.Lock | None = None

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def after_update(self, step: int, version: int, weights: Path) -> None:
        """Called once the line of update ``step`` is written: launch its evaluation if it is
        due, and record every evaluation that has finished meanwhile."""
        if not self.enabled:
            return
        self.last = PoolEvalJob(step, version, weights)
        if step % self.every == 0:
            self.launch(self.last)
        self.harvest()

    def launch(self, job: PoolEvalJob) -> None:
        """Keep ``job``'s weights (a hard link) and start its evaluation behind the others."""
        self.dir.mkdir(parents=True, exist_ok=True)
        kept = self.dir / f"policy-v{job.version}.safetensors"
        if kept != job.weights:
            kept.unlink(missing_ok=True)  # a resumed run republishes the same version
            source = weights_file(job.weights)  # a published version is a directory
            try:
                os.link(source, kept)
            except OSError:  # another filesystem (a remote trainer's directory)
                shutil.copyfile(source, kept)
        job = PoolEvalJob(job.step, job.version, kept)
        self.launched.add(job.step)
        task = asyncio.get_running_loop().create_task(self._evaluate(job))
        self.running.append(_Running(job, task))

    def resume(self, pending: Sequence[tuple[int, int]]) -> None:
        """Relaunch the evaluations a checkpoint listed as pending (their weight links)."""
        for step, version in pending:
            kept = self.dir / f"policy-v{version}.safetensors"
            if kept.is_file():
                self.launch(PoolEvalJob(step, version, kept))
            else:  # harvested after that checkpoint: its line already holds the result
                self.missing.append(step)

    def pending(self) -> list[list[int]]:
        """``[step, version]`` of every evaluation not yet recorded (for the checkpoint)."""
        return [[r.job.step, r.job.version] for r in self.running]

    def harvest(self) -> list[PoolEvalJob]:
        """Record every finished evaluation; re-raise the error of a failed one."""
        done = [r for r in self.running if r.task.done()]
        for item in done:
            self.running.remove(item)
            evaluation, seconds = item.task.result()
            self._record(item.job, evaluation, seconds)
        return [item.job for item in done]

    async def finish(self) -> None:
        """End of run: evaluate the final weights if the cadence skipped them, wait for every
        evaluation and record it (before the summary reads the log)."""
        if not self.enabled:
            return
        if self.last is not None and self.last.step not in self.launched:
            self.launch(self.last)
        await asyncio.gather(*(r.task for r in self.running), return_exceptions=True)
        self.harvest()

    async def cancel(self) -> None:
        """Stop every evaluation (the run failed; a resume redoes them)."""
        tasks = [r.task for r in self.running]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.running.clear()

    async def _evaluate(self, job: PoolEvalJob) -> tuple[PolicyEvaluation, float]:
        if self._gate is None:
            self._gate = asyncio.Lock()
        async with self._gate:  # one engine at a time; FIFO, so results come in launch order
            began = time.monotonic()
            result = await evaluate_policy_async(
                self.policy_dir,
                self.tasks,
                samples=self.samples,
                seed=self.seed,
                workers=self.workers,
                backend=self.backend,
                harness=self.harness,
                weights=job.weights,
                label=f"v{job.version}",
            )
            return result, time.monotonic() - began

    def _record(self, job: PoolEvalJob, evaluation: PolicyEvaluation, seconds: float) -> None:
        low, high = evaluation.interval
        self.log.amend(
            job.step,
            {
                "pool_success": evaluation.rate,
                "pool_success_low": low,
                "pool_success_high": high,
                "pool_eval_version": job.version,
                "pool_eval_step": job.step,
                "pool_eval_solved": evaluation.solved,
                "pool_eval_rollouts": evaluation.rollouts,
                "pool_eval_seconds": seconds,
            },
        )
        record = {"step": job.step, "version": job.version, "seconds": seconds,
                  "seed": self.seed, **evaluation.to_dict()}  # fmt: skip
        record["path"] = str(job.weights)
        out = self.dir / f"step-{job.step}.json"
        atomic_write_text(out, json.dumps(record, sort_keys=True, indent=1) + "\n")
        job.weights.unlink(missing_ok=True)  # only after the line holds the result
