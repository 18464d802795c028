"""The trainer-side ablation flags change the objective the app's trainer optimises: its
``loss_config`` of a ``[trainer]`` section, fed to cispo-loss, against hand-derived float64
gradients (the CISPO gradient w.r.t. a token's log-prob is ``-ω·A / N``, Arctic-SWE §5)."""

from __future__ import annotations

import math

import attrs
import torch

from arctic_swe.config import TrainerSection
from arctic_swe.trainer._trainer import loss_config
from cispo_loss import cispo_loss

F64 = torch.float64


def _gradient(
    section: TrainerSection,
    log_omega: list[list[float]],
    advantages: list[float],
    mask: list[list[bool]],
) -> torch.Tensor:
    rollout = torch.full((len(log_omega), len(log_omega[0])), -1.0, dtype=F64)
    logprobs = (rollout + torch.tensor(log_omega, dtype=F64)).requires_grad_(True)
    out = cispo_loss(
        logprobs,
        rollout,
        torch.tensor(advantages, dtype=F64),
        torch.tensor(mask),
        config=loss_config(section),
    )
    out.loss.backward()
    assert logprobs.grad is not None
    return logprobs.grad


def test_ppo_clip_changes_the_gradient_of_tokens_outside_the_band() -> None:
    """ω = 1.5 is inside the paper's IcePop band [0, 2] but above PPO's 1 + 0.28; ω = 2.5 is
    outside both; ω = 1 is inside both. One rollout, A = +1, token mean over N = 3."""
    log_omega = [[0.0, math.log(1.5), math.log(2.5)]]
    mask = [[True, True, True]]
    recipe = _gradient(TrainerSection(mask_high=2.0), log_omega, [1.0], mask)
    clipped = _gradient(
        TrainerSection(ratio_control="ppo_clip", mask_high=2.0), log_omega, [1.0], mask
    )
    # mask: ω = 1.5 keeps its CISPO gradient -ω·A/N, ω = 2.5 is masked
    torch.testing.assert_close(recipe, torch.tensor([[-1.0, -1.5, 0.0]], dtype=F64) / 3)
    # PPO clip with A > 0: a ratio above 1 + ε gets no gradient, inside it -ω·A/N
    torch.testing.assert_close(clipped, torch.tensor([[-1.0, 0.0, 0.0]], dtype=F64) / 3)


def test_the_tiny_band_masks_what_the_paper_band_keeps() -> None:
    """The tiny default band [0, 1.3] masks ω = 1.5 (kept at [0, 2]) and keeps ω = 1.2."""
    assert TrainerSection().mask_high == 1.3
    log_omega = [[0.0, math.log(1.2), math.log(1.5)]]
    tiny = _gradient(TrainerSection(), log_omega, [1.0], [[True, True, True]])
    torch.testing.assert_close(tiny, torch.tensor([[-1.0, -1.2, 0.0]], dtype=F64) / 3)


def test_rollout_mean_weighs_rollouts_not_tokens() -> None:
    """A 1-token rollout (A = +1) and a 3-token one (A = -1), ω = 1: the token mean divides
    every token by N = 4, the per-rollout mean each rollout's tokens by its length and by the
    2 rollouts."""
    log_omega = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    mask = [[True, False, False], [True, True, True]]
    token = _gradient(TrainerSection(), log_omega, [1.0, -1.0], mask)
    rollout = _gradient(
        attrs.evolve(TrainerSection(), aggregation="rollout_mean"), log_omega, [1.0, -1.0], mask
    )
    torch.testing.assert_close(token, torch.tensor([[-1.0, 0, 0], [1.0, 1.0, 1.0]], dtype=F64) / 4)
    third = 1.0 / 3
    expected = torch.tensor([[-1.0, 0, 0], [third, third, third]], dtype=F64) / 2
    torch.testing.assert_close(rollout, expected)
