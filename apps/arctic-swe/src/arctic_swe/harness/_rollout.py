"""Many episodes at once: one engine, a sandbox pool, concurrent rollouts (ARCHITECTURE.md §4).

Each rollout is an asyncio task; the engine batches whatever turns are pending into one decode
step (continuous batching), and the pool bounds how many sandboxes run at once, so generation of
one rollout overlaps tool execution and grading of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from transformers import PreTrainedTokenizerFast

from arctic_swe.harness._config import HarnessConfig
from arctic_swe.harness._episode import run_episode
from arctic_swe.harness._sampler import TurnSampler
from arctic_swe.harness._trajectory import Trajectory
from swe_sandbox import SandboxPool, TaskSpec


async def run_rollouts(
    tasks: Sequence[TaskSpec],
    make_sampler: Callable[[int, TaskSpec], TurnSampler],
    pool: SandboxPool,
    tokenizer: PreTrainedTokenizerFast,
    config: HarnessConfig | None = None,
    *,
    grade: bool = True,
    on_done: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Run one episode per task concurrently; results in task order.

    ``make_sampler(index, task)`` gives each rollout its sampler (an :class:`EngineSampler`
    sharing one engine, or the expert's script); ``on_done`` is called as each finishes.
    """

    async def one(index: int, task: TaskSpec) -> Trajectory:
        async with pool.sandbox(task) as sandbox:
            sampler = make_sampler(index, task)
            trajectory = await run_episode(task, sampler, sandbox, tokenizer, config, grade=grade)
        if on_done is not None:
            on_done(trajectory)
        return trajectory

    return list(await asyncio.gather(*(one(i, task) for i, task in enumerate(tasks))))
