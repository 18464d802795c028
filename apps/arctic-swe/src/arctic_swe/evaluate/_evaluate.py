"""Policy-level evaluation: sampled success of one or more policies on a deck split.

The stress test's curves are training-side figures — the batch reward falls as mastered tasks
retire, the eviction-adjusted reward rises as they do (a retired task counts 1.0 whatever the
policy later does; Arctic-SWE §3.1 and "Scale Findings"). The question a user asks of a run is the
plain one: does the trained policy solve more of the pool than the warm start? This module
answers it the way the rollouts are generated in training — every task of the split ``samples``
times at temperature 1 through the real engine, harness and sandboxes, graded with the gated
reward — and reports the success rate with a Wilson 95 % interval, so two policies can be told
apart from noise. Every turn samples from a stream fixed by (seed, task, sample, turn)
(:mod:`arctic_swe.evaluate._seeds`), so evaluating the same weights twice gives the same
rollouts and the same number; :attr:`PolicyEvaluation.digest` fingerprints them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import PreTrainedTokenizerFast

from arctic_swe._wilson import SolvedShare
from arctic_swe.chat import IM_END, load_tokenizer, special_id
from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.evaluate._seeds import CHECK_STREAM, SeededSampler, rollout_seeds, stream_seed
from arctic_swe.harness import (
    TINY_HARNESS,
    EngineSampler,
    HarnessConfig,
    Trajectory,
    harness_config,
    run_rollouts,
)
from arctic_swe.model import assign_weights, load_policy, read_weights
from arctic_swe.trainer import policy_dir
from swe_sandbox import DEFAULT_BACKEND, Backend, SandboxPool, TaskSpec, create_backend

if TYPE_CHECKING:
    from arctic_swe.config import RunConfig


@dataclass(frozen=True)
class PolicyEvaluation(SolvedShare):
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
    # blake2b of every rollout's task, ending, reward and token ids, in job order: two
    # evaluations with equal digests sampled exactly the same rollouts
    digest: str = ""
    # task id -> "1"/"0" per sample in sample order (solved or not): what pairs evaluations
    outcomes: dict[str, str] = field(default_factory=dict, repr=False)
    stream: str = CHECK_STREAM  # the named sampling streams (arctic_swe.evaluate.STREAMS)

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
            "outcomes": dict(self.outcomes),
            "stream": self.stream,
            "digest": self.digest,
        }


def tally_evaluation(
    label: str,
    path: Path,
    split: str,
    samples: int,
    trajectories: Sequence[Trajectory],
    stream: str = CHECK_STREAM,
) -> PolicyEvaluation:
    """Fold finished rollouts (in job order: each task's samples in sample order) into a
    :class:`PolicyEvaluation`."""
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
        digest=rollouts_digest(trajectories),
        outcomes={task: "".join("1" if w else "0" for w in wins) for task, wins in by_task.items()},
        stream=stream,
    )


def rollouts_digest(trajectories: Sequence[Trajectory]) -> str:
    """A fingerprint of ``trajectories`` in order: task, ending, reward and every token id."""
    digest = hashlib.blake2b(digest_size=16)
    for t in trajectories:
        digest.update(f"{t.task_id}|{t.termination}|{t.reward!r}|".encode())
        digest.update(",".join(map(str, t.token_ids)).encode() + b";")
    return digest.hexdigest()


async def sample_rollouts(
    engine: TorchEngine,
    tasks: Sequence[TaskSpec],
    tokenizer: PreTrainedTokenizerFast,
    *,
    workers: int,
    harness: HarnessConfig = TINY_HARNESS,
    backend: Backend | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[Trajectory]:
    """One rollout per entry of ``tasks`` on ``engine`` (closed afterwards), ``workers``
    sandboxes at once; ``on_done`` sees each trajectory as it finishes. With ``seeds`` (one
    per task entry) rollout ``i`` samples from its own fixed stream (:class:`SeededSampler`),
    else from the engine's request counter."""
    if seeds is not None and len(seeds) != len(tasks):
        raise ValueError(f"{len(seeds)} seeds for {len(tasks)} rollouts")

    def sampler(index: int, _: TaskSpec) -> EngineSampler | SeededSampler:
        if seeds is None:
            return EngineSampler(engine, tokenizer, index)
        return SeededSampler(engine, tokenizer, index, seeds[index])

    try:
        async with SandboxPool(
            backend or create_backend(DEFAULT_BACKEND), max_concurrency=workers
        ) as pool:
            return await run_rollouts(
                list(tasks),
                sampler,
                pool,
                tokenizer,
                harness,
                on_done=on_done,
            )
    finally:
        await engine.close()


def _first_run_config(policies: Sequence[str | Path]) -> RunConfig | None:
    """The configuration of the first run directory among ``policies`` (``None``: none is)."""
    from arctic_swe.config import RunDir, load_run_config

    for policy in policies:
        run = RunDir(Path(policy))
        if run.config.is_file() and run.checkpoints.is_dir():
            return load_run_config(run)
    return None


def run_pool_size(policies: Sequence[str | Path]) -> int | None:
    """The stress-test pool size (``deck.pool_size``) of the first run directory among
    ``policies``, or ``None`` when none is a run directory.

    A run trains on the first ``pool_size`` tasks of the deck's pool split; evaluating a run
    against its warm start on those tasks answers "did training help where it trained" (the
    rest of the split is the untrained remainder). Raises
    :class:`arctic_swe.config.RunConfigError` for a run whose ``config.toml`` is broken.
    """
    config = _first_run_config(policies)
    return None if config is None else config.deck.pool_size


def recipe_harness(config: RunConfig) -> HarnessConfig:
    """A run's episode budgets under the recipe's gate and raw format check, whatever the run
    ablates: what the run's measured pool success (``run.pool_eval_every``) samples with, so
    runs and ablations are measured alike."""
    return replace(harness_config(config), gated_reward=True, strict_format=True)


def run_harness(policies: Sequence[str | Path]) -> HarnessConfig | None:
    """:func:`recipe_harness` of the first run directory among ``policies`` (``None``: none
    is), so ``arctic-swe evaluate RUN`` runs the episodes the run's own evaluation ran."""
    config = _first_run_config(policies)
    return None if config is None else recipe_harness(config)


def policy_engine(
    policy: str | Path,
    rollouts: int,
    *,
    workers: int,
    seed: int,
    weights: str | Path | None = None,
) -> tuple[Path, PreTrainedTokenizerFast, TorchEngine]:
    """Load ``policy`` (policy, checkpoint or run directory) and its tokenizer into a
    :class:`TorchEngine` sized for ``rollouts`` rollouts run ``workers`` at a time; with
    ``weights`` (a ``.safetensors`` file or checkpoint directory, e.g. a run's published
    ``weights/policy-vN/`` directory) the policy's architecture gets those weights instead.

    A rollout generates only while it holds one of the ``workers`` sandboxes, so more cache
    slots than ``min(rollouts, workers)`` would only be allocated (and grown) for nothing.
    """
    directory = policy_dir(policy)
    tokenizer = load_tokenizer(directory)
    # Loading draws on the global torch RNG (transformers initialises before it loads); fork
    # it, so a run's checkpointed RNG state never depends on when an evaluation began. Nothing
    # else in the process samples from the global generator (engines own theirs).
    with torch.random.fork_rng(devices=[]):
        model = load_policy(directory)
    if weights is not None:
        assign_weights(model, read_weights(weights))
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
    harness: HarnessConfig = TINY_HARNESS,
    weights: str | Path | None = None,
    stream: str = CHECK_STREAM,
) -> PolicyEvaluation:
    """Sample every task of ``tasks`` ``samples`` times with ``policy`` (a policy directory, a
    checkpoint, or a run directory: its latest checkpoint) and tally the gated successes.

    ``seed`` and ``stream`` fix every rollout's sampling stream by (task position, sample,
    turn), so the same weights evaluated with the same seed and stream give the same rollouts,
    and two policies see the same random numbers (their trajectories still diverge once their
    tokens differ). ``stream`` defaults to ``check``, disjoint from the ``pool`` and
    ``heldout`` streams a run's own evaluations draw (:func:`stream_seed`).
    ``weights`` replaces the policy's weights (:func:`policy_engine`); ``harness`` sets the
    episode budgets. Raises :class:`ValueError` for ``samples < 1``, ``workers < 1`` or no
    tasks; the loaders' typed errors (tokenizer, checkpoint, resume) for a directory that
    holds no policy.
    """
    return asyncio.run(
        evaluate_policy_async(
            policy, tasks, split=split, samples=samples, seed=seed, workers=workers,
            backend=backend, on_done=on_done, harness=harness, weights=weights, stream=stream,
        )
    )  # fmt: skip


