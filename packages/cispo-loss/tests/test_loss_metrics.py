"""Metric levels, laziness (no host copy and no sort until read) and the absence of device syncs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cispo_loss import LossConfig, LossMetrics, cispo_loss, quantiles
from cispo_loss import _metrics as metrics_module
from cispo_loss._metrics import quantile_key

F64 = torch.float64
QUANTILE_KEYS = {"omega_p1", "omega_p10", "omega_p50", "omega_p90", "omega_p99"}
BASIC_KEYS = {
    "loss", "policy_loss", "kl_loss", "entropy_loss", "mismatch_kl", "masked_frac_low",
    "masked_frac_high", "masked_frac", "omega_mean", "omega_min", "omega_max", "entropy_mean",
    "adv_mean", "adv_std", "adv_min", "adv_max", "adv_zero_frac", "trainable_tokens", "rollouts",
    "normalizer",
}  # fmt: skip


def batch(seed: int, rows: int = 4, length: int = 6) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    rollout = -torch.rand(rows, length, generator=gen, dtype=F64) * 2
    lp = (rollout + torch.randn(rows, length, generator=gen, dtype=F64) * 0.7).clamp(max=0)
    return {
        "logprobs": lp.requires_grad_(True),
        "rollout_logprobs": rollout,
        "advantages": torch.randn(rows, generator=gen, dtype=F64),
        "loss_mask": torch.rand(rows, length, generator=gen) < 0.7,
    }


def call(b: dict[str, torch.Tensor], **kwargs: Any) -> Any:
    return cispo_loss(
        b["logprobs"], b["rollout_logprobs"], b["advantages"], b["loss_mask"], **kwargs
    )


def test_levels_select_the_keys() -> None:
    b = batch(0)
    extra = {"ref_logprobs": b["rollout_logprobs"], "entropy": torch.rand(4, 6, dtype=F64)}
    assert set(call(b, metrics="none", **extra).metrics) == set()
    assert set(call(b, metrics="basic", **extra).metrics) == BASIC_KEYS
    assert set(call(b, metrics="full", **extra).metrics) == BASIC_KEYS | QUANTILE_KEYS
    assert set(call(b, **extra).metrics) == BASIC_KEYS | QUANTILE_KEYS  # "full" is the default
    with pytest.raises(ValueError, match=r"^metrics: "):
        call(b, metrics="all")


def copied(metrics: LossMetrics) -> bool:
    return metrics.on_host  # a call, so mypy does not narrow the property across a read


def test_metrics_are_copied_to_the_host_on_first_read_only() -> None:
    out = call(batch(1))
    assert isinstance(out.metrics, LossMetrics)
    assert not out.metrics.on_host
    assert "loss" in out.metrics
    assert len(out.metrics) == len(BASIC_KEYS) - 3 + len(QUANTILE_KEYS)
    assert not out.metrics.on_host  # keys, `in` and len never touch the values
    assert out.metrics["loss"] == pytest.approx(float(out.loss.detach()))
    assert copied(out.metrics)
    with pytest.raises(KeyError):
        out.metrics["omega_p42"]


def test_quantiles_are_sorted_only_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = metrics_module.masked_quantiles

    def counting(*args: Any) -> list[torch.Tensor]:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(metrics_module, "masked_quantiles", counting)
    out = call(batch(2))
    assert calls == []
    assert out.metrics["loss"] == pytest.approx(float(out.loss.detach()))
    assert calls == []  # reading the scalars does not sort
    _ = out.metrics["omega_p50"], out.metrics["omega_p90"], dict(out.metrics)
    assert calls == [1]  # the first quantile read sorts, once
    call(batch(2), metrics="basic").metrics["loss"]
    assert calls == [1]


def _omega(b: dict[str, torch.Tensor]) -> torch.Tensor:
    return (b["logprobs"].detach() - b["rollout_logprobs"])[b["loss_mask"]].exp()


@given(
    seed=st.integers(0, 2**31 - 1),
    rows=st.integers(1, 5),
    length=st.integers(1, 9),
    levels=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5),
)
@settings(max_examples=40)
def test_lazy_values_equal_the_eager_ones(
    seed: int, rows: int, length: int, levels: list[float]
) -> None:
    """What the lazy mapping reports is what an eager computation on ``ω[mask]`` gives."""
    b = batch(seed, rows, length)
    config = LossConfig(omega_quantiles=tuple(levels))
    out = call(b, config=config)
    omega = _omega(b)
    eager = dict(zip(map(quantile_key, levels), quantiles(omega, tuple(levels)), strict=False))
    for key, value in eager.items():
        assert math.isnan(out.metrics[key]) if omega.numel() == 0 else out.metrics[key] == value
    if omega.numel():
        assert out.metrics["omega_min"] == float(omega.min())
        assert out.metrics["omega_max"] == float(omega.max())
        assert out.metrics["omega_mean"] == pytest.approx(float(omega.mean()), rel=1e-12)
    assert out.metrics["trainable_tokens"] == omega.numel()
    # the on-device view holds the same numbers; "basic" agrees with "full" on its keys
    assert {k: float(v) for k, v in out.metrics.tensors().items()} == pytest.approx(
        dict(out.metrics), nan_ok=True
    )
    basic = call(b, config=config, metrics="basic").metrics
    assert dict(basic) == pytest.approx({k: out.metrics[k] for k in basic}, nan_ok=True)


def test_per_token_advantage_statistics_over_trainable_tokens() -> None:
    b = batch(3)
    per_token = torch.randn(4, 6, dtype=F64)
    out = cispo_loss(b["logprobs"], b["rollout_logprobs"], per_token, b["loss_mask"])
    kept = per_token[b["loss_mask"]]
    assert out.metrics["adv_min"] == float(kept.min())
    assert out.metrics["adv_max"] == float(kept.max())
    assert out.metrics["adv_std"] == pytest.approx(float(kept.std(correction=0)), rel=1e-12)
    assert out.metrics["adv_zero_frac"] == 0.0


# -- device syncs --------------------------------------------------------------------------------


class SyncCounter:
    """Counts the Python-visible ways of reading a tensor on the host (each a sync on a GPU),
    plus the two data-dependent-size ops that sync inside torch: boolean indexing and
    ``repeat_interleave`` without ``output_size``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__"):
            self._wrap(monkeypatch, name, lambda *a, **k: True)
        self._wrap(monkeypatch, "nonzero", lambda *a, **k: True)
        self._wrap(
            monkeypatch,
            "__getitem__",
            lambda self_, index: isinstance(index, torch.Tensor) and index.dtype == torch.bool,
        )
        self._wrap(
            monkeypatch,
            "repeat_interleave",
            lambda self_, repeats, *a, **k: (
                isinstance(repeats, torch.Tensor) and k.get("output_size") is None
            ),
        )

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, name: str, syncs: Callable[..., bool]) -> None:
        real = getattr(torch.Tensor, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if syncs(*args, **kwargs):
                self.calls.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapper)


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> SyncCounter:
    return SyncCounter(monkeypatch)


