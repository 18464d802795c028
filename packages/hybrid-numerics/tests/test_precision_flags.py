"""TF32 stays off for the torch products that touch the state, whatever the process set."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from hybrid_numerics import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from hybrid_numerics._precision_flags import ieee_fp32, state_bmm

from .conftest import make_gdn_inputs, rms_rel

matmul = torch.backends.cuda.matmul
#: torch >= 2.9 has ``fp32_precision`` (and refuses mixing it with ``allow_tf32``); older
#: releases, down to the declared torch 2.5, only ``allow_tf32``.
NEW_API = hasattr(matmul, "fp32_precision")


def _setting() -> str:
    """The process's CUDA FP32 matmul setting, as the new API spells it."""
    if NEW_API:
        return str(matmul.fp32_precision)
    return "tf32" if matmul.allow_tf32 else "ieee"


@pytest.fixture
def tf32_enabled() -> Iterator[None]:
    name = "fp32_precision" if NEW_API else "allow_tf32"
    before = getattr(matmul, name)
    setattr(matmul, name, "tf32" if NEW_API else True)
    yield
    setattr(matmul, name, before)


def test_ieee_block_switches_tf32_off_and_restores(tf32_enabled: None) -> None:
    with ieee_fp32():
        assert _setting() == "ieee"
    assert _setting() == "tf32"
    with pytest.raises(RuntimeError, match="boom"), ieee_fp32():
        raise RuntimeError("boom")
    assert _setting() == "tf32"  # restored on the error path too
    with ieee_fp32(enabled=False):  # CPU callers: the flag only changes CUDA products
        assert _setting() == "tf32"


def test_state_bmm_matches_matmul_in_value_and_gradient(tf32_enabled: None) -> None:
    a = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    s = torch.randn(1, 5, 6, dtype=torch.float64, requires_grad=True)  # broadcast batch
    out = state_bmm(a, s)
    assert torch.allclose(out, a @ s)
    da, ds = torch.autograd.grad((out**2).sum(), (a, s))
    want_da, want_ds = torch.autograd.grad(((a @ s) ** 2).sum(), (a, s))
    assert rms_rel(da, want_da) <= 1e-12
    assert rms_rel(ds, want_ds) <= 1e-12
    assert ds.shape == s.shape


@pytest.mark.parametrize("fn", [chunk_gated_delta_rule, fused_recurrent_gated_delta_rule])
def test_calls_leave_the_process_setting_alone(fn: object, tf32_enabled: None) -> None:
    x = make_gdn_inputs(1, 20, 1, 2, 8, 8, seed=1).cast(torch.float32)
    o, _ = fn(x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, backend="torch")  # type: ignore[operator]
    assert o.shape == (1, 20, 2, 8)
    assert _setting() == "tf32"
