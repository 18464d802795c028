"""fla 0.6's call surface, one test per row of the README's "Differences from fla" table.

Where numerics are involved the call is compared with the float64 oracle
(:func:`hybrid_numerics.reference_gated_delta_rule`) on the arguments fla's semantics define:
``allow_neg_eigval`` is the oracle with ``beta = 2 sigmoid(logits)``, ``g=None`` is ``g = 0``,
and so on. fla itself is never imported (it must not be installed next to transformers here).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import pytest
import torch

from hybrid_numerics import (
    GDNInputError,
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    gdn_gate,
    reference_gated_delta_rule,
)
from hybrid_numerics._validate import validate_gdn_inputs

from .conftest import GDNInputs, make_gdn_inputs, require_triton, rms_rel

GDNFunction = Callable[..., tuple[torch.Tensor, Any]]
TOL = 1e-5  # FP32 vs float64, RMS-relative (measured ~1e-7)
FUNCTIONS: tuple[GDNFunction, ...] = (chunk_gated_delta_rule, fused_recurrent_gated_delta_rule)
#: fla 0.6.0 ``fla.ops.gated_delta_rule.chunk_gated_delta_rule``: its positional parameters.
FLA_CHUNK_POSITIONAL = (
    "q", "k", "v", "g", "beta", "scale", "initial_state", "output_final_state",
    "use_qk_l2norm_in_kernel", "use_beta_sigmoid_in_kernel", "allow_neg_eigval", "state_v_first",
    "cu_seqlens", "cu_seqlens_cpu", "chunk_indices", "cp_context",
)  # fmt: skip


def _inputs(B: int = 2, T: int = 10, seed: int = 0) -> GDNInputs:
    return make_gdn_inputs(B, T, 1, 2, 8, 4, seed=seed)


def _oracle(x: GDNInputs, use_qk_l2norm: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    o, s = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True,
        use_qk_l2norm=use_qk_l2norm,
    )  # fmt: skip
    assert s is not None
    return o, s


def _positional(fn: GDNFunction) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]


def test_chunk_positional_order_is_fla_06s() -> None:
    assert tuple(_positional(chunk_gated_delta_rule)) == FLA_CHUNK_POSITIONAL
    x = _inputs(B=1).cast(torch.float32)
    cu = torch.tensor([0, 3, 10])
    h0 = x.h0.expand(2, -1, -1, -1).contiguous()
    # q, k, v, g, beta, scale, h0, output_final_state, l2norm, sigmoid, neg eigval, v-first, cu
    o, s = chunk_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, 0.3, h0, True, True, False, False,
                                  False, cu)  # fmt: skip
    y = _inputs(B=1)
    ro, rs = reference_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, scale=0.3, initial_state=h0.double(),
        output_final_state=True, cu_seqlens=cu, use_qk_l2norm=True,
    )  # fmt: skip
    assert s is not None
    assert rs is not None
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


def test_recurrent_positional_order_stops_at_beta_and_fla_order_fails_loudly() -> None:
    assert _positional(fused_recurrent_gated_delta_rule) == ["q", "k", "v", "g", "beta"]
    x = _inputs().cast(torch.float32)
    gk = torch.zeros(*x.beta.shape, 8)
    with pytest.raises(TypeError):  # fla order: q, k, v, g, gk, gv, beta
        fused_recurrent_gated_delta_rule(x.q, x.k, x.v, x.g, None, None, x.beta)  # type: ignore[call-arg]
    with pytest.raises(GDNInputError, match="fifth positional parameter is gk"):
        fused_recurrent_gated_delta_rule(x.q, x.k, x.v, x.g, gk)


@pytest.mark.parametrize("name", ["gk", "gv"])
def test_recurrent_refuses_per_key_and_per_value_decay(name: str) -> None:
    x = _inputs().cast(torch.float32)
    extra: dict[str, Any] = {name: torch.zeros(*x.beta.shape, 8 if name == "gk" else 4)}
    with pytest.raises(GDNInputError, match="gk / gv"):
        fused_recurrent_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, **extra)


def test_recurrent_g_none_is_no_decay_and_beta_none_is_one() -> None:
    x = _inputs()
    y = x.cast(torch.float32)
    o, s = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, initial_state=y.h0, output_final_state=True
    )
    ones = GDNInputs(x.q, x.k, x.v, torch.zeros_like(x.g), torch.ones_like(x.beta), x.h0)
    ro, rs = _oracle(ones)
    assert s is not None
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_A_log_needs_use_gate_in_kernel_and_then_matches_the_gate_in_float64(
    fn: GDNFunction,
) -> None:
    x = _inputs()
    y = x.cast(torch.float32)
    a = torch.randn(x.g.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    A_log, dt_bias = torch.tensor([0.5, 2.0]), torch.tensor([0.1, -0.2])
    call = fn
    for kw in ({"A_log": A_log}, {"dt_bias": dt_bias}, {"A_log": A_log, "dt_bias": dt_bias}):
        with pytest.raises(GDNInputError, match="without use_gate_in_kernel=True"):
            call(y.q, y.k, y.v, a.float(), y.beta, **kw)
    o, s = call(y.q, y.k, y.v, a.float(), y.beta, initial_state=y.h0, output_final_state=True,
                use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias)  # fmt: skip
    decay = gdn_gate(a, A_log.double(), dt_bias.double())
    ro, rs = _oracle(GDNInputs(x.q, x.k, x.v, decay, x.beta, x.h0))
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_allow_neg_eigval_is_twice_the_beta_sigmoid(fn: GDNFunction) -> None:
    x = _inputs()
    y = x.cast(torch.float32)
    logits = torch.randn(x.beta.shape, generator=torch.Generator().manual_seed(4))
    call = fn
    with pytest.raises(GDNInputError, match="requires use_beta_sigmoid_in_kernel"):
        call(y.q, y.k, y.v, y.g, logits, allow_neg_eigval=True)
    o, s = call(y.q, y.k, y.v, y.g, logits, initial_state=y.h0, output_final_state=True,
                use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True, use_qk_l2norm=True)  # fmt: skip
    beta = 2 * torch.sigmoid(logits.double())
    assert (beta > 1).any()  # eigenvalue 1 - beta < 0 of I - beta k k^T is reached
    ro, rs = _oracle(GDNInputs(x.q, x.k, x.v, x.g, beta, x.h0), use_qk_l2norm=True)
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


def test_mixed_qk_and_v_dtypes_are_cast_and_outputs_take_flas_dtypes() -> None:
    x = _inputs()
    q, k = x.q.bfloat16(), x.k.bfloat16()
    v, g, beta, h0 = (t.float() for t in (x.v, x.g, x.beta, x.h0))
    o_chunk, s = chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    o_rec, _ = fused_recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=h0)
    assert o_chunk.dtype == torch.bfloat16  # fla: the chunk output in q's dtype
    assert o_rec.dtype == torch.float32  # fla: the recurrent output in v's dtype
    rounded = GDNInputs(q.double(), k.double(), x.v, x.g, x.beta, x.h0)
    ro, rs = _oracle(rounded)
    assert s is not None
    assert s.dtype == torch.float32
    assert rms_rel(s, rs) <= TOL
    assert rms_rel(o_rec, ro) <= TOL
    assert rms_rel(o_chunk, ro) <= 1e-2  # the bf16 output's own rounding (2^-9 relative)


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_fp16_initial_state_is_upcast_bf16_refused(fn: GDNFunction) -> None:
    x = _inputs()
    y = x.cast(torch.float32)
    call = fn
    h16 = y.h0.half()
    o, s = call(y.q, y.k, y.v, y.g, y.beta, initial_state=h16, output_final_state=True)
    o32, s32 = call(y.q, y.k, y.v, y.g, y.beta, initial_state=h16.float(), output_final_state=True)
    assert s.dtype == torch.float32
    assert torch.equal(o, o32)
    assert torch.equal(s, s32)
    ro, rs = _oracle(GDNInputs(x.q, x.k, x.v, x.g, x.beta, h16.double()))
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL
    with pytest.raises(GDNInputError, match=r"initial_state has dtype torch\.bfloat16"):
        call(y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0.bfloat16())


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_state_v_first_transposes_the_states_in_and_out(fn: GDNFunction) -> None:
    x = _inputs()
    y = x.cast(torch.float32)
    call = fn
    h_vk = y.h0.transpose(-1, -2).contiguous()  # [N, HV, V, K]
    o, s = call(y.q, y.k, y.v, y.g, y.beta, initial_state=h_vk, output_final_state=True,
                state_v_first=True)  # fmt: skip
    ro, rs = _oracle(x)
    assert s.shape == h_vk.shape
    assert s.is_contiguous()
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s.transpose(-1, -2), rs) <= TOL
    with pytest.raises(GDNInputError, match="state_v_first=True is not supported with state_cache"):
        call(y.q, y.k, y.v, y.g, y.beta, state_v_first=True,
             state_cache=torch.zeros(2, 2, 8, 4), state_indices=torch.tensor([0, 1]))  # fmt: skip


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
def test_chunk_size_is_honoured_on_the_torch_path(chunk_size: int) -> None:
    x = _inputs(T=70)
    y = x.cast(torch.float32)
    o, s = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, initial_state=y.h0,
                                  output_final_state=True, chunk_size=chunk_size)  # fmt: skip
    ro, rs = _oracle(x)
    assert s is not None
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL


def test_chunk_size_outside_flas_set_or_not_64_on_triton_is_refused() -> None:
    y = _inputs().cast(torch.float32)
    with pytest.raises(GDNInputError, match="chunk_size must be one of"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, chunk_size=48)
    with pytest.raises(GDNInputError, match="Triton chunk kernels run chunk_size=64 only"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, chunk_size=32, backend="triton")
    with pytest.raises(TypeError):  # fla's recurrent function swallows it in **kwargs
        fused_recurrent_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, chunk_size=64)  # type: ignore[call-arg]


def test_cu_seqlens_cpu_is_the_host_copy_the_plan_is_read_from() -> None:
    x = _inputs(B=1, T=12)
    y = x.cast(torch.float32)
    cu = torch.tensor([0, 5, 12])
    h0 = y.h0.expand(2, -1, -1, -1).contiguous()
    want, _ = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, initial_state=h0, cu_seqlens=cu)
    got, _ = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, initial_state=h0, cu_seqlens=cu,
                                    cu_seqlens_cpu=cu.clone())  # fmt: skip
    assert torch.equal(got, want)
    # Planned from the host copy without reading cu_seqlens (a device sync on CUDA).
    shapes = validate_gdn_inputs(y.q, y.k, y.v, y.g, y.beta, scale=None, initial_state=h0,
                                 cu_seqlens=cu, host_checks=False, cu_seqlens_host=cu)  # fmt: skip
    assert shapes.offsets == (0, 5, 12)
    with pytest.raises(GDNInputError, match="cu_seqlens_cpu differs"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, cu_seqlens=cu,
                               cu_seqlens_cpu=torch.tensor([0, 6, 12]))  # fmt: skip
    with pytest.raises(GDNInputError, match="pass cu_seqlens"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, cu_seqlens_cpu=cu)


def test_chunk_indices_are_accepted_and_not_used() -> None:
    y = _inputs(B=1, T=12).cast(torch.float32)
    cu = torch.tensor([0, 5, 12])
    want, _ = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, cu_seqlens=cu)
    stale = torch.tensor([[0, 0], [7, 7]])  # wrong on purpose: recomputed from cu_seqlens
    got, _ = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, cu_seqlens=cu, chunk_indices=stale)
    assert torch.equal(got, want)
    with pytest.raises(GDNInputError, match="pass cu_seqlens"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, chunk_indices=stale)


def test_context_parallelism_is_refused() -> None:
    y = _inputs().cast(torch.float32)
    with pytest.raises(GDNInputError, match="cp_context"):
        chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, cp_context=object())


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize("name", ["head_first", "transpose_state_layout", "ssm_state_indices"])
def test_removed_and_deprecated_fla_keywords_are_type_errors(fn: GDNFunction, name: str) -> None:
    y = _inputs().cast(torch.float32)
    call = fn
    with pytest.raises(TypeError, match=name):
        call(y.q, y.k, y.v, y.g, y.beta, **{name: False})


@pytest.mark.skipif(
    not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1",
    reason="no CUDA and TRITON_INTERPRET is not set",
)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_the_fla_options_reach_the_triton_path_too(fn: GDNFunction) -> None:
    """Mixed dtypes, an fp16 ``[V, K]`` initial state and ``allow_neg_eigval`` on the kernels
    (under the interpreter on CPU), against float64."""
    require_triton()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = _inputs(T=9)
    logits = torch.randn(x.beta.shape, generator=torch.Generator().manual_seed(5))
    h_vk = x.h0.half().transpose(-1, -2).contiguous()
    call = fn
    with torch.no_grad():
        o, s = call(
            x.q.bfloat16().to(device), x.k.bfloat16().to(device), x.v.float().to(device),
            x.g.float().to(device), logits.to(device), initial_state=h_vk.to(device),
            output_final_state=True, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True,
            state_v_first=True, use_qk_l2norm_in_kernel=True, backend="triton",
        )  # fmt: skip
    rounded = GDNInputs(x.q.bfloat16().double(), x.k.bfloat16().double(), x.v, x.g,
                        2 * torch.sigmoid(logits.double()), x.h0.half().double())  # fmt: skip
    ro, rs = _oracle(rounded, use_qk_l2norm=True)
    assert rms_rel(s.transpose(-1, -2), rs) <= TOL
    assert rms_rel(o, ro) <= (1e-2 if o.dtype == torch.bfloat16 else TOL)
