"""cispo_loss against the loop-by-loop reference, plus its invariants and the global normalizer."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cispo_loss import InputError, LossConfig, cispo_loss, default_normalizer
from cispo_loss.reference import reference_cispo_loss

F64 = torch.float64

CONFIGS = [
    LossConfig(),
    LossConfig(mask_low=0.5, mask_high=1.5),
    LossConfig(ratio_control="ppo_clip"),
    LossConfig(ratio_control="cispo_clip"),
    LossConfig(aggregation="rollout_mean"),
    LossConfig(ratio_control="ppo_clip", aggregation="rollout_mean"),
    LossConfig(kl_coef=0.1),
    LossConfig(entropy_coef=0.01, aggregation="rollout_mean"),
    LossConfig(ratio_control="ppo_clip", clip_ratio_c=1.5),
    LossConfig(ratio_control="ppo_clip", clip_low=None, clip_ratio_c=2.0),
    LossConfig.minimax_m1_cispo(clip_high=0.3),
]


def make_batch(seed: int, batch: int, length: int, spread: float = 0.6) -> dict[str, torch.Tensor]:
    """A padded batch whose log-ratios spread wide enough to hit both sides of every range."""
    gen = torch.Generator().manual_seed(seed)
    rollout = -torch.rand(batch, length, generator=gen, dtype=F64) * 3.0
    logprobs = (rollout + torch.randn(batch, length, generator=gen, dtype=F64) * spread).clamp(
        max=-1e-3
    )
    mask = torch.rand(batch, length, generator=gen) < 0.75
    return {
        "logprobs": logprobs.requires_grad_(True),
        "rollout_logprobs": rollout,
        "advantages": torch.randn(batch, generator=gen, dtype=F64),
        "loss_mask": mask,
        "ref_logprobs": (
            rollout + torch.randn(batch, length, generator=gen, dtype=F64) * 0.3
        ).clamp(max=0),
        "entropy": torch.rand(batch, length, generator=gen, dtype=F64).requires_grad_(True),
    }


def run_reference(
    b: dict[str, torch.Tensor], config: LossConfig, normalizer: float | None = None
) -> torch.Tensor:
    mask = b["loss_mask"]
    rows = range(mask.shape[0])
    return reference_cispo_loss(
        [b["logprobs"][i][mask[i]] for i in rows],
        [b["rollout_logprobs"][i][mask[i]].tolist() for i in rows],
        b["advantages"].tolist(),
        config=config,
        normalizer=normalizer,
        ref_logprobs=[b["ref_logprobs"][i][mask[i]].tolist() for i in rows],
        entropy=[b["entropy"][i][mask[i]] for i in rows],
    )


def run_loss(b: dict[str, torch.Tensor], config: LossConfig, **kwargs: object) -> torch.Tensor:
    return cispo_loss(
        b["logprobs"],
        b["rollout_logprobs"],
        b["advantages"],
        b["loss_mask"],
        config=config,
        ref_logprobs=b["ref_logprobs"],
        entropy=b["entropy"],
        **kwargs,  # type: ignore[arg-type]
    ).loss


def grads(loss: torch.Tensor, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    if not loss.requires_grad:  # the reference builds no graph when no token is trainable
        return tuple(torch.zeros_like(x) for x in inputs)
    return torch.autograd.grad(loss, inputs, allow_unused=True, materialize_grads=True)


@pytest.mark.parametrize(
    "config",
    CONFIGS,
    ids=lambda c: f"{c.ratio_control}-{c.aggregation}-kl{c.kl_coef}-ent{c.entropy_coef}",
)
@given(seed=st.integers(0, 2**31 - 1), batch=st.integers(1, 4), length=st.integers(1, 7))
@settings(max_examples=25)
def test_value_and_gradient_match_reference(
    config: LossConfig, seed: int, batch: int, length: int
) -> None:
    b = make_batch(seed, batch, length)
    got = run_loss(b, config)
    want = run_reference(b, config)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for g, w in zip(
        grads(got, b["logprobs"], b["entropy"]),
        grads(want, b["logprobs"], b["entropy"]),
        strict=True,
    ):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_gradcheck_float64(config: LossConfig) -> None:
    """Finite differences agree with autograd.

    CISPO's coefficient sg(ω) is a constant by definition, so for the mask / cispo_clip modes the
    check holds ω fixed by moving the rollout log-probs with the perturbed log-probs; PPO's ratio
    is differentiated for real, so its rollout log-probs stay put.
    """
    b = make_batch(3, 3, 5, spread=0.2)
    log_omega = torch.linspace(-0.9, 0.9, 15, dtype=F64).reshape(3, 5)  # ω from 0.41 to 2.46
    lp0 = (b["rollout_logprobs"] + log_omega).clamp(max=-1e-3).detach().requires_grad_(True)

    fixed_rollout = lp0.detach().clone() - log_omega  # a copy: gradcheck perturbs lp0 in place

    def f(lp: torch.Tensor, ent: torch.Tensor) -> torch.Tensor:
        rollout = fixed_rollout if config.ratio_control == "ppo_clip" else lp.detach() - log_omega
        return cispo_loss(
            lp,
            rollout,
            b["advantages"],
            b["loss_mask"],
            config=config,
            ref_logprobs=b["ref_logprobs"],
            entropy=ent,
        ).loss

    assert torch.autograd.gradcheck(f, (lp0, b["entropy"]))


def test_cispo_gradient_is_minus_omega_times_advantage() -> None:
    rollout = torch.tensor([[-1.0, -1.0, -1.0, -1.0]], dtype=F64)
    log_omega = torch.tensor([[0.0, math.log(1.5), math.log(2.5), math.log(0.1)]], dtype=F64)
    lp = (rollout + log_omega).requires_grad_(True)
    out = cispo_loss(
        lp, rollout, torch.tensor([2.0], dtype=F64), torch.ones(1, 4, dtype=torch.bool)
    )
    out.loss.backward()
    assert lp.grad is not None
    # ω = 2.5 leaves [0, 2] and is masked; ω = 0.1 stays (mask_low = 0).
    torch.testing.assert_close(lp.grad, torch.tensor([[-2.0, -3.0, 0.0, -0.2]], dtype=F64) / 4)
    assert out.metrics["masked_frac_high"] == 0.25
    assert out.metrics["masked_frac_low"] == 0.0


def test_ppo_clip_zeroes_only_the_clipped_side() -> None:
    rollout = torch.full((2, 2), -1.0, dtype=F64)
    log_omega = torch.tensor([[math.log(1.5), math.log(0.5)]] * 2, dtype=F64)
    lp = (rollout + log_omega).requires_grad_(True)
    config = LossConfig(ratio_control="ppo_clip", clip_low=0.2, clip_high=0.2)
    out = cispo_loss(
        lp,
        rollout,
        torch.tensor([1.0, -1.0], dtype=F64),
        torch.ones(2, 2, dtype=torch.bool),
        config=config,
    )
    out.loss.backward()
    assert lp.grad is not None
    # A > 0: ω = 1.5 clipped (0), ω = 0.5 kept (-ω A / N); A < 0: ω = 1.5 kept, ω = 0.5 clipped.
    torch.testing.assert_close(lp.grad, torch.tensor([[0.0, -0.5], [1.5, 0.0]], dtype=F64) / 4)
    assert out.metrics["masked_frac_high"] == 0.25
    assert out.metrics["masked_frac_low"] == 0.25


@given(seed=st.integers(0, 2**31 - 1), batch=st.integers(1, 4), length=st.integers(1, 6))
@settings(max_examples=20)
def test_all_masked_batch_is_zero_not_nan(seed: int, batch: int, length: int) -> None:
    b = make_batch(seed, batch, length)
    b["loss_mask"] = torch.zeros(batch, length, dtype=torch.bool)
    with torch.no_grad():
        b["logprobs"][0, 0] = float("nan")  # garbage at non-trainable positions must not leak
    b["rollout_logprobs"][-1, -1] = float("inf")
    b["ref_logprobs"][0, -1] = 3.0
    for config in CONFIGS:
        out = cispo_loss(
            b["logprobs"],
            b["rollout_logprobs"],
            b["advantages"],
            b["loss_mask"],
            config=config,
            ref_logprobs=b["ref_logprobs"],
            entropy=b["entropy"],
        )
        assert out.loss.item() == 0.0
        (g_lp, g_ent) = grads(out.loss, b["logprobs"], b["entropy"])
        assert torch.equal(g_lp, torch.zeros_like(g_lp))
        assert torch.equal(g_ent, torch.zeros_like(g_ent))
        assert out.metrics["trainable_tokens"] == 0.0
        assert math.isnan(out.metrics["mismatch_kl"])


@given(seed=st.integers(0, 2**31 - 1), batch=st.integers(1, 5), length=st.integers(1, 6))
@settings(max_examples=30)
def test_permuting_rollouts_changes_nothing(seed: int, batch: int, length: int) -> None:
    b = make_batch(seed, batch, length)
    perm = torch.randperm(batch, generator=torch.Generator().manual_seed(seed))
    permuted = {k: v.detach()[perm].requires_grad_(v.requires_grad) for k, v in b.items()}
    for config in (LossConfig(), LossConfig(aggregation="rollout_mean", kl_coef=0.2)):
        base = run_loss(b, config)
        moved = run_loss(permuted, config)
        torch.testing.assert_close(moved, base, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(
            grads(moved, permuted["logprobs"])[0], grads(base, b["logprobs"])[0][perm]
        )


def pack(b: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Drop the padding: keep each row's first ``n_i`` positions (n_i random but fixed)."""
    batch, length = b["loss_mask"].shape
    lengths = torch.tensor([(length * (i + 1)) // batch for i in range(batch)])
    keep = torch.arange(length)[None, :] < lengths[:, None]
    packed = {k: v[keep] for k, v in b.items() if k != "advantages"}
    packed["advantages"] = b["advantages"]
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    return packed, cu


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_packed_equals_padded(config: LossConfig) -> None:
    b = make_batch(11, 4, 6)
    packed, cu = pack(b)
    padded_mask = torch.zeros_like(b["loss_mask"])
    padded_mask[torch.arange(6)[None, :] < (cu[1:] - cu[:-1])[:, None]] = packed["loss_mask"]
    b["loss_mask"] = padded_mask
    want = run_loss(b, config)
    got = run_loss(packed, config, cu_seqlens=cu)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)


def test_packed_accepts_empty_rollouts_and_per_token_advantages() -> None:
    lp = torch.tensor([-0.5, -1.0, -0.2, -0.4], dtype=F64, requires_grad=True)
    cu = torch.tensor([0, 2, 2, 4])
    mask = torch.ones(4, dtype=torch.bool)
    per_rollout = cispo_loss(
        lp, lp.detach(), torch.tensor([1.0, 5.0, -1.0], dtype=F64), mask, cu_seqlens=cu
    )
    per_token = cispo_loss(
        lp, lp.detach(), torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=F64), mask, cu_seqlens=cu
    )
    torch.testing.assert_close(per_rollout.loss, per_token.loss)
    torch.testing.assert_close(
        per_rollout.loss, torch.tensor((0.5 + 1.0 - 0.2 - 0.4) / 4, dtype=F64)
    )
    assert per_rollout.metrics["adv_max"] == 5.0  # stats over rollouts
    assert per_token.metrics["adv_max"] == 1.0  # stats over trainable tokens
    config = LossConfig(aggregation="rollout_mean")
    rollout_mean = cispo_loss(
        lp,
        lp.detach(),
        torch.tensor([1.0, 5.0, -1.0], dtype=F64),
        mask,
        cu_seqlens=cu,
        config=config,
    )
    # rollouts 0 and 2 have tokens, rollout 1 is empty and does not count in the normalizer
    torch.testing.assert_close(rollout_mean.loss, torch.tensor((0.75 - 0.3) / 2, dtype=F64))


