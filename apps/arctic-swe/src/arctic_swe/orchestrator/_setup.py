"""Build the loop's parts from a config, a deck and a warm-start policy; resume from a checkpoint.

Everything that can be wrong with the inputs (deck too small, missing policy or tokenizer, a
checkpoint that does not fit) raises :class:`SetupError` before any rollout starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from arctic_swe._backends import sandbox_backend
from arctic_swe.chat import IM_END, ChatError, load_tokenizer, special_id
from arctic_swe.config import PROCEDURAL_DECK, RunConfig, RunDir
from arctic_swe.deck import StoredDeckError, load_deck, load_task_rows
from arctic_swe.distributed import DistributedTrainerError, RemoteTrainer
from arctic_swe.evaluate import recipe_harness
from arctic_swe.harness import episode_format, harness_config
from arctic_swe.metrics import MetricsLog
from arctic_swe.model import CheckpointError
from arctic_swe.orchestrator._engines import (
    EngineFactory,
    EngineInputs,
    EngineSet,
    EngineSetupError,
    open_engines,
)
from arctic_swe.orchestrator._engines import torch_engine as _torch_engine
from arctic_swe.orchestrator._loop import Components
from arctic_swe.orchestrator._pool_eval import PoolEvaluator
from arctic_swe.trainer import (
    InProcessTrainer,
    Restored,
    ResumeError,
    Trainer,
    TrainerHandle,
    latest_checkpoint,
    load_fp32_policy,
)
from deck_evictor import Deck, EvictionRules, ReplayPolicy
from load_router import LeastLoaded, PolicyClock, Router, SessionHash
from swe_sandbox import Backend, SandboxPool, TaskSpec

__all__ = [
    "EngineFactory",
    "Inputs",
    "SetupError",
    "open_components",
    "pool_tasks",
    "routing_policy",
]


class SetupError(RuntimeError):
    """The run cannot start: bad deck, policy, tokenizer or checkpoint."""


@dataclass(frozen=True)
class Inputs:
    """Where the deck (``arctic-swe deck build``) and the warm-start policy (``arctic-swe
    warmstart``: a checkpoint directory that also holds the tokenizer) are."""

    deck_dir: Path
    policy_dir: Path


def _load_policy(config: RunConfig, path: Path) -> nn.Module:
    try:
        # FP32 weights and kernels on both sides; the "FP32 numerics off" ablation lives in the
        # engines' state cache (bf16 storage), so trainer and engine numerics diverge as in the
        # paper's baseline stack.
        return load_fp32_policy(str(path), fp32_state=config.trainer.fp32_numerics)
    except CheckpointError as exc:
        raise SetupError(f"warm-start policy: {exc}") from exc


def routing_policy(config: RunConfig) -> LeastLoaded | SessionHash:
    """The router's placement policy ``engine.routing`` names (load-router; Arctic-SWE §3.3)."""
    return SessionHash() if config.engine.routing == "session_hash" else LeastLoaded()


def _evictor(config: RunConfig, task_ids: list[str]) -> Deck:
    """The deck of ``config.deck`` (Arctic-SWE §3.3 eviction; §5 "retire only mastered tasks").

    ``deck.eviction = false`` retires nothing, whatever the other keys say (the no-eviction
    ablation). Otherwise a task retires as mastered by ``deck.retire_rule`` (``mastered``: its
    last ``deck.mastered_groups`` groups all-correct), as hard after
    ``deck.hard_consecutive_zero`` all-zero groups (0 = never), and a replay probe that solves
    less than ``deck.reactivate_below`` of its rollouts puts a mastered task back (0 = never).
    """
    d = config.deck
    if not d.eviction:
        rules = EvictionRules.off()
    else:
        rules = EvictionRules(
            easy="mastered" if d.retire_rule == "mastered" else "first_all_correct",
            mastered_groups=d.mastered_groups,
            hard_consecutive_zero=d.hard_consecutive_zero or None,
        )
    # replay_size 0 means no probes: the loop never asks for them; the policy needs size >= 1.
    replay = ReplayPolicy(
        every=d.replay_every,
        size=max(1, d.replay_size),
        reactivate_below=d.reactivate_below or None,
    )
    return Deck(task_ids, rules=rules, replay=replay, seed=config.run.seed)


