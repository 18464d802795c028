"""Measured pool success during a run (Arctic-SWE §3.1: does the pool reward climb *and hold*).

The deck's eviction-adjusted reward imputes 1.0 to every retired task forever and leaves out
tasks never sampled, so it cannot show a collapse on retired tasks. At the start (the warm
start, update 0), every ``run.pool_eval_every`` updates and at the end of the run this samples
**every** pool task, retired ones included, ``run.pool_eval_samples`` times under one fixed
policy version — the weights that update published — with seeds fixed by (``run.seed``, task,
sample, turn), the same at every evaluation (the ``pool`` streams), then every task of the
deck's held-out split ``run.heldout_eval_samples`` times from the ``heldout`` streams (tasks
never trained on: memorising the pool and learning the skill are told apart). It is
``arctic-swe evaluate``'s own code
(:func:`arctic_swe.evaluate.evaluate_policy_async`) on its own in-process torch engine and its
own sandbox pool, run as a background asyncio task: training never waits for it. Evaluations
run one at a time, in launch order.

Bookkeeping: the published file is hard-linked to ``RUN/pool_eval/policy-vN.safetensors`` (the
loop deletes superseded weight files; update 0 reads the warm start itself), the result amends
the line of the update that published it (``pool_success`` and its Wilson interval,
:meth:`MetricsLog.amend`; update 0 has no line), every rollout's outcome is appended to
``RUN/evaluations.jsonl`` (:class:`arctic_swe.metrics.EvalRecord`, one per split) and the whole
result is written to ``RUN/pool_eval/step-N.json``; then the link is removed. A checkpoint lists the evaluations not
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
from arctic_swe.evaluate import (
    HELDOUT_STREAM,
    POOL_STREAM,
    PolicyEvaluation,
    evaluate_policy_async,
)
from arctic_swe.harness import HarnessConfig
from arctic_swe.metrics import (
    HELDOUT_SPLIT,
    POOL_SPLIT,
    EvalRecord,
    EvaluationLog,
    MetricsLog,
)
from arctic_swe.weights import weights_file
from swe_sandbox import Backend, TaskSpec

#: Under the run directory: weight links of pending evaluations and every result.
POOL_EVAL_DIR = "pool_eval"


@dataclass(frozen=True)
class PoolEvalJob:
    """One evaluation: the weights update ``step`` published as policy ``version``
    (``weights`` None: the warm start in the policy directory, update 0)."""

    step: int
    version: int
    weights: Path | None


@dataclass(frozen=True)
class _Result:
    """What one job measured: the pool, the held-out split (None: none evaluated), seconds."""

    pool: PolicyEvaluation
    heldout: PolicyEvaluation | None
    seconds: float


@dataclass
class _Running:
    job: PoolEvalJob
    task: asyncio.Task[_Result]


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
        heldout: Sequence[TaskSpec] = (),
    ) -> None:
        self.every = config.run.pool_eval_every
        self.samples = config.run.pool_eval_samples
        self.heldout_samples = config.run.heldout_eval_samples
        self.workers = config.run.pool_eval_workers
        self.seed = config.run.seed
        self.tasks = list(tasks)
        self.heldout = list(heldout) if self.heldout_samples > 0 else []
        self.evaluations = EvaluationLog(run.evaluations)
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

    def start(self) -> None:
        """Evaluate the warm start (update 0) unless it is recorded or already running: the
        paired reference every later evaluation of the run is compared with."""
        if not self.enabled or 0 in self.launched:
            return
        recorded = {(r.split, r.step) for r in self.evaluations.read()}
        if (POOL_SPLIT, 0) not in recorded:
            self.launch(PoolEvalJob(0, 0, None))

    def forget_after(self, step: int) -> None:
        """A resume retrains the updates after ``step``: drop their recorded evaluations."""
        if self.evaluations.path.exists():
            self.evaluations.drop_after(step)

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
        if job.weights is None:  # the warm start: nothing to keep, the policy directory holds it
            self._start_job(job)
            return
        if kept != job.weights:
            kept.unlink(missing_ok=True)  # a resumed run republishes the same version
            source = weights_file(job.weights)  # a published version is a directory
            try:
                os.link(source, kept)
            except OSError:  # another filesystem (a remote trainer's directory)
                shutil.copyfile(source, kept)
        self._start_job(PoolEvalJob(job.step, job.version, kept))

    def _start_job(self, job: PoolEvalJob) -> None:
        self.launched.add(job.step)
        task = asyncio.get_running_loop().create_task(self._evaluate(job))
        self.running.append(_Running(job, task))

    def resume(self, pending: Sequence[tuple[int, int]]) -> None:
        """Relaunch the evaluations a checkpoint listed as pending (their weight links)."""
        for step, version in pending:
            kept = self.dir / f"policy-v{version}.safetensors"
            if step == 0:
                self.launch(PoolEvalJob(0, 0, None))
            elif kept.is_file():
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
            self._record(item.job, item.task.result())
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

    async def _evaluate(self, job: PoolEvalJob) -> _Result:
        if self._gate is None:
            self._gate = asyncio.Lock()
        async with self._gate:  # one engine at a time; FIFO, so results come in launch order
            began = time.monotonic()
            pool = await self._split(job, self.tasks, POOL_SPLIT, self.samples, POOL_STREAM)
            heldout = None
            if self.heldout:
                heldout = await self._split(
                    job, self.heldout, HELDOUT_SPLIT, self.heldout_samples, HELDOUT_STREAM
                )
            return _Result(pool, heldout, time.monotonic() - began)

    async def _split(
        self, job: PoolEvalJob, tasks: Sequence[TaskSpec], split: str, samples: int, stream: str
    ) -> PolicyEvaluation:
        return await evaluate_policy_async(
            self.policy_dir,
            tasks,
            split=split,
            samples=samples,
            seed=self.seed,
            workers=self.workers,
            backend=self.backend,
            harness=self.harness,
            weights=job.weights,
            label=f"v{job.version}",
            stream=stream,
        )

    def _eval_record(
        self, job: PoolEvalJob, evaluation: PolicyEvaluation, seconds: float
    ) -> EvalRecord:
        return EvalRecord(
            split=evaluation.split,
            step=job.step,
            version=job.version,
            stream=evaluation.stream,
            seed=self.seed,
            outcomes=evaluation.outcomes,
            seconds=seconds,
            digest=evaluation.digest,
            extra={"terminations": dict(evaluation.terminations)},
        )

    def _record(self, job: PoolEvalJob, result: _Result) -> None:
        evaluation, seconds = result.pool, result.seconds
        for split in (result.pool, result.heldout):
            if split is not None:
                self.evaluations.append(self._eval_record(job, split, seconds))
        if job.step > 0:  # update 0 (the warm start) has no metrics line
            self._amend(job, evaluation, seconds)
        record = {"step": job.step, "version": job.version, "seconds": seconds,
                  "seed": self.seed, **evaluation.to_dict()}  # fmt: skip
        record["path"] = str(job.weights or self.policy_dir)
        if result.heldout is not None:
            record["heldout"] = result.heldout.to_dict()
        out = self.dir / f"step-{job.step}.json"
        atomic_write_text(out, json.dumps(record, sort_keys=True, indent=1) + "\n")
        if job.weights is not None:
            job.weights.unlink(missing_ok=True)  # only after the line holds the result

    def _amend(self, job: PoolEvalJob, evaluation: PolicyEvaluation, seconds: float) -> None:
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
