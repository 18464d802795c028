"""The ``ppo_clip`` ablation: verl's ±20 log-ratio cap and dual clip, value and gradient alike."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cispo_loss import ConfigError, LossConfig, cispo_loss
from cispo_loss.reference import PPO_LOG_RATIO_CAP, reference_cispo_loss

F64 = torch.float64
ROLLOUT = -40.0  # low enough that every log-ratio below keeps the trainer's log-prob <= 0


def ppo_loss(
    log_ratio: list[float], advantages: list[float], config: LossConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One rollout per token: returns (fast loss, reference loss, the log-prob leaf)."""
    lp = (torch.tensor(log_ratio, dtype=F64) + ROLLOUT).reshape(-1, 1).requires_grad_(True)
    rollout = torch.full_like(lp, ROLLOUT).detach()
    fast = cispo_loss(
        lp,
        rollout,
        torch.tensor(advantages, dtype=F64),
        torch.ones_like(lp, dtype=torch.bool),
        config=config,
    ).loss
    slow = reference_cispo_loss(
        list(lp.unbind(0)), [[ROLLOUT]] * len(log_ratio), advantages, config=config
    )
    return fast, slow, lp


def gradient(loss: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    (g,) = torch.autograd.grad(loss, leaf)
    return g.reshape(-1)


# ε >= 0.01 keeps the bounds off r = 1 (log-ratio 0): exactly on a bound both branches tie and
# torch.maximum (verl's op) splits the gradient between them, a measure-zero case left to torch.
configs = st.builds(
    LossConfig,
    ratio_control=st.just("ppo_clip"),
    clip_low=st.none() | st.floats(0.01, 0.9),
    clip_high=st.floats(0.01, 3.0),
    clip_ratio_c=st.none() | st.floats(1.01, 10.0),
)


@given(
    config=configs,
    tokens=st.lists(
        st.tuples(st.floats(-30.0, 30.0), st.floats(-3.0, 3.0)), min_size=1, max_size=8
    ),
)
@settings(max_examples=150, deadline=None)
def test_value_and_gradient_match_the_reference(
    config: LossConfig, tokens: list[tuple[float, float]]
) -> None:
    """Far outside the clip range and the ±20 cap too, in both signs of the advantage."""
    log_ratio, advantages = [t[0] for t in tokens], [t[1] for t in tokens]
    fast, slow, lp = ppo_loss(log_ratio, advantages, config)
    torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gradient(fast, lp), gradient(slow, lp), rtol=1e-12, atol=1e-12)


@given(
    config=configs,
    tokens=st.lists(
        st.tuples(st.floats(-30.0, 30.0), st.floats(-3.0, 3.0)), min_size=1, max_size=8
    ),
)
@settings(max_examples=100, deadline=None)
def test_gradient_is_zero_exactly_where_a_bound_is_the_active_branch(
    config: LossConfig, tokens: list[tuple[float, float]]
) -> None:
    """Elsewhere it is PPO's ``-A·r/N``: every token's gradient is one of the two."""
    log_ratio, advantages = [t[0] for t in tokens], [t[1] for t in tokens]
    fast, _, lp = ppo_loss(log_ratio, advantages, config)
    low, high = config.ratio_range
    c = config.clip_ratio_c
    for g, d, a in zip(gradient(fast, lp).tolist(), log_ratio, advantages, strict=True):
        r = math.exp(d)
        bound_active = (
            abs(d) >= PPO_LOG_RATIO_CAP
            or (a > 0 and r > high)
            or (a < 0 and r < low)
            or (c is not None and a < 0 and r > c)
        )
        want = 0.0 if bound_active else -a * r / len(tokens)
        assert g == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_the_cap_is_flat_in_value_and_gradient() -> None:
    """Beyond ±20 the ratio is e^±20 and its gradient 0 (verl); the old cap kept -A·e^20."""
    config = LossConfig(ratio_control="ppo_clip")
    fast, _, lp = ppo_loss([25.0, -25.0, 0.1], [-1.0, 1.0, 1.0], config)
    want = (math.exp(20.0) - math.exp(-20.0) - math.exp(0.1)) / 3
    assert float(fast.detach()) == pytest.approx(want, rel=1e-12)
    torch.testing.assert_close(
        gradient(fast, lp), torch.tensor([0.0, 0.0, -math.exp(0.1) / 3], dtype=F64)
    )


