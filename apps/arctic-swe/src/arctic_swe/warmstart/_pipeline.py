"""The warm-start pipeline: expert trajectories on the warm-start split, then SFT, then save.

The expert runs through the real harness and the real sandboxes (same tools, same chat format,
same token layout as a policy rollout), so the SFT data is exactly what the policy will see.
The result is a Hugging Face checkpoint directory holding the policy *and* its tokenizer.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import save_tokenizer
from arctic_swe.deck import DeckTask
from arctic_swe.harness import TINY_HARNESS, HarnessConfig, Trajectory, run_rollouts
from arctic_swe.model import TINY_PRESET, PolicyPreset, build_policy, policy_config, save_policy
from arctic_swe.warmstart._errors import WarmStartError
from arctic_swe.warmstart._expert import expert_sampler
from arctic_swe.warmstart._induction import InductionConfig, InductionStep, pretrain_induction
from arctic_swe.warmstart._resume import WarmStartStaging
from arctic_swe.warmstart._sft import SFTConfig, SFTStep, train_sft
from swe_sandbox import Backend, SandboxPool

EXPERT_FILE = "expert.jsonl"


@dataclass(frozen=True)
class WarmStartResult:
    """What :func:`warm_start` produced: the checkpoint, the expert data and the SFT curve."""

    policy_dir: Path
    expert: tuple[Trajectory, ...] = field(repr=False)
    steps: tuple[SFTStep, ...] = field(repr=False)
    expert_seconds: float
    sft_seconds: float
    induction: tuple[InductionStep, ...] = field(default=(), repr=False)
    induction_seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 10 % of steps."""
        tail = self.steps[-max(1, len(self.steps) // 10) :]
        return sum(s.loss for s in tail) / len(tail)


async def collect_expert(
    tasks: Sequence[DeckTask],
    tokenizer: PreTrainedTokenizerFast,
    backend: Backend,
    harness: HarnessConfig = TINY_HARNESS,
    *,
    concurrency: int = 2,
    grade: bool = False,
    on_done: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Run the scripted expert on ``tasks`` in real sandboxes (``concurrency`` at once)."""
    by_id = {task.instance_id: task for task in tasks}
    async with SandboxPool(backend, max_concurrency=concurrency) as pool:
        return await run_rollouts(
            [task.spec for task in tasks],
            lambda _, spec: expert_sampler(tokenizer, by_id[spec.instance_id]),
            pool,
            tokenizer,
            harness,
            grade=grade,
            on_done=on_done,
        )


def warm_start(
    tasks: Sequence[DeckTask],
    tokenizer: PreTrainedTokenizerFast,
    out_dir: str | os.PathLike[str],
    backend: Backend,
    *,
    sft: SFTConfig | None = None,
    harness: HarnessConfig = TINY_HARNESS,
    model_seed: int = 0,
    preset: PolicyPreset = TINY_PRESET,
    concurrency: int = 2,
    on_expert: Callable[[Trajectory], None] | None = None,
    on_step: Callable[[SFTStep], None] | None = None,
    induction: InductionConfig | None = None,
    on_induction: Callable[[InductionStep], None] | None = None,
    checkpoint_every: int = 25,
) -> WarmStartResult:
    """Collect expert trajectories on ``tasks``; give a fresh policy of ``preset`` (seeded with
    ``model_seed``) induction pretraining (``induction``, stage 0: in-context copying, see
    ``_induction``) and then SFT on the expert trajectories; write the checkpoint (policy +
    tokenizer + ``expert.jsonl``) to ``out_dir``.

    An interrupted or crashed warm start resumes where it stopped when called again with the
    same arguments (see ``_resume``: finished expert rollouts are kept, training continues
    from its last saved step, saved every ``checkpoint_every`` steps). Raises :class:`WarmStartError` if the expert fails to
    submit on a task (a broken deck) or ``tasks`` is empty."""
    if not tasks:
        raise WarmStartError("the warm start needs at least one task")
    sft, induction = sft or SFTConfig(), induction or InductionConfig()
    staging = WarmStartStaging(
        out_dir, _settings(tasks, tokenizer, sft, induction, harness, model_seed, preset)
    )
    began = time.monotonic()
    expert = _expert_stage(tasks, tokenizer, backend, harness, staging, concurrency, on_expert)
    expert_seconds = time.monotonic() - began
    config = policy_config(
        len(tokenizer),
        preset,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = build_policy(config, seed=model_seed)
    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    if not isinstance(pad_id, int) or not isinstance(eos_id, int):
        raise WarmStartError("the tokenizer needs a pad and an eos token")
    began = time.monotonic()
    first_ordinary = max(tokenizer.all_special_ids) + 1
    copied = pretrain_induction(
        model,
        len(tokenizer),
        first_ordinary,
        eos_id,
        induction,
        on_induction,
        checkpoint=staging.stage("induction", checkpoint_every),
    )
    induction_seconds = time.monotonic() - began
    began = time.monotonic()
    steps = train_sft(
        model, expert, pad_id, sft, on_step, checkpoint=staging.stage("sft", checkpoint_every)
    )
    sft_seconds = time.monotonic() - began
    target = save_policy(model, out_dir)
    save_tokenizer(tokenizer, target)
    with (target / EXPERT_FILE).open("w") as handle:
        handle.writelines(t.to_json() + "\n" for t in expert)
    staging.remove()
    return WarmStartResult(
        target,
        tuple(expert),
        tuple(steps),
        expert_seconds,
        sft_seconds,
        tuple(copied),
        induction_seconds,
    )


def _expert_stage(
    tasks: Sequence[DeckTask],
    tokenizer: PreTrainedTokenizerFast,
    backend: Backend,
    harness: HarnessConfig,
    staging: WarmStartStaging,
    concurrency: int,
    on_expert: Callable[[Trajectory], None] | None,
) -> list[Trajectory]:
    """Expert trajectories for ``tasks`` in task order: those a previous run finished, then
    the rest (each recorded in ``staging`` as it finishes)."""
    finished = {t.task_id: t for t in staging.finished_expert()}
    remaining = [task for task in tasks if task.instance_id not in finished]

    def done(trajectory: Trajectory) -> None:
        staging.record_expert(trajectory)
        if on_expert is not None:
            on_expert(trajectory)

    for trajectory in finished.values():
        if on_expert is not None:
            on_expert(trajectory)
    if remaining:
        fresh = asyncio.run(
            collect_expert(
                remaining, tokenizer, backend, harness, concurrency=concurrency, on_done=done
            )
        )
        finished.update((t.task_id, t) for t in fresh)
    expert = [finished[task.instance_id] for task in tasks]
    broken = [t.task_id for t in expert if t.termination != "submitted"]
    if broken:
        raise WarmStartError(f"the expert failed to submit on {broken[:5]}")
    return expert


def _settings(
    tasks: Sequence[DeckTask],
    tokenizer: PreTrainedTokenizerFast,
    sft: SFTConfig,
    induction: InductionConfig,
    harness: HarnessConfig,
    model_seed: int,
    preset: PolicyPreset,
) -> dict[str, Any]:
    """Everything that decides what the warm start produces: a staging directory saved under
    other settings is not resumed."""
    return {
        "tasks": [task.instance_id for task in tasks],
        "vocab": len(tokenizer),
        "sft": asdict(sft),
        "induction": asdict(induction),
        "harness": repr(harness),
        "model_seed": model_seed,
        "preset": asdict(preset),
    }