def test_packed_batch_with_as_many_tokens_as_rollouts_reads_advantages_per_rollout() -> None:
    lp = torch.tensor([-0.5, -1.0, -0.2], dtype=F64, requires_grad=True)
    out = cispo_loss(
        lp,
        lp.detach(),
        torch.tensor([1.0, 5.0, -1.0], dtype=F64),
        torch.ones(3, dtype=torch.bool),
        cu_seqlens=torch.tensor([0, 2, 2, 3]),
    )
    torch.testing.assert_close(out.loss, torch.tensor((0.5 + 1.0 - 0.2) / 3, dtype=F64))


@pytest.mark.parametrize("aggregation", ["token_mean", "rollout_mean"])
def test_micro_batches_and_ranks_reproduce_the_full_batch_gradient(aggregation: str) -> None:
    """2 data-parallel ranks x 3 micro-batches of unequal size: the summed gradient is the full one."""
    config = LossConfig(aggregation=aggregation, kl_coef=0.05)  # type: ignore[arg-type]
    b = make_batch(5, 12, 9)
    b["loss_mask"][3, :] = False  # an all-masked rollout, and very unequal token counts
    b["loss_mask"][7, 1:] = False
    full = run_loss(b, config)
    (full_grad,) = grads(full, b["logprobs"])
    ranks = [[[0, 1], [2, 3, 4, 5], [6]], [[7, 8, 9], [10], [11]]]
    micro = [rows for rank in ranks for rows in rank]
    normalizer = sum(default_normalizer(b["loss_mask"][rows], config=config) for rows in micro)
    accumulated = torch.zeros_like(full_grad)
    total = torch.zeros((), dtype=F64)
    for rows in micro:
        part = {k: v[rows] for k, v in b.items()}
        loss = run_loss(part, config, normalizer=normalizer)
        total = total + loss.detach()
        accumulated += grads(loss, b["logprobs"])[0]
    torch.testing.assert_close(total, full.detach(), rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(accumulated, full_grad, rtol=1e-13, atol=1e-15)
    # the per-micro-batch mean (what a naive loop does) does not reproduce it
    naive = sum(
        grads(run_loss({k: v[rows] for k, v in b.items()}, config), b["logprobs"])[0]
        for rows in micro
    )
    assert not torch.allclose(naive / len(micro), full_grad)


def test_default_normalizer_counts() -> None:
    mask = torch.tensor([[1, 1, 0], [0, 0, 0], [1, 0, 0]])
    assert default_normalizer(mask) == 3
    assert default_normalizer(mask, config=LossConfig(aggregation="rollout_mean")) == 2
    packed = torch.tensor([True, True, False, True])
    assert (
        default_normalizer(
            packed,
            config=LossConfig(aggregation="rollout_mean"),
            cu_seqlens=torch.tensor([0, 2, 3, 4]),
        )
        == 2
    )


def test_explicit_normalizer_scales_the_loss() -> None:
    b = make_batch(2, 2, 3)
    tokens = float(b["loss_mask"].sum())
    torch.testing.assert_close(
        run_loss(b, LossConfig(), normalizer=100.0) * 100.0, run_loss(b, LossConfig()) * tokens
    )
    assert run_loss(b, LossConfig(), normalizer=torch.tensor(7)).dtype == F64


def test_kl_and_entropy_terms_are_reported_and_switchable() -> None:
    b = make_batch(9, 3, 5)
    off = cispo_loss(
        b["logprobs"],
        b["rollout_logprobs"],
        b["advantages"],
        b["loss_mask"],
        ref_logprobs=b["ref_logprobs"],
        entropy=b["entropy"],
    )
    assert off.metrics["loss"] == off.metrics["policy_loss"]
    assert off.metrics["kl_loss"] > 0
    on = cispo_loss(
        b["logprobs"],
        b["rollout_logprobs"],
        b["advantages"],
        b["loss_mask"],
        ref_logprobs=b["ref_logprobs"],
        entropy=b["entropy"],
        config=LossConfig(kl_coef=0.5, entropy_coef=0.1),
    )
    want = (
        off.metrics["policy_loss"]
        + 0.5 * off.metrics["kl_loss"]
        + 0.1 * off.metrics["entropy_loss"]
    )
    assert on.metrics["loss"] == pytest.approx(want, rel=1e-12)
    (g_ent,) = grads(on.loss, b["entropy"])
    n = float(b["loss_mask"].sum())
    torch.testing.assert_close(g_ent, torch.where(b["loss_mask"], -0.1 / n, 0.0).to(F64))


def test_bf16_logprobs_compute_in_float32() -> None:
    lp = torch.tensor([[-0.5, -1.25]], dtype=torch.bfloat16, requires_grad=True)
    out = cispo_loss(
        lp, lp.detach().float(), torch.tensor([1.0]), torch.ones(1, 2, dtype=torch.bool)
    )
    assert out.loss.dtype == torch.float32
    out.loss.backward()
    assert lp.grad is not None
    assert lp.grad.dtype == torch.bfloat16


def test_overflowing_ratio_is_masked_without_nan() -> None:
    rollout = torch.tensor([[-200.0, -1.0]], dtype=torch.float32)
    lp = torch.tensor([[-0.01, -1.0]], requires_grad=True)
    for config in (
        LossConfig(),
        LossConfig(ratio_control="ppo_clip"),
        LossConfig(ratio_control="cispo_clip"),
    ):
        out = cispo_loss(
            lp, rollout, torch.tensor([-1.0]), torch.ones(1, 2, dtype=torch.bool), config=config
        )
        (g,) = grads(out.loss, lp)
        assert torch.isfinite(out.loss)
        assert torch.isfinite(g).all()
        # PPO never clips the high side of a negative advantage, but its log-ratio is capped at
        # 20 (verl), with zero gradient there: the cap counts as acting on the token
        assert out.metrics["masked_frac_high"] == 0.5
        # masked (IcePop) or capped (PPO): no gradient; truncated (CISPO clip): -1.28·A/N
        assert g[0, 0] == (0.64 if config.ratio_control == "cispo_clip" else 0.0)
        assert out.metrics["mismatch_kl"] > 1e80  # float64 metrics: huge, still finite


# -- bad input ---------------------------------------------------------------------------------


def _call(**overrides: object) -> None:
    args: dict[str, object] = {
        "logprobs": torch.full((2, 3), -1.0),
        "rollout_logprobs": torch.full((2, 3), -1.0),
        "advantages": torch.tensor([1.0, -1.0]),
        "loss_mask": torch.ones(2, 3, dtype=torch.bool),
    }
    args.update(overrides)
    cispo_loss(
        args.pop("logprobs"),
        args.pop("rollout_logprobs"),
        args.pop("advantages"),
        args.pop("loss_mask"),
        **args,
    )  # type: ignore[arg-type]


def _nan_at(shape: tuple[int, ...], value: float, fill: float = -1.0) -> torch.Tensor:
    t = torch.full(shape, fill)
    t[1, 2] = value
    return t


@pytest.mark.parametrize(
    ("overrides", "name"),
    [
        ({"rollout_logprobs": torch.full((2, 4), -1.0)}, "rollout_logprobs"),
        ({"loss_mask": torch.ones(3, 3, dtype=torch.bool)}, "loss_mask"),
        ({"advantages": torch.tensor([1.0, 0.0, 2.0])}, "advantages"),
        ({"advantages": torch.tensor([1, 0])}, "advantages"),
        ({"advantages": torch.tensor([1.0, float("nan")])}, "advantages"),
        ({"logprobs": _nan_at((2, 3), float("nan"))}, "logprobs"),
        ({"logprobs": _nan_at((2, 3), -float("inf"))}, "logprobs"),
        ({"rollout_logprobs": _nan_at((2, 3), float("inf"))}, "rollout_logprobs"),
        ({"rollout_logprobs": _nan_at((2, 3), 0.25)}, "rollout_logprobs"),
        ({"ref_logprobs": _nan_at((2, 3), float("nan"))}, "ref_logprobs"),
        ({"ref_logprobs": torch.zeros(2, 2)}, "ref_logprobs"),
        ({"entropy": _nan_at((2, 3), float("nan"), 1.0)}, "entropy"),
        ({"loss_mask": torch.full((2, 3), 2)}, "loss_mask"),
        (
            {
                "logprobs": torch.zeros(0, 3),
                "rollout_logprobs": torch.zeros(0, 3),
                "loss_mask": torch.zeros(0, 3),
                "advantages": torch.zeros(0),
            },
            "logprobs",
        ),
        (
            {
                "logprobs": torch.zeros(2, 0),
                "rollout_logprobs": torch.zeros(2, 0),
                "loss_mask": torch.zeros(2, 0),
            },
            "logprobs",
        ),
        ({"logprobs": torch.zeros(2, 3, 1)}, "logprobs"),
        ({"logprobs": torch.zeros(2, 3, dtype=torch.int64)}, "logprobs"),
        ({"logprobs": [[-1.0] * 3] * 2}, "logprobs"),
        ({"config": LossConfig(kl_coef=0.1)}, "ref_logprobs"),
        ({"config": LossConfig(entropy_coef=0.1)}, "entropy"),
        ({"normalizer": 0}, "normalizer"),
        ({"normalizer": float("nan")}, "normalizer"),
        ({"normalizer": float("inf")}, "normalizer"),
        ({"cu_seqlens": torch.tensor([0, 6])}, "logprobs"),
    ],
)
def test_bad_input_raises_value_error_naming_the_tensor(
    overrides: dict[str, object], name: str
) -> None:
    with pytest.raises(InputError) as info:
        _call(**overrides)
    assert isinstance(info.value, ValueError)
    assert info.value.tensor == name, str(info.value)
    assert str(info.value).startswith(name)


@pytest.mark.parametrize(
    "cu",
    [
        torch.tensor([1, 6]),
        torch.tensor([0, 5]),
        torch.tensor([0, 4, 2, 6]),
        torch.tensor([0.0, 6.0]),
        torch.tensor([6]),
        torch.tensor([[0, 6]]),
    ],
)
def test_bad_cu_seqlens(cu: torch.Tensor) -> None:
    flat = torch.full((6,), -1.0)
    with pytest.raises(InputError) as info:
        cispo_loss(
            flat,
            flat,
            torch.ones(max(cu.numel() - 1, 1)),
            torch.ones(6, dtype=torch.bool),
            cu_seqlens=cu,
        )
    assert info.value.tensor == "cu_seqlens"


def test_rollout_logprob_zero_is_allowed_and_padding_is_not_checked() -> None:
    rollout = torch.tensor([[0.0, 5.0]])  # 5.0 sits at a padded position: ignored
    lp = torch.tensor([[-0.1, float("nan")]], requires_grad=True)
    out = cispo_loss(lp, rollout, torch.tensor([1.0]), torch.tensor([[True, False]]))
    assert torch.isfinite(out.loss)


# -- rollout log-probs a rounding step above 0 ---------------------------------------------------

TOL = LossConfig().rollout_logprob_tol


def _with_rollout_value(value: float, config: LossConfig | None = None) -> torch.Tensor:
    """The loss (float64) with one trainable rollout log-prob set to ``value``."""
    rollout = torch.tensor([[-0.7, -1.2, value]], dtype=F64)
    lp = torch.tensor([[-0.5, -1.0, -0.01]], dtype=F64, requires_grad=True)
    out = cispo_loss(
        lp,
        rollout,
        torch.tensor([1.5], dtype=F64),
        torch.ones(1, 3, dtype=torch.bool),
        config=config or LossConfig(),
    )
    return out.loss


@given(st.floats(0.0, TOL, exclude_min=True))
@settings(max_examples=30)
def test_tiny_positive_rollout_logprobs_are_clamped_to_zero(value: float) -> None:
    assert _with_rollout_value(value) == _with_rollout_value(0.0)
    unchecked = LossConfig(check_inputs=False)
    assert _with_rollout_value(value, unchecked) == _with_rollout_value(0.0)


@given(st.floats(TOL, 50.0, exclude_min=True))
@settings(max_examples=30)
def test_rollout_logprobs_above_the_tolerance_are_an_error(value: float) -> None:
    with pytest.raises(InputError) as info:
        _with_rollout_value(value)
    assert info.value.tensor == "rollout_logprobs"
    assert "rollout_logprob_tol" in str(info.value)
    # unchecked, they are the caller's business: passed through, not silently clamped
    unchecked = _with_rollout_value(value, LossConfig(check_inputs=False))
    assert unchecked != _with_rollout_value(0.0)


def test_tolerance_boundary_is_inclusive_and_configurable() -> None:
    _with_rollout_value(TOL)
    with pytest.raises(InputError):
        _with_rollout_value(math.nextafter(TOL, math.inf))
    with pytest.raises(InputError):
        _with_rollout_value(1e-9, LossConfig(rollout_logprob_tol=0.0))
    _with_rollout_value(1e-3, LossConfig(rollout_logprob_tol=1e-3))


def test_float32_rollout_logprobs_use_the_tolerance_in_float32() -> None:
    tol32 = float(torch.tensor(TOL, dtype=torch.float32))
    above = float(torch.nextafter(torch.tensor(tol32), torch.tensor(1.0)))
    lp = torch.full((1, 2), -0.5, requires_grad=True)
    mask, adv = torch.ones(1, 2, dtype=torch.bool), torch.tensor([1.0])
    cispo_loss(lp, torch.tensor([[-0.4, tol32]]), adv, mask)
    with pytest.raises(InputError):
        cispo_loss(lp, torch.tensor([[-0.4, above]]), adv, mask)
