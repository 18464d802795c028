"""One group = ``n`` rollouts of one task on one leased engine (ARCHITECTURE.md §4 steps 2-5).

The router leases the group onto the least-loaded engine (all rollouts share its prefix cache);
each rollout takes a sandbox from the pool and runs the harness; every turn goes through the
lease so the router records the policy version of each token and pauses turns during a refresh.

Failure policy: a rollout whose sandbox dies (any ``SandboxError``) is dropped and
counted, the others continue; if the engine fails (``RetryableError`` from the router: engine
down or drained — a crashed or unanswering engine server included) the whole group is re-leased
onto a live engine and rerun, up to ``max_retries`` times. Its rollouts count as *lost* each time
their engine fails and as *released* each time they are re-leased.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from transformers import PreTrainedTokenizerFast

from arctic_swe.engine import derive_seed
from arctic_swe.harness import HarnessConfig, SampledTurn, Trajectory, run_episode
from load_router import GenerateRequest, GroupRecord, Lease, LeaseState, RetryableError, Router
from swe_sandbox import SandboxError, SandboxPool, TaskSpec

#: Turns per rollout the per-turn seed scheme keeps apart (far above any turn budget here).
_TURN_STRIDE = 1 << 16


class LeaseSampler:
    """The harness's ``TurnSampler`` over a router lease: every turn is one ``lease.generate``
    (the engine stops at its configured ``<|im_end|>``).

    With a ``group_seed``, turn ``t`` of rollout ``i`` samples with the seed derived from
    ``(group_seed, i, t)``: the same group relaunched (after an engine failure, or after a
    resume) draws the same random numbers on whichever engine it lands.
    """

    def __init__(
        self, lease: Lease, rollout_index: int, stop_id: int, group_seed: int | None = None
    ) -> None:
        self.lease = lease
        self.rollout_index = rollout_index
        self.stop_id = stop_id
        self.group_seed = group_seed
        self.turns = 0

    async def sample(self, prompt_ids: Sequence[int], max_new_tokens: int) -> SampledTurn:
        prompt: Any = tuple(prompt_ids)  # attrs' tuple converter confuses mypy's generics
        seed = None
        if self.group_seed is not None:
            seed = derive_seed(self.group_seed, self.rollout_index * _TURN_STRIDE + self.turns)
        self.turns += 1
        result = await self.lease.generate(
            GenerateRequest(
                rollout_index=self.rollout_index,
                prompt_ids=prompt,
                max_new_tokens=max_new_tokens,
                seed=seed,
            )
        )
        ids = tuple(result.token_ids)
        finish = "stop" if ids and ids[-1] == self.stop_id else "max_tokens"
        versions = tuple(result.token_versions)  # per token: a refresh may land mid-turn
        return SampledTurn(ids, tuple(result.logprobs), versions, finish)


@dataclass(frozen=True)
class GroupOutcome:
    """A finished group: its surviving trajectories and what happened on the way."""

    task_id: str
    probe: bool  # a replay probe of a retired task (never trained on)
    trajectories: tuple[Trajectory, ...] = field(repr=False)
    record: GroupRecord | None  # token versions for the off-policy screen (None: nothing ran)
    dropped_rollouts: int  # rollouts lost to sandbox failures
    retries: int  # re-leases after engine failures
    seconds: float
    error: str | None = None  # set when the group could not be completed at all
    seed: int | None = None  # the job's group seed (orders a batch independently of timing)
    engine_id: str | None = None  # the engine of the lease the group finished on
    lost_rollouts: int = 0  # rollouts in flight on an engine when it failed (work lost)
    released_rollouts: int = 0  # of those, re-leased onto a live engine and rerun

    @property
    def successes(self) -> int:
        return sum(t.solved for t in self.trajectories)


@dataclass(frozen=True)
class GroupJob:
    """What to run: ``n`` rollouts of ``task``; ``seed`` fixes their sampling streams (the loop
    derives it from the run seed and the launch number, and checkpoints it while in flight)."""

    task: TaskSpec
    n: int
    probe: bool = False
    seed: int | None = None


async def run_group(
    job: GroupJob,
    router: Router,
    pool: SandboxPool,
    tokenizer: PreTrainedTokenizerFast,
    harness: HarnessConfig,
    stop_id: int,
    *,
    max_retries: int,
) -> GroupOutcome:
    """Run ``job`` to completion (or give up after ``max_retries`` engine failures)."""
    began = time.monotonic()
    retries = lost = 0
    while True:
        lease = await router.acquire(job.task.instance_id, job.n)
        try:
            results = await asyncio.gather(
                *(
                    _rollout(
                        job.task,
                        LeaseSampler(lease, i, stop_id, job.seed),
                        pool,
                        tokenizer,
                        harness,
                    )
                    for i in range(job.n)
                ),
                return_exceptions=True,
            )
        except BaseException:
            lease.release(LeaseState.FAILED) if lease.state is LeaseState.ACTIVE else None
            raise
        engine_failed = any(isinstance(r, RetryableError) for r in results)
        others = [r for r in results if isinstance(r, BaseException) and not _is_lost(r)]
        if lease.state is LeaseState.ACTIVE:
            lease.release(LeaseState.FAILED if engine_failed else LeaseState.COMPLETED)
        if others and not engine_failed:
            raise others[0]
        if engine_failed:
            retries += 1
            lost += job.n  # the group reruns whole: every rollout's work so far is gone
            if retries > max_retries:
                return GroupOutcome(
                    job.task.instance_id,
                    job.probe,
                    (),
                    None,
                    0,
                    retries,
                    time.monotonic() - began,
                    error="engine failed on every retry",
                    seed=job.seed,
                    engine_id=lease.engine_id,
                    lost_rollouts=lost,
                    released_rollouts=lost - job.n,
                )
            continue
        trajectories = tuple(r for r in results if isinstance(r, Trajectory))
        return GroupOutcome(
            task_id=job.task.instance_id,
            probe=job.probe,
            trajectories=trajectories,
            record=lease.record(),
            dropped_rollouts=job.n - len(trajectories),
            retries=retries,
            seconds=time.monotonic() - began,
            seed=job.seed,
            engine_id=lease.engine_id,
            lost_rollouts=lost,
            released_rollouts=lost,
        )


def _is_lost(error: BaseException) -> bool:
    """Errors that lose one rollout (or, retryable, the group) but not the run.

    ``OSError`` covers tool calls the harness does not turn into observations yet (the sandbox
    raises ``FileNotFoundError`` for an edit of a missing file): the policy chose that call, so
    the rollout is dropped and counted rather than the whole run stopped.
    """
    return isinstance(error, (SandboxError, RetryableError, OSError))


async def _rollout(
    task: TaskSpec,
    sampler: LeaseSampler,
    pool: SandboxPool,
    tokenizer: PreTrainedTokenizerFast,
    harness: HarnessConfig,
) -> Trajectory:
    async with pool.sandbox(task) as sandbox:
        return await run_episode(task, sampler, sandbox, tokenizer, harness)
