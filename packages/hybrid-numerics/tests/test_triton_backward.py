"""Gradients of the Triton chunk path (state-scan backward kernel) - on CUDA, or on CPU under
TRITON_INTERPRET=1 (set by conftest when there is no GPU).

Checked against float64 autograd through the oracle (the issue's 1e-5 RMS-relative bound), the
torch path's gradients, and - for the scan alone - the torch path's hand-written ``_Scan``
backward. Shapes are small (the interpreter runs every program in Python) but cover several
chunks of the Triton path's C = 64 including a partial one, masked K and V blocks, grouped value
heads, packed sequences and the initial state on and off.
"""

from __future__ import annotations

import copy
import dataclasses
import os

import pytest
import torch

from hybrid_numerics import Backend, chunk_gated_delta_rule, gdn_gate, reference_gated_delta_rule

from .conftest import GDNInputs, make_gdn_inputs, rms_rel

pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)
TOL = 1e-5  # the acceptance bound: FP32 gradients vs float64, RMS-relative
NAMES = ("dq", "dk", "dv", "dg", "dbeta", "dh0")


def _loss_grads(
    x: GDNInputs, with_h0: bool, final: bool, seed: int, **kw: object
) -> tuple[torch.Tensor, ...]:
    """Gradients of ``<o, do> + <final, ds>`` w.r.t. q, k, v, g, beta (and h0)."""
    o, s = (reference_gated_delta_rule if kw.get("backend") is None else chunk_gated_delta_rule)(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0 if with_h0 else None,
        output_final_state=True, **kw,
    )  # fmt: skip
    assert s is not None
    gen = torch.Generator().manual_seed(seed)
    do = torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.device, o.dtype)
    ds = torch.randn(s.shape, generator=gen, dtype=torch.float64).to(s.device, s.dtype)
    loss = (o * do).sum() + ((s * ds).sum() if final else 0.0)
    leaves = x.tensors() if with_h0 else x.tensors()[:5]
    return torch.autograd.grad(loss, leaves)


def _leaves(x: GDNInputs, dtype: torch.dtype, device: str = "cpu") -> GDNInputs:
    return GDNInputs(*(t.detach().to(device, dtype).requires_grad_() for t in x.tensors()))


