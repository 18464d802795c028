"""Configuration records reject bad values with the field's name."""

from __future__ import annotations

import dataclasses

import pytest

from cispo_loss import ConfigError, LengthPenalty, LossConfig, RewardShaping


def test_defaults_are_the_papers_recipe() -> None:
    config = LossConfig()
    assert config.ratio_control == "mask"
    assert config.ratio_range == (0.0, 2.0)
    assert config.aggregation == "token_mean"
    assert config.kl_coef == 0.0
    assert config.entropy_coef == 0.0
    assert RewardShaping().invalid_reward is None
    assert RewardShaping().length_penalty is None


def test_clip_modes_use_the_clip_range() -> None:
    assert LossConfig(
        ratio_control="ppo_clip", clip_low=0.2, clip_high=0.3
    ).ratio_range == pytest.approx((0.8, 1.3))
    assert LossConfig(ratio_control="cispo_clip").ratio_range == pytest.approx((0.8, 1.28))


def test_presets_say_which_papers_form_they_are() -> None:
    assert LossConfig.arctic_swe() == LossConfig()  # Arctic-SWE §5: CISPO + IcePop [0, 2]
    m1 = LossConfig.minimax_m1_cispo(clip_high=0.3)
    # MiniMax-M1: truncation of ω from above only, no lower bound, no mask
    assert m1.ratio_control == "cispo_clip"
    assert m1.clip_low is None
    assert m1.ratio_range == pytest.approx((0.0, 1.3))
    assert LossConfig(ratio_control="ppo_clip", clip_low=None).ratio_range[0] == 0.0
    with pytest.raises(TypeError):
        LossConfig.minimax_m1_cispo()  # type: ignore[call-arg]  # the paper gives no ε_high


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        LossConfig().mask_high = 3.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"ratio_control": "clip"}, "ratio_control"),
        ({"aggregation": "sequence_mean"}, "aggregation"),
        ({"mask_low": -0.1}, "mask_low"),
        ({"mask_high": 0.0}, "mask_high"),
        ({"mask_high": float("nan")}, "mask_high"),
        ({"clip_low": 1.0}, "clip_low"),
        ({"clip_high": -0.1}, "clip_high"),
        ({"kl_coef": -1.0}, "kl_coef"),
        ({"entropy_coef": float("inf")}, "entropy_coef"),
        ({"omega_quantiles": (0.5, 1.5)}, "omega_quantiles"),
        ({"rollout_logprob_tol": -1e-9}, "rollout_logprob_tol"),
        ({"rollout_logprob_tol": float("nan")}, "rollout_logprob_tol"),
        ({"clip_low": -0.5}, "clip_low"),
    ],
)
def test_loss_config_rejects(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        LossConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
    assert str(info.value).startswith(field)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_length": 0, "buffer": 1}, "max_length"),
        ({"max_length": 10, "buffer": 0}, "buffer"),
        ({"max_length": 10, "buffer": 11}, "buffer"),
        ({"max_length": 10, "buffer": 2, "coef": -1.0}, "coef"),
    ],
)
def test_length_penalty_rejects(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        LengthPenalty(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_reward_shaping_rejects_non_finite_override() -> None:
    with pytest.raises(ConfigError, match="invalid_reward"):
        RewardShaping(invalid_reward=float("nan"))