def pool_tasks(config: RunConfig, deck_dir: Path) -> dict[str, TaskSpec]:
    """The stress-test pool: the first ``deck.pool_size`` tasks of ``deck.source`` (a file of
    task rows) or, when it is ``procedural``, of the deck in ``deck_dir``'s pool split."""
    if config.deck.source == PROCEDURAL_DECK:
        where = f"deck {deck_dir}"
        found = {t.instance_id: t.spec for t in load_deck(deck_dir).split("pool")}
    else:
        where = f"deck.source {config.deck.source}"
        found = load_task_rows(config.deck.source)
    if len(found) < config.deck.pool_size:
        raise SetupError(
            f"{where} has {len(found)} pool tasks, the config needs {config.deck.pool_size} "
            f"(set deck.pool_size <= {len(found)})"
        )
    return dict(list(found.items())[: config.deck.pool_size])


@asynccontextmanager
async def open_components(
    config: RunConfig,
    run: RunDir,
    inputs: Inputs,
    *,
    resume: bool,
    backend: Backend | None = None,
    engine_factory: EngineFactory = _torch_engine,
) -> AsyncIterator[Components]:
    """The loop's parts, ready to run; engines and sandboxes are closed on exit."""
    try:
        tasks = pool_tasks(config, inputs.deck_dir)
        tokenizer = load_tokenizer(inputs.policy_dir)
        # an unsupported chat template is a one-line error now, not a failed first episode
        episode_format(tokenizer, harness_config(config))
    except (StoredDeckError, ChatError, OSError) as exc:
        raise SetupError(str(exc)) from exc
    torch.manual_seed(config.run.seed)
    fresh_deck = _evictor(config, list(tasks))
    log = MetricsLog(run.metrics)
    latest = latest_checkpoint(run.checkpoints) if resume else None
    trainer = await _open_trainer(config, inputs)
    try:
        start = _starting_point(latest, trainer, fresh_deck, log, resume=resume)
        version = start.version
        _check_start(trainer, version)
        stop_id = special_id(tokenizer, IM_END)
        engine_inputs = EngineInputs(
            trainer.local_model(),
            inputs.policy_dir,
            stop_id,
            version,
            trainer.current_weights,
            trainer.weight_sender() if config.engine.weight_transfer == "nccl" else None,
        )
        async with _serving(config, run, engine_inputs, engine_factory, backend) as (
            engines,
            pool,
        ):
            router = Router(
                engines.engines,
                routing_policy(config),
                max_resident_per_engine=config.engine.max_resident,
                version=version,
            )
            yield Components(
                config=config,
                run=run,
                tasks=tasks,
                tokenizer=tokenizer,
                stop_id=stop_id,
                harness=harness_config(config),
                trainer=trainer,
                router=router,
                pool=pool,
                deck=start.deck,
                clock=PolicyClock(config.run.max_off_policy, start_version=version),
                log=log,
                resume_groups=start.resume_groups,
                launched=start.launched,
                engines=engines,
                pool_eval=_pool_evaluator(config, run, tasks, inputs, log, backend),
                resume_pool_evals=start.pool_evals,
            )
    finally:
        await trainer.close()


@dataclass(frozen=True)
class _Start:
    """Where the loop starts: a checkpoint's deck, policy version and in-flight groups, or
    the fresh deck at version 0."""

    deck: Deck
    version: int
    resume_groups: list[tuple[str, int | None]]
    launched: int
    pool_evals: list[tuple[int, int]] = field(default_factory=list)  # (step, version) pending