async def evaluate_policy_async(
    policy: str | Path,
    tasks: Sequence[TaskSpec],
    *,
    split: str = "pool",
    samples: int = 4,
    seed: int = 0,
    workers: int = 4,
    backend: Backend | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    harness: HarnessConfig = TINY_HARNESS,
    weights: str | Path | None = None,
    label: str | None = None,
    stream: str = CHECK_STREAM,
) -> PolicyEvaluation:
    """:func:`evaluate_policy` on a running event loop (the loading runs on a worker thread,
    so the loop keeps serving other work, e.g. the RL loop's training groups)."""
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if not tasks:
        raise ValueError("no tasks to evaluate on")
    base_seed = stream_seed(seed, stream)  # ValueError for an unknown stream, before loading
    jobs = [task for task in tasks for _ in range(samples)]
    directory, tokenizer, engine = await asyncio.to_thread(
        policy_engine, policy, len(jobs), workers=workers, seed=seed, weights=weights
    )
    trajectories = await sample_rollouts(
        engine, jobs, tokenizer, workers=workers, harness=harness, backend=backend,
        on_done=on_done, seeds=rollout_seeds(base_seed, len(tasks), samples),
    )  # fmt: skip
    name = str(policy) if label is None else label
    return tally_evaluation(name, directory, split, samples, trajectories, stream)
