"""The default IcePop band acts on the ratios that leave it: a trainable token whose ω is just
past ``trainer.mask_high`` is masked, one just inside is not (README, "What the defenses do at
this scale"). The loop-level checks of the default look-ahead and the off-policy cap (groups
trained two versions old; stale groups dropped and counted) are in
integration_tests/test_overfit_loop.py."""

from __future__ import annotations

import math

import pytest

from arctic_swe.config import TrainerSection
from arctic_swe.model import policy_config
from arctic_swe.trainer import Trainer, TrainSample, build_fp32_policy


def _sample_with_ratios(trainer: Trainer, omegas: tuple[float, ...]) -> TrainSample:
    """A sample whose trainable tokens have importance weights ω = π_train / π_rollout equal to
    ``omegas`` under ``trainer``'s current policy (the rollout log-probs are set from them)."""
    ids = (5, 9, 11, 3, *range(20, 20 + len(omegas)))
    mask = (False,) * 4 + (True,) * len(omegas)
    probe = TrainSample(ids, mask, (0.0,) * 4 + (-1.0,) * len(omegas), advantage=1.0)
    train = trainer.recompute_logprobs(probe)[3:].tolist()  # log π_train of the trainable ones
    rollout = tuple(lp - math.log(w) for lp, w in zip(train, omegas, strict=True))
    return TrainSample(ids, mask, (0.0,) * 4 + rollout, advantage=1.0)


@pytest.mark.parametrize("side", ["inside", "outside"])
def test_the_default_band_masks_ratios_just_past_mask_high(side: str) -> None:
    section = TrainerSection()
    trainer = Trainer(build_fp32_policy(policy_config(vocab_size=64), seed=0), section)
    high = section.mask_high
    edge = high / 1.02 if side == "inside" else high * 1.02
    stats = trainer.step([_sample_with_ratios(trainer, (1.0, 1.0, 1.0, edge))])
    assert stats.masked_frac == pytest.approx(0.0 if side == "inside" else 0.25)