CASES = {
    # name: (B, T, H, HV, K, V, cu_seqlens, with_h0, l2norm, final)
    "dense-grouped-h0-l2": (2, 130, 1, 2, 16, 24, None, True, True, True),
    "dense-no-h0": (1, 129, 2, 2, 12, 16, None, False, False, True),
    "dense-output-only": (1, 70, 1, 2, 16, 8, None, True, True, False),
    "varlen-grouped-h0": (1, 130, 2, 4, 16, 8, (0, 1, 65, 130), True, True, True),
    "varlen-no-h0": (1, 120, 1, 3, 16, 16, (0, 70, 120), False, True, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_triton_chunk_gradients_match_float64_and_the_torch_path(case: str) -> None:
    B, T, H, HV, K, V, cu, with_h0, l2, final = CASES[case]
    n_seq = None if cu is None else len(cu) - 1
    x = make_gdn_inputs(B, T, H, HV, K, V, seed=T + K + V, N=n_seq)
    if not l2:  # keys of norm ~1 keep the rule contractive (see test_chunk_torch)
        x = dataclasses.replace(x, k=x.k / K**0.5)
    kw: dict[str, object] = {"use_qk_l2norm": l2}
    cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32)
    want = _loss_grads(_leaves(x, torch.float64), with_h0, final, 1, cu_seqlens=cu_t, **kw)
    dev_cu = None if cu_t is None else cu_t.to(DEVICE)
    got = _loss_grads(_leaves(x, torch.float32, DEVICE), with_h0, final, 1, cu_seqlens=dev_cu,
                      backend="triton", **kw)  # fmt: skip
    ref32 = _loss_grads(_leaves(x, torch.float32), with_h0, final, 1, cu_seqlens=cu_t,
                        backend="torch", **kw)  # fmt: skip
    for name, a, e, t in zip(NAMES, got, want, ref32, strict=False):
        assert a.dtype == torch.float32, name
        assert rms_rel(a.cpu(), e) <= TOL, (name, rms_rel(a.cpu(), e))
        assert rms_rel(a.cpu(), t) <= 1e-6, (name, rms_rel(a.cpu(), t))


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
                y.q, y.k, y.v, params[0], y.beta, A_log=params[1], dt_bias=params[2],
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


@pytest.mark.parametrize("with_h0", [True, False])
def test_scan_backward_matches_the_torch_scan_and_float64(with_h0: bool) -> None:
    """The scan alone: ``_TritonScan`` vs ``_Scan`` (FP32) and a float64 loop under autograd.
    K = 12, V = 24: masked key rows and a partial value block."""
    from hybrid_numerics._chunk_torch import _Scan
    from hybrid_numerics._triton_scan import scan_states

    N, NC, C, K, V = 3, 3, 64, 12, 24
    gen = torch.Generator().manual_seed(7)

    def randn(*shape: int, s: float = 1.0) -> torch.Tensor:
        return s * torch.randn(*shape, generator=gen, dtype=torch.float64)

    # W and Kd ~ 0.1 keep the per-chunk map contractive, as real UT terms are.
    w, u, kd = randn(N, NC, C, K, s=0.1), randn(N, NC, C, V), randn(N, NC, C, K, s=0.1)
    a = torch.rand(N, NC, generator=gen, dtype=torch.float64)
    h0, ds = randn(N, K, V), randn(N, NC + 1, K, V)
    inputs = (w, u, kd, a, h0) if with_h0 else (w, u, kd, a)

    def leaves(dtype: torch.dtype, device: str = "cpu") -> list[torch.Tensor]:
        return [t.to(device, dtype).requires_grad_() for t in inputs]

    def loop(w: torch.Tensor, u: torch.Tensor, kd: torch.Tensor, a: torch.Tensor,
             h0: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        s = torch.zeros(N, K, V, dtype=w.dtype) if h0 is None else h0
        states = [s]
        for c in range(NC):
            s = a[:, c, None, None] * s + kd[:, c].mT @ (u[:, c] - w[:, c] @ s)
            states.append(s)
        return torch.stack(states, 1)

    x64 = leaves(torch.float64)
    want = torch.autograd.grad((loop(*x64) * ds).sum(), x64)
    x32 = leaves(torch.float32, DEVICE)
    entering, finals = scan_states(*x32, *([] if with_h0 else [None]))
    assert entering.dtype == torch.float32
    assert finals.is_contiguous()
    want_states = loop(*x64)
    assert rms_rel(entering.cpu(), want_states[:, :NC]) <= 1e-6
    assert rms_rel(finals.cpu(), want_states[:, NC]) <= 1e-6
    ds32 = ds.float().to(DEVICE)
    loss = (entering * ds32[:, :NC]).sum() + (finals * ds32[:, NC]).sum()
    got = torch.autograd.grad(loss, x32)
    # The torch path's scan on the same FP32 inputs (chunk-major layout [NC, N, ...]).
    t32 = leaves(torch.float32)
    cm = [t.transpose(0, 1) for t in t32[:3]]
    state = t32[4] if with_h0 else torch.zeros(N, K, V)
    entering, final, _ = _Scan.apply(cm[1], cm[0], cm[2], t32[3].T.reshape(NC, N, 1, 1), state)
    loss = (entering.transpose(0, 1) * ds[:, :NC].float()).sum() + (final * ds[:, NC].float()).sum()
    torch_scan = torch.autograd.grad(loss, t32)
    for name, g_, w_, t_ in zip(("dW", "du", "dKd", "da", "dh0"), got, want, torch_scan,
                                strict=False):  # fmt: skip
        assert rms_rel(g_.cpu(), w_) <= 1e-6, (name, rms_rel(g_.cpu(), w_))
        assert rms_rel(g_.cpu(), t_) <= 1e-6, (name, rms_rel(g_.cpu(), t_))


def test_patched_model_gradients_on_the_triton_backend_match_float64() -> None:
    """A training step of a patched Qwen3.5 (fused gate, l2norm, grouped heads, bf16-free):
    every GDN-layer parameter gradient vs the same model in float64 on the torch path.

    The FP32 torch path gets the same check in ``test_qwen3_5.py`` (its gate-parameter
    gradients were 5e-6 - 5.5e-5 off here until ``_PairwiseDecay``'s backward stopped
    cancelling; the Triton path's are 4e-7 - 7e-7: its decay autograd is float64)."""
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