def _starting_point(
    latest: Path | None, trainer: TrainerHandle, fresh_deck: Deck, log: MetricsLog, *, resume: bool
) -> _Start:
    """Restore ``latest`` into ``trainer`` (or start fresh) and cut the metrics log back to
    the lines that belong to the starting point."""
    if latest is None:
        if resume:
            log.truncate(0)  # crashed before the first checkpoint: start over
        return _Start(fresh_deck, 0, [], 0)
    restored = _restore(latest, trainer)
    if set(restored.deck.task_ids) != set(fresh_deck.task_ids):
        raise SetupError(f"checkpoint {latest} was taken on a different task pool")
    resume_groups, launched = _inflight(restored.extras)
    log.truncate(restored.metrics_lines)
    pending = [(int(step), int(version))
               for step, version in restored.extras.get("pool_eval_pending", [])]  # fmt: skip
    return _Start(restored.deck, restored.version, resume_groups, launched, pending)


@asynccontextmanager
async def _serving(
    config: RunConfig,
    run: RunDir,
    engine_inputs: EngineInputs,
    engine_factory: EngineFactory,
    backend: Backend | None,
) -> AsyncIterator[tuple[EngineSet, SandboxPool]]:
    """The engines and the sandbox pool, closed on exit."""
    pool = SandboxPool(
        backend or sandbox_backend(config.sandbox.backend),
        max_concurrency=config.harness.sandboxes,
    )
    try:
        async with open_engines(config, run, engine_inputs, engine_factory) as engines, pool:
            yield engines, pool
    except EngineSetupError as exc:
        raise SetupError(str(exc)) from exc


async def _open_trainer(config: RunConfig, inputs: Inputs) -> TrainerHandle:
    """The in-process trainer (the policy loaded here) or a client of the remote one (remote
    runs have HTTP engines only, validated, which never need the model in this process)."""
    if config.trainer.kind != "remote":
        return InProcessTrainer(Trainer(_load_policy(config, inputs.policy_dir), config.trainer))
    remote = RemoteTrainer(config.trainer.url, timeout_s=config.trainer.timeout_s)
    try:
        await remote.connect()
    except DistributedTrainerError as exc:
        await remote.close()
        raise SetupError(str(exc)) from exc
    return remote


def _restore(latest: Path, trainer: TrainerHandle) -> Restored:
    try:
        return trainer.restore(latest)
    except ResumeError as exc:
        raise SetupError(str(exc)) from exc


def _check_start(trainer: TrainerHandle, version: int) -> None:
    """The trainer must hold the policy version the loop starts from."""
    try:
        trainer.check_start(version)
    except ResumeError as exc:
        raise SetupError(str(exc)) from exc


def _pool_evaluator(
    config: RunConfig,
    run: RunDir,
    tasks: dict[str, TaskSpec],
    inputs: Inputs,
    log: MetricsLog,
    backend: Backend | None,
) -> PoolEvaluator | None:
    """The measured pool evaluation (``run.pool_eval_every > 0``) with the run's episode
    budgets under the recipe's gate (:func:`arctic_swe.evaluate.recipe_harness`) and its own
    sandboxes on the run's backend; with the procedural deck's held-out split beside the pool
    (a deck of task rows has none)."""
    if config.run.pool_eval_every <= 0:
        return None
    heldout: list[TaskSpec] = []
    if config.deck.source == PROCEDURAL_DECK and config.run.heldout_eval_samples > 0:
        try:
            heldout = [t.spec for t in load_deck(inputs.deck_dir).split("heldout")]
        except (StoredDeckError, OSError) as exc:
            raise SetupError(str(exc)) from exc
    return PoolEvaluator(
        config, run, list(tasks.values()), inputs.policy_dir, recipe_harness(config), log,
        backend or sandbox_backend(config.sandbox.backend), heldout,
    )  # fmt: skip


def _inflight(extras: dict[str, Any]) -> tuple[list[tuple[str, int | None]], int]:
    """The in-flight groups (task id, seed) and the launch counter a checkpoint saved."""
    groups = [(str(task), None if seed is None else int(seed))
              for task, seed in extras.get("inflight_groups", [])]  # fmt: skip
    return groups, int(extras.get("launched", 0))
