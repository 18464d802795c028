"""The loop's side of the trainer seam: one protocol, whatever trainer runs behind it.

The RL loop (Arctic-SWE §3.3, fully asynchronous) only ever talks to a :class:`TrainerHandle`
and never asks which trainer it has:

* :class:`InProcessTrainer` (here) wraps the in-process :class:`Trainer` (its step runs on a
  worker thread, the event loop keeps generating);
* ``arctic_swe.distributed.RemoteTrainer`` is an async HTTP client of the FSDP2 trainer
  process's rank 0; the step is an awaited request.

Both give back :class:`StepStats`, publish the new policy as a published-weights directory
(:mod:`arctic_swe.weights`, the ``reload`` refresh path), checkpoint and restore, offer the
trainer side of the ``nccl`` path, and say what the engines get from them: a local model for
in-process engines (``None`` when the model lives elsewhere) and the current weights for a
server that must catch up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn
from transformers import PreTrainedTokenizerFast

from arctic_swe.trainer._audit import LayerTypeKL, audit_layer_types
from arctic_swe.trainer._checkpoint import load_checkpoint, save_checkpoint
from arctic_swe.trainer._errors import BatchError, VersionConflictError
from arctic_swe.trainer._runstate import Restored
from arctic_swe.trainer._samples import TrainSample
from arctic_swe.trainer._trainer import StepStats, Trainer
from arctic_swe.transfer import WeightSender
from arctic_swe.weights import prune, publish
from deck_evictor import Deck

#: The tokenizer a checkpoint's model directory gets, if any.
Tokenizer = PreTrainedTokenizerFast | None


@dataclass(frozen=True)
class LoopState:
    """What the loop checkpoints beside the trainer: the deck, the policy version, the metrics
    log's cursor and the run's extras (groups in flight, launch counter, pending evaluations)."""

    deck: Deck
    version: int
    metrics_lines: int
    extras: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class TrainerHandle(Protocol):
    """What the loop needs from a trainer, wherever it runs."""

    @property
    def steps(self) -> int:
        """Optimizer steps taken so far."""
        ...

    @property
    def world_size(self) -> int:
        """Data-parallel ranks the trainer trains on (1 in process)."""
        ...

    async def step(
        self,
        samples: Sequence[TrainSample],
        *,
        versions: Sequence[Sequence[int]] | None = None,
        version: int | None = None,
    ) -> StepStats:
        """One optimizer step on the global batch ``samples``. ``versions``: the policy
        version of each token of each sample (one row per sample, one entry per token);
        ``version``: the policy version this step produces, which must be the next one.
        A batch that breaks either raises :class:`BatchError` (or the remote's request
        error) and trains nothing."""
        ...

    async def publish(self, version: int, root: Path) -> Path:
        """The published-weights directory of policy ``version`` (the current weights) for an
        engine refresh: written under ``root`` unless the trainer already wrote it."""
        ...

    def prune_published(self, root: Path, current: Path) -> None:
        """Drop older published versions under ``root`` that this side wrote (never
        ``current``: an engine may still be loading it)."""
        ...

    async def checkpoint(
        self, root: Path, state: LoopState, *, keep: int, tokenizer: Tokenizer = None
    ) -> Path:
        """Checkpoint the trainer and the loop's ``state`` as ``root/step-{steps}`` (with
        ``tokenizer`` beside the model, when the model is saved here); keep the newest
        ``keep``."""
        ...

    def restore(self, checkpoint: Path) -> Restored:
        """Load ``checkpoint`` (taken by :meth:`checkpoint`); :class:`ResumeError` if it does
        not fit this trainer."""
        ...

    def check_start(self, version: int) -> None:
        """:class:`ResumeError` unless the trainer holds the policy ``version`` the loop
        starts from."""
        ...

    async def layer_audit(self, sample: TrainSample, tokens: int) -> LayerTypeKL | None:
        """The mismatch KL by layer type on ``sample`` (its first ``tokens``), or ``None``
        when the model is not in this process."""
        ...

    def local_model(self) -> nn.Module | None:
        """The policy in this process (in-process engines copy it), or ``None``."""
        ...

    def current_weights(self) -> dict[str, torch.Tensor]:
        """The current weights on CPU (tied aliases left out), for an engine that must catch
        up to the starting version."""
        ...

    def weight_sender(self) -> WeightSender:
        """The trainer side of the engines' NCCL refresh path (vLLM 0.33's protocol)."""
        ...

    async def close(self) -> None:
        """Release what the handle holds (connections); the trainer itself keeps running."""
        ...


class InProcessTrainer:
    """:class:`TrainerHandle` over the in-process trainer (the embedded topology)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self.version = 0  # the policy version the weights are (a restore sets it)

    @property
    def steps(self) -> int:
        return self.trainer.steps

    @property
    def world_size(self) -> int:
        return 1

    async def step(
        self,
        samples: Sequence[TrainSample],
        *,
        versions: Sequence[Sequence[int]] | None = None,
        version: int | None = None,
    ) -> StepStats:
        # The same refusals as the remote trainer's /step (400 ragged rows, 409 wrong version):
        # the per-token versions are the loop's record, the step itself does not use them.
        check_versions(samples, versions, version, self.version)
        stats = await asyncio.to_thread(self.trainer.step, samples)
        self.version += 1
        return stats

    async def publish(self, version: int, root: Path) -> Path:
        return await asyncio.to_thread(publish, self.trainer.weights(), root, version)

    def prune_published(self, root: Path, current: Path) -> None:
        prune(root, keep=1, current=current)

    async def checkpoint(
        self, root: Path, state: LoopState, *, keep: int, tokenizer: Tokenizer = None
    ) -> Path:
        return save_checkpoint(
            root,
            self.trainer,
            state.deck,
            version=state.version,
            metrics_lines=state.metrics_lines,
            extras=state.extras,
            keep=keep,
            tokenizer=tokenizer,
        )

    def restore(self, checkpoint: Path) -> Restored:
        restored = load_checkpoint(checkpoint, self.trainer)
        self.version = restored.version
        return restored

    def check_start(self, version: int) -> None:
        """Nothing to check: the policy is this process's, restored with the loop's state."""

    async def layer_audit(self, sample: TrainSample, tokens: int) -> LayerTypeKL | None:
        return await asyncio.to_thread(audit_layer_types, self.trainer.model, sample, tokens)

    def local_model(self) -> nn.Module:
        return self.trainer.model

    def current_weights(self) -> dict[str, torch.Tensor]:
        return self.trainer.weights()

    def weight_sender(self) -> WeightSender:
        """Broadcasts this process's current weights (one group per engine, this process
        rank 0); the groups close with the process."""
        from arctic_swe.transfer import LocalWeightSender

        trainer = self.trainer
        return LocalWeightSender(lambda _version: list(trainer.weights().items()))

    async def close(self) -> None:
        """Nothing held beyond the trainer object."""


def check_versions(
    samples: Sequence[TrainSample],
    versions: Sequence[Sequence[int]] | None,
    version: int | None,
    current: int,
) -> None:
    """:class:`BatchError` unless ``versions`` has one row per sample and one entry per token;
    :class:`VersionConflictError` unless ``version`` (when given) is the next one,
    ``current + 1``. The in-process handle and the remote ``/step`` both check with this."""
    if version is not None and version != current + 1:
        raise VersionConflictError(f"this step makes version {current + 1}, not {version}")
    if versions is None:
        return
    if len(versions) != len(samples):
        raise BatchError(f"{len(versions)} version rows for {len(samples)} samples")
    for index, (sample, row) in enumerate(zip(samples, versions, strict=True)):
        if len(row) != len(sample.token_ids):
            raise BatchError(
                f"sample {index}: {len(row)} token versions for {len(sample.token_ids)} tokens"
            )
