"""The fused FP32 gate ``g = -exp(A_log) * softplus(a + dt_bias)``."""

from __future__ import annotations

import torch

from hybrid_numerics import gdn_gate

from .conftest import rms_rel


def test_gate_is_fp32_from_bf16_operands_and_matches_float64() -> None:
    a = torch.randn(3, 5, 4).bfloat16()
    A_log = torch.log(torch.tensor([0.01, 1.0, 7.0, 16.0])).bfloat16()
    dt_bias = torch.tensor([0.1, -2.0, 0.5, 3.0]).bfloat16()
    g = gdn_gate(a, A_log, dt_bias)
    assert g.dtype == torch.float32
    want = -A_log.double().exp() * torch.nn.functional.softplus(a.double() + dt_bias.double())
    assert rms_rel(g, want) < 1e-6
    assert bool((g <= 0).all())


def test_gate_gradients_flow_to_every_parameter_in_its_own_dtype() -> None:
    a = torch.randn(2, 3, requires_grad=True)
    A_log = torch.zeros(3, dtype=torch.float32, requires_grad=True)
    dt_bias = torch.zeros(3, dtype=torch.bfloat16, requires_grad=True)
    gdn_gate(a, A_log, dt_bias).sum().backward()
    assert a.grad is not None
    assert A_log.grad is not None
    assert dt_bias.grad is not None
    assert dt_bias.grad.dtype == torch.bfloat16
    # d/dA_log of -exp(A_log) softplus(x) = g itself; at A_log = 0, dt_bias = 0: -sum softplus(a)
    torch.testing.assert_close(A_log.grad, -torch.nn.functional.softplus(a.detach()).sum(0))


def test_gate_without_dt_bias() -> None:
    a = torch.randn(4, 2)
    A_log = torch.zeros(2)
    torch.testing.assert_close(gdn_gate(a, A_log), -torch.nn.functional.softplus(a))
