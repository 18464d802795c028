"""Stage 0 of the warm start: induction pretraining (a stand-in for base-model pretraining).

Every pretrained language model can copy from its context — "induction heads" form early in
pretraining — and an SWE policy leans on that constantly: the path the issue names, the line it
quotes. Our policy is random-initialised, and SFT on a few hundred expert trajectories teaches
the *format* long before it teaches copying: measured on the deck, after 300 SFT steps the
policy wrote well-formed turns but guessed the file and the line (the probability of the
expert's edit turn stayed below 1e-3), because the few dozen copied tokens per trajectory are a
small part of its loss. A short copy task installs the mechanism first: sequences ``x SEP x``
of random non-special tokens, loss on the second ``x`` only (no n-gram shortcut exists, so the
model must look back). On the tiny preset it reaches near-zero loss within ~150 steps, after
which SFT learns to copy the path and the line (figures: the app's results/warmstart-and-tasks.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from arctic_swe.warmstart._errors import WarmStartError
from arctic_swe.warmstart._resume import StageCheckpoint
from arctic_swe.warmstart._sft import optimizer_step


@dataclass(frozen=True)
class InductionConfig:
    """The copy task: ``steps`` AdamW steps on batches of ``batch_size`` sequences
    ``x SEP x`` with ``x`` ``span`` random tokens from ``[first_token, vocab)``.
    ``steps=0`` skips the stage."""

    steps: int = 200
    batch_size: int = 32
    span: int = 16
    lr: float = 3e-3
    grad_clip: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("batch_size", "span"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise WarmStartError(f"induction {name} must be a positive int, got {value!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise WarmStartError(f"induction steps must be an int >= 0, got {self.steps!r}")
        if not self.lr > 0 or not self.grad_clip > 0:
            raise WarmStartError("induction lr and grad_clip must be positive")


@dataclass(frozen=True)
class InductionStep:
    """One step: loss on the copied half, and how many of its tokens the argmax got right."""

    step: int
    loss: float
    accuracy: float
    seconds: float


def copy_batch(
    generator: torch.Generator, config: InductionConfig, vocab: int, first_token: int, sep: int
) -> torch.Tensor:
    """``[batch, 2 * span + 1]`` token ids: ``x``, ``sep``, ``x``."""
    if vocab - first_token < 2:
        raise WarmStartError(f"no ordinary tokens to copy in [{first_token}, {vocab})")
    shape = (config.batch_size, config.span)
    span = torch.randint(first_token, vocab, shape, generator=generator)
    sep_column = torch.full((config.batch_size, 1), sep, dtype=torch.long)
    return torch.cat([span, sep_column, span], dim=1)


def copy_loss(model: nn.Module, batch: torch.Tensor, span: int) -> tuple[torch.Tensor, float]:
    """Mean cross-entropy of predicting the second copy (positions ``span..2*span-1`` predict
    tokens ``span+1..2*span``) and the argmax accuracy there."""
    logits = model(input_ids=batch).logits[:, span:-1].float()
    targets = batch[:, span + 1 :]
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    accuracy = float((logits.argmax(-1) == targets).float().mean())
    return loss, accuracy


def pretrain_induction(
    model: nn.Module,
    vocab: int,
    first_token: int,
    sep: int,
    config: InductionConfig = InductionConfig(),
    on_step: Callable[[InductionStep], None] | None = None,
    checkpoint: StageCheckpoint | None = None,
) -> list[InductionStep]:
    """Train ``model`` in place on the copy task; returns the per-step record (model left in
    eval mode). ``first_token`` is the first non-special id (special tokens are never drawn);
    ``sep`` separates the two copies. With ``checkpoint``, the state it holds is restored first
    (``on_step`` sees only new steps) and the state is saved as the stage goes."""
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98))
    history: list[InductionStep] = []
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        generator.set_state(saved["generator"])
        history = [InductionStep(**step) for step in saved["history"]]
    model.train()
    try:
        for step in range(len(history), config.steps):
            began = time.monotonic()
            batch = copy_batch(generator, config, vocab, first_token, sep)
            loss, accuracy = copy_loss(model, batch, config.span)
            optimizer_step(model, optimizer, loss, config.grad_clip)
            record = InductionStep(step, float(loss.detach()), accuracy, time.monotonic() - began)
            history.append(record)
            if checkpoint is not None and checkpoint.due(step + 1, config.steps):
                checkpoint.save(
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "generator": generator.get_state(),
                        "history": [asdict(done) for done in history],
                    }
                )
            if on_step is not None:
                on_step(record)
    finally:
        model.eval()
    return history