def test_the_dual_clip_bounds_a_negative_advantage_tokens_loss() -> None:
    config = LossConfig(ratio_control="ppo_clip", clip_low=0.2, clip_high=0.2, clip_ratio_c=3.0)
    #           capped, then dual-clipped; capped; dual-clipped; kept; clipped (A > 0)
    log_ratio = [25.0, -25.0, math.log(4.0), math.log(2.5), math.log(1.5)]
    advantages = [-1.0, 1.0, -2.0, -1.0, 1.0]
    fast, _, lp = ppo_loss(log_ratio, advantages, config)
    want_loss = (3.0 * 1.0 - math.exp(-20.0) + 3.0 * 2.0 + 2.5 * 1.0 - 1.2) / 5
    assert float(fast.detach()) == pytest.approx(want_loss, rel=1e-12)
    torch.testing.assert_close(
        gradient(fast, lp), torch.tensor([0.0, 0.0, 0.0, 2.5, 0.0], dtype=F64) / 5
    )


def test_finite_differences_agree_at_the_cap_and_the_dual_clip() -> None:
    """The old cap kept a gradient of -A·e^20 where the value is flat; finite differences say 0."""
    config = LossConfig(ratio_control="ppo_clip", clip_ratio_c=2.0)
    log_ratio = torch.tensor([[22.0, -23.0, 1.0, 0.1, -0.9, 0.6]], dtype=F64)
    advantages = torch.tensor([[-1.5, 0.7, -1.0, 2.0, -0.5, 1.0]], dtype=F64)
    rollout = torch.full_like(log_ratio, ROLLOUT)

    def f(lp: torch.Tensor) -> torch.Tensor:
        mask = torch.ones_like(lp, dtype=torch.bool)
        return cispo_loss(lp, rollout, advantages, mask, config=config).loss

    lp0 = (rollout + log_ratio).requires_grad_(True)
    assert torch.autograd.gradcheck(f, (lp0,))
    (g,) = torch.autograd.grad(f(lp0), lp0)
    assert g[0, :3].tolist() == [0.0, 0.0, 0.0]  # cap, cap, dual clip


def test_dual_clip_follows_verls_formula() -> None:
    """verl: for A < 0, min(max(-A·r, -A·clip(r)), -A·c); for A >= 0, max(-A·r, -A·clip(r))."""
    gen = torch.Generator().manual_seed(0)
    log_ratio = torch.randn(64, dtype=F64, generator=gen) * 1.5
    advantages = torch.randn(64, dtype=F64, generator=gen)
    config = LossConfig(ratio_control="ppo_clip", clip_low=0.2, clip_high=0.28, clip_ratio_c=3.0)
    r = log_ratio.exp()
    clipped = torch.maximum(-advantages * r, -advantages * r.clamp(0.8, 1.28))
    verl = torch.where(advantages < 0, torch.minimum(clipped, -advantages * 3.0), clipped)
    fast, _, _ = ppo_loss(log_ratio.tolist(), advantages.tolist(), config)
    torch.testing.assert_close(fast, verl.mean(), rtol=1e-12, atol=1e-12)


def test_dual_clip_is_reported_as_acting_above() -> None:
    lp = torch.tensor([[math.log(5.0) - 1.0, -1.0]], dtype=F64, requires_grad=True)
    out = cispo_loss(
        lp,
        torch.full((1, 2), -1.0, dtype=F64),
        torch.tensor([-1.0], dtype=F64),
        torch.ones(1, 2, dtype=torch.bool),
        config=LossConfig(ratio_control="ppo_clip", clip_ratio_c=3.0),
    )
    assert out.metrics["masked_frac_high"] == 0.5
    assert out.metrics["masked_frac_low"] == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ratio_control": "ppo_clip", "clip_ratio_c": 1.0},
        {"ratio_control": "ppo_clip", "clip_ratio_c": float("inf")},
        {"ratio_control": "mask", "clip_ratio_c": 3.0},
        {"ratio_control": "cispo_clip", "clip_ratio_c": 3.0},
    ],
)
def test_dual_clip_config_is_validated(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        LossConfig(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == "clip_ratio_c"
