"""Supervised fine-tuning on expert trajectories (the RFT warm start).

The loss is the mean next-token cross-entropy over **assistant tokens only** (the trajectory's
``loss_mask``): the model learns to write turns, never to predict the system prompt, the issue or
tool output. Batches are right-padded (causal attention and the Gated DeltaNet recurrence never
look right, so padding cannot change a real position's logits).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import torch
from torch import nn

from arctic_swe.harness import Trajectory
from arctic_swe.warmstart._errors import WarmStartError
from arctic_swe.warmstart._resume import StageCheckpoint

IGNORE = -100


@dataclass(frozen=True)
class SFTConfig:
    """Optimiser and schedule of the warm start: AdamW, linear warm-up over ``warmup_steps``,
    then cosine decay to ``final_lr_fraction * lr`` at the last step (a constant lr of this size
    left the tiny policy wherever its last loss spike put it; the decay makes the checkpoint
    the end of a settled run)."""

    steps: int = 300
    batch_size: int = 8
    lr: float = 3e-3
    warmup_steps: int = 20
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    final_lr_fraction: float = 0.1

    def lr_factor(self, step: int) -> float:
        """Multiplier of ``lr`` at 0-based ``step``."""
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        span = max(1, self.steps - 1 - self.warmup_steps)
        progress = min(1.0, (step - self.warmup_steps) / span)
        cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.final_lr_fraction + (1.0 - self.final_lr_fraction) * cosine

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise WarmStartError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0 or self.warmup_steps < 0 or self.grad_clip <= 0:
            raise WarmStartError("lr and grad_clip must be positive, warmup_steps >= 0")
        if not 0.0 <= self.final_lr_fraction <= 1.0:
            raise WarmStartError(
                f"final_lr_fraction must be in [0, 1], got {self.final_lr_fraction}"
            )


@dataclass(frozen=True)
class SFTStep:
    """One optimiser step: its loss (mean over assistant tokens), tokens, seconds."""

    step: int
    loss: float
    tokens: int
    seconds: float


def collate(batch: Sequence[Trajectory], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, labels)`` of shape ``[B, T]``: labels are the next token where that token
    is an assistant token, else ``-100``."""
    width = max(len(t.token_ids) for t in batch)
    inputs = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    for row, trajectory in enumerate(batch):
        ids = torch.tensor(trajectory.token_ids, dtype=torch.long)
        mask = torch.tensor(trajectory.loss_mask, dtype=torch.bool)
        inputs[row, : len(ids)] = ids
        shifted = torch.where(mask[1:], ids[1:], torch.full_like(ids[1:], IGNORE))
        labels[row, : len(ids) - 1] = shifted
    return inputs, labels


def assistant_loss(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the labelled (assistant) positions.

    The LM head runs on the labelled positions only (``[N, H] -> [N, V]``; N is about a quarter
    of the batch's positions on the expert data): logits of the system prompt, the issue, tool output and padding would
    be computed, soft-maxed and back-propagated only to be ignored.
    """
    hidden = model.get_submodule("model")(input_ids=inputs).last_hidden_state  # [B, T, H]
    labelled = labels != IGNORE
    logits = model.get_submodule("lm_head")(hidden[labelled])  # [N, V]
    return nn.functional.cross_entropy(logits.float(), labels[labelled])


def optimizer_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, grad_clip: float
) -> None:
    """Backward, clip the global gradient norm to ``grad_clip``, step (both warm-start stages)."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]
    nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()


def train_sft(
    model: nn.Module,
    trajectories: Sequence[Trajectory],
    pad_id: int,
    config: SFTConfig = SFTConfig(),
    on_step: Callable[[SFTStep], None] | None = None,
    checkpoint: StageCheckpoint | None = None,
) -> list[SFTStep]:
    """Fine-tune ``model`` in place on ``trajectories``; returns the per-step record.

    Batches are drawn by shuffled epochs with ``config.seed``; the model is left in eval mode.
    With ``checkpoint``, the state it holds is restored first (the steps it records are not
    run again; ``on_step`` sees only new ones) and the state is saved as the stage goes.
    """
    usable = [t for t in trajectories if any(t.loss_mask)]
    if not usable:
        raise WarmStartError("no trajectory holds an assistant token to train on")
    rng = random.Random(config.seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=config.weight_decay
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, config.lr_factor)
    order: list[int] = []  # indices into usable, drawn from the end
    history: list[SFTStep] = []
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        rng.setstate(saved["rng"])
        order = list(saved["order"])
        history = [SFTStep(**step) for step in saved["history"]]
    model.train()
    try:
        for step in range(len(history), config.steps):
            began = time.monotonic()
            batch = []
            for _ in range(min(config.batch_size, len(usable))):
                if not order:
                    order = list(range(len(usable)))
                    rng.shuffle(order)
                batch.append(usable[order.pop()])
            inputs, labels = collate(batch, pad_id)
            loss = assistant_loss(model, inputs, labels)
            optimizer_step(model, optimizer, loss, config.grad_clip)
            schedule.step()
            tokens = int((labels != IGNORE).sum())
            record = SFTStep(step, float(loss.detach()), tokens, time.monotonic() - began)
            history.append(record)
            if checkpoint is not None and checkpoint.due(step + 1, config.steps):
                checkpoint.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(),
                        "rng": rng.getstate(),
                        "order": order,
                        "history": [asdict(done) for done in history],
                    }
                )
            if on_step is not None:
                on_step(record)
    finally:
        model.eval()
    return history
