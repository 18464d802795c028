"""The vectorised torch chunk path against the float64 oracle (values, states, gradients)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_numerics import (
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    gdn_gate,
    reference_gated_delta_rule,
)
from hybrid_numerics._chunk_torch import (
    _PairwiseDecay,
    _UnitLowerInverse,
    chunk_torch,
    torch_chunk_size,
)
from hybrid_numerics._validate import validate_gdn_inputs

from .conftest import GDNInputs, make_gdn_inputs, rms_rel

TOL = 1e-5  # the acceptance bound: FP32 RMS-relative error on outputs, states and gradients


def _oracle(x: GDNInputs, **kw: object) -> tuple[torch.Tensor, torch.Tensor]:
    o, s = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True, **kw
    )
    assert s is not None
    return o, s


def _chunk32(x: GDNInputs, **kw: object) -> tuple[torch.Tensor, torch.Tensor]:
    y = x.cast(torch.float32)
    o, s = chunk_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True, **kw
    )
    assert s is not None
    return o, s


@settings(max_examples=15, deadline=None)
@given(
    B=st.integers(1, 2),
    T=st.integers(1, 150),
    H=st.integers(1, 2),
    group=st.sampled_from([1, 2, 3]),
    K=st.sampled_from([4, 16, 32]),
    V=st.sampled_from([4, 8, 32]),
    l2=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_oracle_on_random_shapes(
    B: int, T: int, H: int, group: int, K: int, V: int, l2: bool, seed: int
) -> None:
    x = make_gdn_inputs(B, T, H, H * group, K, V, seed=seed)
    if not l2:
        # Unnormalised N(0, 1) keys have |k|^2 ~ K, so the transition I - beta k k^T stretches
        # the state by up to ~K per token and FP32 rounding grows with it: at K = 32, T = 80
        # even the token-by-token FP32 recurrence is 1.5e-5 off the float64 state (seed 674),
        # before and after the chunk-path changes. Keys of norm ~1, as every real model feeds
        # (Qwen3.5 L2-normalises them), keep the rule contractive and the comparison meaningful.
        x = dataclasses.replace(x, k=x.k / K**0.5)
    ro, rs = _oracle(x, use_qk_l2norm=l2)
    o, s = _chunk32(x, use_qk_l2norm=l2)
    assert o.dtype == torch.float32
    assert s.dtype == torch.float32
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


@pytest.mark.parametrize("T", [1024, pytest.param(4096, marks=pytest.mark.slow)])
def test_long_sequence_with_qwen_head_dims(T: int) -> None:
    x = make_gdn_inputs(1, T, 1, 2, 128, 128, seed=T)
    ro, rs = _oracle(x, use_qk_l2norm=True)
    o, s = _chunk32(x, use_qk_l2norm=True)
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL
    y = x.cast(torch.float32)
    orec, srec = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0, output_final_state=True,
        use_qk_l2norm=True,
    )  # fmt: skip
    assert srec is not None
    # Trainer (chunk) and engine (recurrent) agree to <= 1e-6 (the acceptance bound) at Qwen3.5 head dims.
    assert rms_rel(o, orec) <= 1e-6
    assert rms_rel(s, srec) <= 1e-6


def test_gradients_match_float64_autograd() -> None:
    x = make_gdn_inputs(2, 130, 2, 4, 32, 16, seed=3)
    x64 = x.cast(torch.float64, requires_grad=True)
    ro, rs = _oracle(x64, use_qk_l2norm=True)
    do, ds = torch.randn_like(ro), torch.randn_like(rs)
    want = torch.autograd.grad((ro * do).sum() + (rs * ds).sum(), x64.tensors())
    x32 = x.cast(torch.float32, requires_grad=True)
    o, s = chunk_gated_delta_rule(
        x32.q, x32.k, x32.v, x32.g, x32.beta, initial_state=x32.h0,
        output_final_state=True, use_qk_l2norm=True,
    )  # fmt: skip
    assert s is not None
    got = torch.autograd.grad((o * do.float()).sum() + (s * ds.float()).sum(), x32.tensors())
    for name, a, e in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), got, want, strict=True):
        assert a.dtype == torch.float32, name
        assert rms_rel(a, e) <= TOL, (name, rms_rel(a, e))


def test_fused_gate_gradients_reach_A_log_and_dt_bias() -> None:
    x = make_gdn_inputs(1, 70, 1, 2, 16, 8, seed=5)
    a = torch.randn(1, 70, 2, dtype=torch.float64)
    A_log = torch.log(torch.tensor([0.5, 8.0], dtype=torch.float64))
    dt_bias = torch.tensor([0.3, -1.0], dtype=torch.float64)

    def loss(dtype: torch.dtype, fused: bool) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        y = x.cast(dtype)
        params = tuple(t.detach().to(dtype).requires_grad_() for t in (a, A_log, dt_bias))
        if fused:
            o, _ = chunk_gated_delta_rule(
                y.q, y.k, y.v, params[0], y.beta, use_gate_in_kernel=True, A_log=params[1],
                dt_bias=params[2],
            )  # fmt: skip
        else:
            g = gdn_gate(*params)
            o, _ = reference_gated_delta_rule(y.q, y.k, y.v, g, y.beta)
        return (o.double() ** 2).sum(), params

    l64, p64 = loss(torch.float64, fused=False)
    want = torch.autograd.grad(l64, p64)
    l32, p32 = loss(torch.float32, fused=True)
    got = torch.autograd.grad(l32, p32)
    assert rms_rel(l32, l64) <= TOL
    for name, g_, w in zip(("da", "dA_log", "ddt_bias"), got, want, strict=True):
        assert rms_rel(g_, w) <= TOL, (name, rms_rel(g_, w))


def test_bf16_inputs_keep_state_fp32_and_output_in_input_dtype() -> None:
    x = make_gdn_inputs(1, 100, 1, 1, 16, 16, seed=7).cast(torch.bfloat16)
    h0 = x.h0.float()
    o, s = chunk_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=h0, output_final_state=True
    )
    assert o.dtype == torch.bfloat16
    assert s is not None
    assert s.dtype == torch.float32
    ro, rs = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=h0, output_final_state=True
    )
    assert rs is not None
    # The state never passes through bf16, so only the input rounding shows.
    assert rms_rel(s, rs) <= TOL
    assert rms_rel(o, ro) <= 1e-2  # the bf16 output rounding itself


def test_packed_sequences_match_the_oracle() -> None:
    x = make_gdn_inputs(1, 200, 2, 4, 16, 8, seed=11, N=4)
    cu = torch.tensor([0, 1, 65, 130, 200], dtype=torch.int32)
    ro, rs = _oracle(x, cu_seqlens=cu)
    o, s = _chunk32(x, cu_seqlens=cu)
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


def test_without_final_state_returns_none() -> None:
    x = make_gdn_inputs(1, 5, 1, 1, 4, 4).cast(torch.float32)
    o, s = chunk_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta)
    assert s is None
    assert o.shape == (1, 5, 1, 4)


@pytest.mark.parametrize(
    "fallback", ["torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule"]
)
def test_agrees_with_the_transformers_torch_fallback(fallback: str) -> None:
    modeling = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")
    x = make_gdn_inputs(2, 150, 2, 4, 32, 16, seed=13)
    y = x.cast(torch.float32)
    # transformers < 5.24's fallbacks expect q/k already repeated to the value heads (the layer
    # did it); value head j reads q/k head j // (HV // H), i.e. repeat_interleave.
    q, k = (t.repeat_interleave(y.v.shape[2] // y.q.shape[2], dim=2) for t in (y.q, y.k))
    theirs, their_state = getattr(modeling, fallback)(
        q, k, y.v, g=y.g, beta=y.beta, initial_state=y.h0, output_final_state=True,
        use_qk_l2norm_in_kernel=True,
    )  # fmt: skip
    ours, our_state = _chunk32(x, use_qk_l2norm=True)
    ro, _ = _oracle(x, use_qk_l2norm=True)
    # Both are FP32 implementations of the same rule: they agree to FP32 accuracy, and ours is
    # at least as close to the float64 oracle (figures in the README's accuracy table).
    assert rms_rel(ours, theirs) <= 2 * TOL
    assert rms_rel(our_state, their_state) <= 2 * TOL
    assert rms_rel(ours, ro) <= max(rms_rel(theirs, ro), 1e-6)


def test_torch_chunk_size_follows_the_key_head_dim() -> None:
    assert [torch_chunk_size(K) for K in (4, 16, 32, 64, 128, 256)] == [16, 16, 16, 32, 64, 64]


@pytest.mark.parametrize("chunk_size", [8, 16, 24, 32, 64])
@pytest.mark.parametrize("with_h0", [True, False])
def test_every_chunk_size_matches_the_oracle_with_gradients(chunk_size: int, with_h0: bool) -> None:
    # T = 150 is not a multiple of any chunk size: padding and several chunks at each C. The
    # gradients go through the hand-written scan backward.
    x = make_gdn_inputs(2, 150, 2, 4, 16, 8, seed=chunk_size)
    x64 = x.cast(torch.float64, requires_grad=True)
    h0_64 = x64.h0 if with_h0 else None
    ro, rs = reference_gated_delta_rule(
        x64.q, x64.k, x64.v, x64.g, x64.beta, initial_state=h0_64, output_final_state=True,
        use_qk_l2norm=True,
    )  # fmt: skip
    assert rs is not None
    do, ds = torch.randn_like(ro), torch.randn_like(rs)
    leaves64 = x64.tensors()[: 6 if with_h0 else 5]
    want = torch.autograd.grad((ro * do).sum() + (rs * ds).sum(), leaves64)
    x32 = x.cast(torch.float32, requires_grad=True)
    shapes = validate_gdn_inputs(
        x32.q, x32.k, x32.v, x32.g, x32.beta, scale=None, initial_state=x32.h0, cu_seqlens=None
    )
    o, s = chunk_torch(
        x32.q, x32.k, x32.v, x32.g, x32.beta, shapes, scale=16**-0.5,
        initial_state=x32.h0 if with_h0 else None, output_final_state=True, cu_seqlens=None,
        use_qk_l2norm=True, chunk_size=chunk_size,
    )  # fmt: skip
    assert s is not None
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL
    leaves32 = x32.tensors()[: 6 if with_h0 else 5]
    got = torch.autograd.grad((o * do.float()).sum() + (s * ds.float()).sum(), leaves32)
    for name, a, e in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), got, want, strict=False):
        assert rms_rel(a, e) <= TOL, (name, rms_rel(a, e))


@pytest.mark.parametrize("n", [5, 8, 16, 24, 64])
def test_unit_lower_inverse_and_its_gradient(n: int) -> None:
    gen = torch.Generator().manual_seed(n)
    a = torch.randn(3, n, n, generator=gen, dtype=torch.float64) * 0.3
    eye = torch.eye(n, dtype=torch.float64)
    want = torch.linalg.inv(eye + a.tril(-1))
    got = _UnitLowerInverse.apply(a.float())
    assert rms_rel(got, want) <= 1e-6  # the upper triangle and the diagonal of a are ignored
    # Gradient: d/dA of <dX, (I + tril(A, -1))^-1>, against float64 autograd through inv().
    a64 = a.clone().requires_grad_()
    dx = torch.randn(3, n, n, generator=gen, dtype=torch.float64)
    (want_grad,) = torch.autograd.grad((torch.linalg.inv(eye + a64.tril(-1)) * dx).sum(), a64)
    a32 = a.float().requires_grad_()
    (got_grad,) = torch.autograd.grad((_UnitLowerInverse.apply(a32) * dx.float()).sum(), a32)
    assert rms_rel(got_grad, want_grad) <= 1e-6


def test_pairwise_decay_is_causal_flushes_negligible_entries_and_has_the_right_gradient() -> None:
    gen = torch.Generator().manual_seed(0)
    # Strong decays: most in-chunk differences fall below -60 (and below FP32 underflow).
    g = -torch.rand(2, 16, generator=gen, dtype=torch.float64) * 12
    gamma = g.cumsum(-1).requires_grad_()
    decay = _PairwiseDecay.apply(gamma, torch.float32)
    diff = gamma[..., :, None] - gamma[..., None, :]
    want = torch.exp(diff).tril()
    assert decay.dtype == torch.float32
    assert (decay.triu(1) == 0).all()
    negligible = want < 1e-27  # exp(-60) = 8.8e-27 is the cut
    assert negligible.tril().any()  # the flush is exercised
    assert (decay[negligible] == 0).all()
    assert (decay[want > 1e-25] > 0).all()
    assert rms_rel(decay, want) <= 1e-7
    dd = torch.randn(2, 16, 16, generator=gen, dtype=torch.float64)
    (got,) = torch.autograd.grad((decay * dd.float()).sum(), gamma)
    (exact,) = torch.autograd.grad((want * dd).sum(), gamma)
    assert got.dtype == torch.float64
    assert rms_rel(got, exact) <= 1e-6


def test_pairwise_decay_gradient_wrt_the_log_decay_does_not_cancel() -> None:
    """Strong decays (g in [-12, -4]): the off-diagonal decay factors are <= e^-4, so a row or
    column sum of ``dD * D`` is dominated by its diagonal term, which the gradient of each
    ``g_k`` does not contain. Summing rows minus columns in FP32 left ~2e-5 of that term's
    rounding in dg (measured); the block-sum backward is at ~1.5e-7."""
    gen = torch.Generator().manual_seed(0)
    g = (-4 - 8 * torch.rand(64, 16, generator=gen, dtype=torch.float64)).requires_grad_()
    gamma = g.cumsum(-1)
    decay = _PairwiseDecay.apply(gamma, torch.float32)
    exact_decay = torch.exp(gamma[..., :, None] - gamma[..., None, :]).tril()
    dd = torch.randn(64, 16, 16, generator=gen, dtype=torch.float64)
    (got,) = torch.autograd.grad((decay * dd.float()).sum(), g)
    (want,) = torch.autograd.grad((exact_decay * dd).sum(), g)
    assert rms_rel(got, want) <= 1e-6, rms_rel(got, want)


def test_fused_gate_gradients_under_strong_decay_match_float64() -> None:
    """The gate parameters' gradients when most decay factors are tiny (A_log = log 8, log 16):
    before the block-sum backward of the pairwise decay, 1.4e-4 - 9e-4 off float64 (da,
    dA_log, ddt_bias); now ~6e-7."""
    x = make_gdn_inputs(1, 64, 1, 2, 16, 16, seed=0)
    gen = torch.Generator().manual_seed(100)
    a = torch.randn(1, 64, 2, generator=gen, dtype=torch.float64)
    A_log = torch.log(torch.tensor([8.0, 16.0], dtype=torch.float64))
    dt_bias = torch.tensor([1.0, 2.0], dtype=torch.float64)

    def grads(dtype: torch.dtype, fused: bool) -> tuple[torch.Tensor, ...]:
        y = x.cast(dtype)
        params = tuple(t.detach().to(dtype).requires_grad_() for t in (a, A_log, dt_bias))
        if fused:
            o, _ = chunk_gated_delta_rule(
                y.q, y.k, y.v, params[0], y.beta, use_gate_in_kernel=True, A_log=params[1],
                dt_bias=params[2],
                initial_state=y.h0, use_qk_l2norm=True,
            )  # fmt: skip
        else:
            o, _ = reference_gated_delta_rule(
                y.q, y.k, y.v, gdn_gate(*params), y.beta, initial_state=y.h0, use_qk_l2norm=True
            )
        return torch.autograd.grad((o.double() ** 2).sum(), params)

    want = grads(torch.float64, fused=False)
    got = grads(torch.float32, fused=True)
    for name, g_, w in zip(("da", "dA_log", "ddt_bias"), got, want, strict=True):
        assert rms_rel(g_, w) <= TOL, (name, rms_rel(g_, w))


@pytest.mark.parametrize("with_h0", [True, False])
def test_blocked_no_grad_forward_equals_the_single_block_one(
    monkeypatch: pytest.MonkeyPatch, with_h0: bool
) -> None:
    import hybrid_numerics._chunk_torch as chunk_module

    x = make_gdn_inputs(2, 150, 2, 4, 16, 8, seed=21).cast(torch.float32)
    h0 = x.h0 if with_h0 else None

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        o, s = chunk_gated_delta_rule(
            x.q, x.k, x.v, x.g, x.beta, initial_state=h0, output_final_state=True,
            use_qk_l2norm=True,
        )  # fmt: skip
        assert s is not None
        return o, s

    with torch.no_grad():
        whole = run()
        # 2 * (2*2*16 + 4*8) = 192 elements per token: blocks of one 16-token chunk, so 150
        # tokens take 10 blocks, the last one partial.
        monkeypatch.setattr(chunk_module, "BLOCK_ELEMENTS", 192 * 16)
        blocked = run()
    assert torch.equal(blocked[0], whole[0])
    assert torch.equal(blocked[1], whole[1])
    if with_h0:
        ro, rs = _oracle(x, use_qk_l2norm=True)
        assert rms_rel(blocked[0], ro) <= TOL
        assert rms_rel(blocked[1], rs) <= TOL
