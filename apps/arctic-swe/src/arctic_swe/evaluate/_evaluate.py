"""Policy-level evaluation: sampled success of one or more policies on a deck split.

The stress test's curves are training-side figures — the batch reward falls as mastered tasks
retire, the eviction-adjusted reward rises as they do (a retired task counts 1.0 whatever the
policy later does; Arctic-SWE §3.1 and "Scale Findings"). The question a user asks of a run is the
plain one: does the trained policy solve more of the pool than the warm start? This module
answers it the way the rollouts are generated in training — every task of the split ``samples``
times at temperature 1 through the real engine, harness and sandboxes, graded with the gated
reward — and reports the success rate with a Wilson 95 % interval, so two policies can be told
apart from noise.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import IM_END, load_tokenizer, special_id
from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.harness import TINY_HARNESS, EngineSampler, HarnessConfig, Trajectory, run_rollouts
from arctic_swe.model import load_policy
from arctic_swe.trainer import policy_dir
from swe_sandbox import Backend, NamespaceBackend, SandboxPool, TaskSpec


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95 % for ``z = 1.96``).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0 or ``n``
    successes, which small pools hit often. ``n = 0`` gives the uninformative ``(0, 1)``.
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 or n successes the bound is exactly 0 or 1; say so rather than trust the rounding.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class PolicyEvaluation:
    """What one policy did on a split: ``samples`` rollouts of each of ``tasks`` tasks."""

    label: str
    path: Path
    split: str
    tasks: int
    samples: int
    solved: int
    rollouts: int
    terminations: dict[str, int]
    per_task: dict[str, float] = field(repr=False)  # task id -> share of its rollouts solved

    @property
    def rate(self) -> float:
        """Share of rollouts solved (gated reward 1)."""
        return self.solved / self.rollouts if self.rollouts else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson 95 % interval of :attr:`rate`."""
        return wilson_interval(self.solved, self.rollouts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the ``--json`` output of ``arctic-swe evaluate``)."""
        low, high = self.interval
        return {
            "policy": self.label,
            "path": str(self.path),
            "split": self.split,
            "tasks": self.tasks,
            "samples": self.samples,
            "rollouts": self.rollouts,
            "solved": self.solved,
            "rate": self.rate,
            "ci95": [low, high],
            "terminations": dict(self.terminations),
            "per_task": dict(self.per_task),
        }


def tally_evaluation(
    label: str, path: Path, split: str, samples: int, trajectories: Sequence[Trajectory]
) -> PolicyEvaluation:
    """Fold finished rollouts into a :class:`PolicyEvaluation`."""
    by_task: dict[str, list[bool]] = {}
    for trajectory in trajectories:
        by_task.setdefault(trajectory.task_id, []).append(trajectory.solved)
    return PolicyEvaluation(
        label=label,
        path=path,
        split=split,
        tasks=len(by_task),
        samples=samples,
        solved=sum(t.solved for t in trajectories),
        rollouts=len(trajectories),
        terminations=dict(Counter(t.termination for t in trajectories)),
        per_task={task: sum(wins) / len(wins) for task, wins in by_task.items()},
    )


async def sample_rollouts(
    engine: TorchEngine,
    tasks: Sequence[TaskSpec],
    tokenizer: PreTrainedTokenizerFast,
    *,
    workers: int,
    harness: HarnessConfig = TINY_HARNESS,
    backend: Backend | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """One rollout per entry of ``tasks`` on ``engine`` (closed afterwards), ``workers``
    sandboxes at once; ``on_done`` sees each trajectory as it finishes."""
    try:
        async with SandboxPool(backend or NamespaceBackend(), max_concurrency=workers) as pool:
            return await run_rollouts(
                list(tasks),
                lambda index, _: EngineSampler(engine, tokenizer, index),
                pool,
                tokenizer,
                harness,
                on_done=on_done,
            )
    finally:
        await engine.close()


def run_pool_size(policies: Sequence[str | Path]) -> int | None:
    """The stress-test pool size (``deck.pool_size``) of the first run directory among
    ``policies``, or ``None`` when none is a run directory.

    A run trains on the first ``pool_size`` tasks of the deck's pool split; evaluating a run
    against its warm start on those tasks answers "did training help where it trained" (the
    rest of the split is the untrained remainder). Raises
    :class:`arctic_swe.config.RunConfigError` for a run whose ``config.toml`` is broken.
    """
    from arctic_swe.config import RunDir, load_run_config

    for policy in policies:
        run = RunDir(Path(policy))
        if run.config.is_file() and run.checkpoints.is_dir():
            return load_run_config(run).deck.pool_size
    return None


def policy_engine(
    policy: str | Path, rollouts: int, *, workers: int, seed: int
) -> tuple[Path, PreTrainedTokenizerFast, TorchEngine]:
    """Load ``policy`` (policy, checkpoint or run directory) and its tokenizer into a
    :class:`TorchEngine` sized for ``rollouts`` rollouts run ``workers`` at a time.

    A rollout generates only while it holds one of the ``workers`` sandboxes, so more cache
    slots than ``min(rollouts, workers)`` would only be allocated (and grown) for nothing.
    """
    directory = policy_dir(policy)
    tokenizer = load_tokenizer(directory)
    model = load_policy(directory)
    stop = special_id(tokenizer, IM_END)
    capacity = max(1, min(rollouts, workers))
    engine = TorchEngine(model, EngineConfig(capacity=capacity, seed=seed, stop_token_ids=(stop,)))
    return directory, tokenizer, engine


def evaluate_policy(
    policy: str | Path,
    tasks: Sequence[TaskSpec],
    *,
    split: str = "pool",
    samples: int = 4,
    seed: int = 0,
    workers: int = 4,
    backend: Backend | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
) -> PolicyEvaluation:
    """Sample every task of ``tasks`` ``samples`` times with ``policy`` (a policy directory, a
    checkpoint, or a run directory: its latest checkpoint) and tally the gated successes.

    ``seed`` fixes the engine's sampling streams, so two policies evaluated with the same seed
    see the same random numbers (their trajectories still diverge once their tokens differ).
    Raises :class:`ValueError` for ``samples < 1`` or no tasks; the loaders' typed errors
    (tokenizer, checkpoint, resume) for a directory that holds no policy.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if not tasks:
        raise ValueError("no tasks to evaluate on")
    jobs = [task for task in tasks for _ in range(samples)]
    directory, tokenizer, engine = policy_engine(policy, len(jobs), workers=workers, seed=seed)
    trajectories = asyncio.run(
        sample_rollouts(engine, jobs, tokenizer, workers=workers, backend=backend, on_done=on_done)
    )
    return tally_evaluation(str(policy), directory, split, samples, trajectories)
