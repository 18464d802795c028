"""Gradients of the Triton chunk path through the layers around the kernels - the fused FP32
gate (``A_log``, ``dt_bias``) and a patched Qwen3.5's training step - on CUDA, or on CPU under
TRITON_INTERPRET=1 (set by conftest when there is no GPU). The kernels' own gradients are
tested in ``test_triton_chunk_bwd.py``.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch

from hybrid_numerics import Backend, chunk_gated_delta_rule, gdn_gate, reference_gated_delta_rule

from .conftest import GDNInputs, make_gdn_inputs, require_triton, rms_rel

require_triton()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)
TOL = 1e-5  # the acceptance bound: FP32 gradients vs float64, RMS-relative
NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


def test_triton_fused_gate_gradients_reach_A_log_and_dt_bias() -> None:
    x = make_gdn_inputs(1, 70, 1, 2, 16, 8, seed=5)
    a = torch.randn(1, 70, 2, dtype=torch.float64)
    A_log = torch.log(torch.tensor([0.5, 8.0], dtype=torch.float64))
    dt_bias = torch.tensor([0.3, -1.0], dtype=torch.float64)

    def grads(dtype: torch.dtype, device: str, fused: bool) -> tuple[torch.Tensor, ...]:
        y = GDNInputs(*(t.to(device, dtype) for t in x.tensors()))
        params = tuple(t.detach().to(device, dtype).requires_grad_() for t in (a, A_log, dt_bias))
        if fused:
            o, s = chunk_gated_delta_rule(
                y.q, y.k, y.v, params[0], y.beta, use_gate_in_kernel=True, A_log=params[1],
                dt_bias=params[2],
                initial_state=y.h0, output_final_state=True, use_qk_l2norm=True, backend="triton",
            )  # fmt: skip
        else:
            o, s = reference_gated_delta_rule(
                y.q, y.k, y.v, gdn_gate(*params), y.beta, initial_state=y.h0,
                output_final_state=True, use_qk_l2norm=True,
            )  # fmt: skip
        assert s is not None
        return torch.autograd.grad((o.double() ** 2).sum() + s.double().sum(), params)

    want = grads(torch.float64, "cpu", fused=False)
    got = grads(torch.float32, DEVICE, fused=True)
    for name, g_, w in zip(("da", "dA_log", "ddt_bias"), got, want, strict=True):
        assert rms_rel(g_.cpu(), w) <= TOL, (name, rms_rel(g_.cpu(), w))


def test_patched_model_gradients_on_the_triton_backend_match_float64() -> None:
    """A training step of a patched Qwen3.5 (fused gate, l2norm, grouped heads, bf16-free):
    every GDN-layer parameter gradient vs the same model in float64 on the torch path.

    The FP32 torch path gets the same check in ``test_qwen3_5.py`` (its gate-parameter
    gradients were 5e-6 - 5.5e-5 off here until ``_PairwiseDecay``'s backward stopped
    cancelling; the fused Triton backward's are within 1.2e-6: its log-decay sums are float64)."""
    transformers = pytest.importorskip("transformers")
    from hybrid_numerics import patch_qwen3_5

    from .conftest import tiny_qwen3_5_config

    torch.manual_seed(0)
    model = transformers.Qwen3_5ForCausalLM(tiny_qwen3_5_config())
    ids = torch.randint(0, 96, (2, 70))

    def grads(m: torch.nn.Module, backend: Backend, device: str) -> dict[str, torch.Tensor]:
        patch_qwen3_5(m, backend=backend)
        m.to(device).zero_grad()
        m(ids.to(device), labels=ids.to(device)).loss.backward()
        return {n: p.grad.cpu() for n, p in m.named_parameters() if p.grad is not None}

    want = grads(copy.deepcopy(model).double(), "torch", "cpu")
    got = grads(model, "triton", DEVICE)
    gdn = [n for n in want if "linear_attn" in n]
    assert any("A_log" in n for n in gdn)
    assert any("dt_bias" in n for n in gdn)
    for name in gdn:
        assert rms_rel(got[name], want[name]) <= TOL, (name, rms_rel(got[name], want[name]))
