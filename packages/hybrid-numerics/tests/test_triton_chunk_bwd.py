"""The fused Triton chunk backward (:mod:`hybrid_numerics._triton_chunk_bwd`) against float64
autograd through the oracle - on CUDA, or on CPU under TRITON_INTERPRET=1 (set by conftest).

One loss ``<o, do> + <final, ds>`` exercises every backward kernel: dq (dqkwg kernel), dk (dqkwg
+ WY kernels, l2norm backward), dv/dbeta (WY kernel), dg (both, reverse cumulative sums), dh0
(the reverse scan). Shapes are tiny (the interpreter runs each program in Python) but cover
grouped value heads (HV = 2H), the initial state on and off, T not a multiple of the chunk (64),
strong decay, l2norm on and off, masked K/V blocks (K = 12, V = 24), ragged packed sequences
(1, 63, 64, 100 tokens, no padding) and bf16 inputs.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pytest
import torch

from hybrid_numerics import chunk_gated_delta_rule, reference_gated_delta_rule

from .conftest import GDNInputs, make_gdn_inputs, require_triton, rms_rel

require_triton()
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytestmark = pytest.mark.skipif(
    DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)
TOL = 1e-5  # the acceptance bound: FP32 gradients vs float64, RMS-relative (measured ~1e-7)
NAMES = ("o", "final", "dq", "dk", "dv", "dg", "dbeta", "dh0")


@dataclasses.dataclass(frozen=True)
class Case:
    B: int
    T: int
    H: int
    HV: int
    K: int
    V: int
    lengths: tuple[int, ...] | None = None  # packed sequences (B = 1, T = their sum)
    with_h0: bool = True
    l2norm: bool = True
    strong_decay: bool = False

    def inputs(self) -> tuple[GDNInputs, torch.Tensor | None]:
        cu = None
        if self.lengths is not None:
            cu = torch.tensor(
                [0, *torch.tensor(self.lengths).cumsum(0).tolist()], dtype=torch.int32
            )
        n_seq = None if self.lengths is None else len(self.lengths)
        x = make_gdn_inputs(self.B, self.T, self.H, self.HV, self.K, self.V, seed=self.T, N=n_seq)
        if not self.l2norm:  # keys of norm ~1 keep the rule contractive
            x = dataclasses.replace(x, k=x.k / self.K**0.5)
        if self.strong_decay:  # decays down to e^-20 per token: the in-chunk factors underflow
            x = dataclasses.replace(x, g=x.g * 20.0)
        return x, cu


CASES = {
    "varlen-ragged-grouped-h0": Case(1, 228, 1, 2, 16, 16, lengths=(1, 63, 64, 100)),
    "dense-masked-kv-no-h0-no-l2": Case(1, 100, 1, 2, 12, 24, with_h0=False, l2norm=False),
    "dense-strong-decay-grouped": Case(1, 100, 1, 2, 16, 8, strong_decay=True),
}


def _run(
    x: GDNInputs,
    cu: torch.Tensor | None,
    case: Case,
    dtype: torch.dtype,
    *,
    triton: bool,
    final_grad: bool = True,
    cotangent_dtype: torch.dtype | None = None,
    do: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """``(o, final, dq, dk, dv, dg, dbeta[, dh0])`` of ``<o, do> + <final, ds>`` (fixed
    cotangents, rounded to the output's dtype so both sides see the same ones; ``do`` given:
    that one)."""
    device = DEVICE if triton else "cpu"
    state_dtype = torch.float32 if triton else torch.float64
    leaves = [t.detach().to(device, dtype).requires_grad_() for t in x.tensors()[:5]]
    h0 = x.h0.detach().to(device, state_dtype).requires_grad_() if case.with_h0 else None
    fn = chunk_gated_delta_rule if triton else reference_gated_delta_rule
    kw: dict[str, Any] = {"backend": "triton"} if triton else {}
    o, s = fn(*leaves, initial_state=h0, output_final_state=True, use_qk_l2norm=case.l2norm,
              cu_seqlens=None if cu is None else cu.to(device), **kw)  # fmt: skip
    assert s is not None
    gen = torch.Generator().manual_seed(1)
    ds = torch.randn(s.shape, generator=gen, dtype=torch.float64)
    if do is None:
        do = torch.randn(o.shape, generator=gen, dtype=torch.float64)
    do = do.to(cotangent_dtype or dtype).to(device, o.dtype)
    loss = (o * do).sum() + ((s * ds.to(device, s.dtype)).sum() if final_grad else 0.0)
    grads = torch.autograd.grad(loss, leaves + ([h0] if h0 is not None else []))
    return (o, s, *grads)


def _check(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...], tol: float) -> None:
    for name, a, e in zip(NAMES, got, want, strict=False):
        err = rms_rel(a.cpu(), e)
        assert err <= tol, (name, err)


@pytest.mark.parametrize("name", list(CASES))
def test_fused_backward_matches_float64(name: str) -> None:
    case = CASES[name]
    x, cu = case.inputs()
    got = _run(x, cu, case, torch.float32, triton=True)
    want = _run(x, cu, case, torch.float64, triton=False)
    assert len(got) == (8 if case.with_h0 else 7)
    for grad, leaf in zip(got[2:7], x.tensors()[:5], strict=True):
        assert grad.dtype == torch.float32
        assert grad.shape == leaf.shape
    assert got[1].is_contiguous()
    _check(got, want, TOL)


def test_bf16_inputs_return_bf16_gradients_near_float64() -> None:
    """bf16 q/k/v/g/beta: gradients come back in bf16; the oracle runs on the same rounded
    inputs, so the error left is the outputs' and gradients' final bf16 rounding (truncation
    under the interpreter) - the state and everything in between stay FP32."""
    case = Case(1, 40, 1, 2, 16, 16)
    x, cu = case.inputs()
    rounded = GDNInputs(*(t.to(torch.bfloat16).double() for t in x.tensors()[:5]), x.h0)
    got = _run(x, cu, case, torch.bfloat16, triton=True)
    want = _run(rounded, cu, case, torch.float64, triton=False, cotangent_dtype=torch.bfloat16)
    for grad in got[2:7]:
        assert grad.dtype == torch.bfloat16
    assert got[1].dtype == torch.float32
    assert rms_rel(got[1].cpu(), want[1]) <= TOL  # the final state: FP32-accurate
    _check(got, want, 1e-2)


def test_output_only_loss_and_packed_equals_per_sequence_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Packed input (no padding) gives the gradients of separate per-sequence calls, with a
    loss on the output only; and the route is the fused Function and its Triton backward (a
    spy on the launcher), not the old torch-glue route."""
    import hybrid_numerics._triton_chunk_bwd as chunk_bwd
    from hybrid_numerics._triton_chunk import ChunkPlan

    calls: list[int] = []
    launcher = chunk_bwd.chunk_backward

    def spy(plan: ChunkPlan, *args: object) -> tuple[torch.Tensor | None, ...]:
        calls.append(plan.NT)
        return launcher(plan, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(chunk_bwd, "chunk_backward", spy)
    case = Case(1, 91, 1, 1, 12, 24, lengths=(1, 70, 20), l2norm=False)
    x, cu = case.inputs()
    assert cu is not None
    do = torch.randn(1, 91, 1, 24, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    packed = _run(x, cu, case, torch.float32, triton=True, final_grad=False, do=do)
    q, k, v, g, beta = (t.to(DEVICE, torch.float32).requires_grad_() for t in x.tensors()[:5])
    o, _ = chunk_gated_delta_rule(
        q, k, v, g, beta,
        initial_state=x.h0.to(DEVICE, torch.float32), cu_seqlens=cu.to(DEVICE), backend="triton",
    )  # fmt: skip
    assert type(o.grad_fn).__name__ == "ChunkGatedDeltaRuleBackward"
    assert calls == [1 + 2 + 1]  # ceil(len / 64) chunks per sequence: no chunk-aligned padding
    for n in range(3):
        a, b = int(cu[n]), int(cu[n + 1])
        one = dataclasses.replace(case, T=b - a, lengths=None)
        part = GDNInputs(*(t[:, a:b] for t in x.tensors()[:5]), x.h0[n : n + 1])
        alone = _run(part, None, one, torch.float32, triton=True, final_grad=False,
                     do=do[:, a:b])  # fmt: skip
        pieces = [t[:, a:b] for t in packed[2:7]]
        assert calls[-1] == -(-(b - a) // 64)  # this sequence's own chunks only
        for name, p, s in zip(NAMES[2:], [*pieces, packed[7][n : n + 1]], alone[2:], strict=True):
            assert rms_rel(p.cpu(), s.cpu()) <= 1e-6, (name, n, rms_rel(p.cpu(), s.cpu()))


def test_state_cache_slots_get_gradients_and_final_states() -> None:
    """With ``state_cache``/``state_indices`` the gradient route starts from the slots (a
    negative slot: zeros), writes the final states back in place, and the initial slots'
    gradients are the float64 oracle's initial-state gradients (other slots: zero)."""
    case = Case(2, 40, 1, 2, 16, 16)
    x, _ = case.inputs()
    cache0 = torch.randn(4, 2, 16, 16, generator=torch.Generator().manual_seed(3))
    slots = torch.tensor([2, -1])
    h0 = torch.stack([cache0[2].double(), torch.zeros(2, 16, 16, dtype=torch.float64)])
    do = torch.randn(2, 40, 2, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    want = _run(dataclasses.replace(x, h0=h0), None, case, torch.float64, triton=False,
                final_grad=False, do=do)  # fmt: skip
    cache = cache0.clone().to(DEVICE).requires_grad_()
    leaves = [t.to(DEVICE, torch.float32).requires_grad_() for t in x.tensors()[:5]]
    pool = cache.clone()  # a non-leaf pool: written in place, its initial slots differentiable
    o, _ = chunk_gated_delta_rule(*leaves, state_cache=pool, state_indices=slots.to(DEVICE),
                                  use_qk_l2norm=True, backend="triton")  # fmt: skip
    torch.autograd.backward([(o * do.to(DEVICE, o.dtype)).sum()])
    assert rms_rel(pool[2].detach().cpu(), want[1][0]) <= TOL  # final state, in place
    assert torch.equal(pool[[0, 1, 3]].detach(), cache0[[0, 1, 3]].to(DEVICE))
    assert cache.grad is not None
    assert rms_rel(cache.grad[2].cpu(), want[7][0]) <= TOL
    assert torch.count_nonzero(cache.grad[[0, 1, 3]]) == 0
    for name, a, e in zip(NAMES[2:7], [t.grad for t in leaves], want[2:7], strict=True):
        assert a is not None
        assert rms_rel(a.cpu(), e) <= TOL, name
