"""The metrics of a loss call: definitions, quantiles, empty sets, and plain-float output."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cispo_loss import LossConfig, cispo_loss
from cispo_loss._metrics import quantile_key, quantiles, summary, to_floats
from cispo_loss.reference import reference_mismatch_kl

F64 = torch.float64


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    rollout = -torch.rand(4, 6, generator=gen, dtype=F64) * 2
    lp = (rollout + torch.randn(4, 6, generator=gen, dtype=F64) * 0.5).clamp(max=0)
    mask = torch.rand(4, 6, generator=gen) < 0.7
    return lp.requires_grad_(True), rollout, torch.tensor([1.0, -1.0, 0.0, 0.5], dtype=F64), mask


def test_mismatch_kl_matches_reference_definition() -> None:
    lp, rollout, adv, mask = batch()
    out = cispo_loss(lp, rollout, adv, mask)
    rows = range(4)
    want = reference_mismatch_kl(
        [lp[i][mask[i]].tolist() for i in rows], [rollout[i][mask[i]].tolist() for i in rows]
    )
    assert out.metrics["mismatch_kl"] == pytest.approx(want, rel=1e-12)
    assert out.metrics["mismatch_kl"] >= 0


def test_identical_policies_have_zero_mismatch() -> None:
    lp, _, adv, mask = batch(1)
    out = cispo_loss(lp, lp.detach(), adv, mask)
    assert out.metrics["mismatch_kl"] == 0.0
    assert out.metrics["omega_min"] == out.metrics["omega_max"] == 1.0
    assert out.metrics["masked_frac"] == 0.0


def test_omega_statistics_and_fractions() -> None:
    log_omega = torch.log(torch.tensor([[0.25, 0.5, 1.0, 2.0, 3.0, 9.0]], dtype=F64))
    rollout = torch.full((1, 6), -3.0, dtype=F64)
    lp = rollout + log_omega
    config = LossConfig(mask_low=0.4, mask_high=2.5, omega_quantiles=(0.0, 0.5, 1.0))
    out = cispo_loss(
        lp,
        rollout,
        torch.tensor([1.0], dtype=F64),
        torch.ones(1, 6, dtype=torch.bool),
        config=config,
    )
    m = out.metrics
    assert m["masked_frac_low"] == pytest.approx(1 / 6)
    assert m["masked_frac_high"] == pytest.approx(2 / 6)
    assert m["masked_frac"] == pytest.approx(3 / 6)
    assert m["omega_p0"] == pytest.approx(0.25)
    assert m["omega_p50"] == pytest.approx(1.5)
    assert m["omega_p100"] == pytest.approx(9.0)
    assert m["omega_mean"] == pytest.approx(15.75 / 6)


def test_entropy_and_advantage_stats() -> None:
    lp, rollout, adv, mask = batch(2)
    entropy = torch.rand(4, 6, dtype=F64)
    out = cispo_loss(lp, rollout, adv, mask, entropy=entropy)
    assert out.metrics["entropy_mean"] == pytest.approx(float(entropy[mask].mean()))
    assert out.metrics["adv_mean"] == pytest.approx(0.125)
    assert out.metrics["adv_std"] == pytest.approx(float(adv.std(correction=0)))
    assert out.metrics["adv_min"] == -1.0
    assert out.metrics["adv_max"] == 1.0
    assert out.metrics["adv_zero_frac"] == 0.25
    assert "entropy_mean" not in cispo_loss(lp, rollout, adv, mask).metrics


def test_metrics_are_plain_floats_with_a_stable_key_set() -> None:
    lp, rollout, adv, mask = batch(3)
    out = cispo_loss(
        lp, rollout, adv, mask, ref_logprobs=rollout, entropy=torch.rand(4, 6, dtype=F64)
    )
    assert all(type(v) is float for v in out.metrics.values())
    expected = {
        "loss", "policy_loss", "kl_loss", "entropy_loss", "mismatch_kl", "masked_frac_low",
        "masked_frac_high", "masked_frac", "omega_mean", "omega_min", "omega_max", "omega_p1",
        "omega_p10", "omega_p50", "omega_p90", "omega_p99", "entropy_mean", "adv_mean", "adv_std",
        "adv_min", "adv_max", "adv_zero_frac", "trainable_tokens", "rollouts", "normalizer",
    }  # fmt: skip
    assert set(out.metrics) == expected
    assert out.metrics["loss"] == pytest.approx(float(out.loss.detach()))


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=200),
    st.lists(st.floats(0, 1), min_size=1, max_size=5),
)
def test_quantiles_match_torch_quantile(values: list[float], qs: list[float]) -> None:
    t = torch.tensor(values, dtype=F64)
    got = torch.stack(quantiles(t, tuple(qs)))
    torch.testing.assert_close(
        got, torch.quantile(t, torch.tensor(qs, dtype=F64)), rtol=1e-9, atol=1e-6
    )


def test_empty_sets_are_nan() -> None:
    empty = torch.zeros(0, dtype=F64)
    assert all(math.isnan(float(v)) for v in quantiles(empty, (0.5,)))
    assert all(math.isnan(float(v)) for v in summary(empty, "x").values())
    assert to_floats({}) == {}


@pytest.mark.parametrize(
    ("q", "key"),
    [(0.5, "omega_p50"), (0.01, "omega_p1"), (0.999, "omega_p99.9"), (1.0, "omega_p100")],
)
def test_quantile_keys(q: float, key: str) -> None:
    assert quantile_key(q) == key


@given(
    st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=1, max_size=60),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6),
)
def test_public_quantiles_match_numpy(values: list[float], qs: list[float]) -> None:
    import cispo_loss

    np = pytest.importorskip("numpy")  # not a dependency of cispo-loss; torch usually brings it
    got = [float(v) for v in cispo_loss.quantiles(torch.tensor(values, dtype=F64), tuple(qs))]
    assert got == pytest.approx(np.quantile(np.array(values), qs).tolist(), rel=1e-12, abs=1e-12)


@given(
    st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.booleans()), max_size=60),
    st.lists(st.floats(0, 1), min_size=1, max_size=5),
)
def test_masked_statistics_equal_the_statistics_of_the_selection(
    pairs: list[tuple[float, bool]], qs: list[float]
) -> None:
    """The sync-free masked forms give what boolean indexing + the plain forms give."""
    from cispo_loss._metrics import masked_quantiles, masked_summary

    values = torch.tensor([v for v, _ in pairs], dtype=F64)
    mask = torch.tensor([k for _, k in pairs], dtype=torch.bool)
    got = [float(v) for v in masked_quantiles(values, mask, tuple(qs))]
    want = [float(v) for v in quantiles(values[mask], tuple(qs))]
    assert got == pytest.approx(want, nan_ok=True, rel=0, abs=0)  # bit for bit
    got_summary = {k: float(v) for k, v in masked_summary(values, mask, "x").items()}
    want_summary = {k: float(v) for k, v in summary(values[mask], "x").items()}
    assert got_summary == pytest.approx(want_summary, nan_ok=True, rel=1e-9, abs=1e-6)