UNCHECKED = LossConfig(check_inputs=False)


@pytest.mark.parametrize("level", ["none", "basic", "full"])
@pytest.mark.parametrize("normalizer", [None, 17.0, "tensor"])
def test_no_host_sync_until_the_metrics_are_read(
    syncs: SyncCounter, level: str, normalizer: object
) -> None:
    b = batch(4)
    norm = torch.tensor(17.0, dtype=F64) if normalizer == "tensor" else normalizer
    out = call(b, config=UNCHECKED, metrics=level, normalizer=norm)
    out.loss.backward()
    assert syncs.calls == []
    dict(out.metrics)
    assert (syncs.calls != []) == (level != "none")  # the counter does see the one copy


def test_packed_batch_without_checks_does_not_sync(syncs: SyncCounter) -> None:
    lp = torch.tensor([-0.5, -1.0, -0.2, -0.4], dtype=F64, requires_grad=True)
    out = cispo_loss(
        lp,
        lp.detach() - 0.1,
        torch.tensor([1.0, -1.0], dtype=F64),
        torch.ones(4, dtype=torch.bool),
        cu_seqlens=torch.tensor([0, 3, 4]),
        config=UNCHECKED,
        metrics="basic",
    )
    assert syncs.calls == []
    assert out.metrics["rollouts"] == 2.0


def test_input_checks_are_syncs(syncs: SyncCounter) -> None:
    """The counter is not blind: the default checks read values on the host."""
    call(batch(5), metrics="none")
    assert syncs.calls != []


@pytest.mark.gpu
def test_cuda_call_without_checks_never_synchronises() -> None:
    b = {k: v.detach().cuda() for k, v in batch(6).items()}
    b["logprobs"].requires_grad_(True)
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for level in ("none", "basic", "full"):
            out = call(b, config=UNCHECKED, metrics=level)
            out.metrics.tensors()
            out.loss.backward()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    assert out.metrics["loss"] == pytest.approx(float(out.loss.detach()))
