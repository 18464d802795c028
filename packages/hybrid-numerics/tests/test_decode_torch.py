"""The torch decode fast path (``T = 1``, no autograd) against the float64 oracle: values, states,
in-place cache semantics (consecutive slots updated through a view, scattered and negative
slots), grouped value heads, and that it is the path a decode call takes; the validation-free
``gated_delta_decode_step_`` against the cached call (bit for bit) and the oracle."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import hybrid_numerics._api as api
from hybrid_numerics import (
    GDNInputError,
    fused_recurrent_gated_delta_rule,
    gated_delta_decode_step_,
    gdn_gate,
    reference_gated_delta_rule,
)

from .conftest import GDNInputs, make_gdn_inputs, rms_rel

TOL = 1e-5


def _oracle(x: GDNInputs, h0: torch.Tensor | None, **kw: object) -> tuple[torch.Tensor, ...]:
    o, s = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=h0, output_final_state=True, **kw
    )
    assert s is not None
    return o, s


@pytest.fixture
def no_generic_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if a call falls through to the generic token loop."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the T = 1 no-grad call took the generic recurrent path")

    monkeypatch.setattr(api, "recurrent_torch", fail)


@pytest.mark.usefixtures("no_generic_path")
@pytest.mark.parametrize(("H", "HV"), [(1, 1), (2, 4), (2, 6)])
@pytest.mark.parametrize("with_h0", [True, False])
@pytest.mark.parametrize("l2", [True, False])
def test_one_token_matches_the_oracle(H: int, HV: int, with_h0: bool, l2: bool) -> None:
    x = make_gdn_inputs(3, 1, H, HV, 16, 8, seed=H * HV + 2 * with_h0 + l2)
    ro, rs = _oracle(x, x.h0 if with_h0 else None, use_qk_l2norm=l2)
    y = x.cast(torch.float32)
    h0 = y.h0 if with_h0 else None
    before = y.h0.clone()
    o, s = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, initial_state=h0, output_final_state=True, use_qk_l2norm=l2
    )
    assert s is not None
    assert o.dtype == s.dtype == torch.float32
    assert s.is_contiguous()
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL
    assert torch.equal(y.h0, before)  # the initial state is read, never written


@pytest.mark.usefixtures("no_generic_path")
@pytest.mark.parametrize("first", [0, 3])
def test_consecutive_slots_are_updated_in_place(first: int) -> None:
    B, H, HV, K, V = 4, 2, 4, 16, 8
    x = make_gdn_inputs(B, 1, H, HV, K, V, seed=first)
    ro, rs = _oracle(x, x.h0, use_qk_l2norm=True)
    y = x.cast(torch.float32)
    cache = torch.full((first + B + 2, HV, K, V), float("nan"))
    cache[first : first + B] = y.h0
    storage = cache.data_ptr()
    slots = torch.arange(first, first + B)
    o, s = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, state_cache=cache, state_indices=slots,
        output_final_state=True, use_qk_l2norm=True,
    )  # fmt: skip
    assert s is not None
    assert cache.data_ptr() == storage
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(cache[first : first + B], rs) <= TOL
    assert cache[:first].isnan().all()
    assert cache[first + B :].isnan().all()
    # The returned state is the caller's own tensor, equal to the slots, not a view of them.
    assert torch.equal(s, cache[first : first + B])
    s.zero_()
    assert rms_rel(cache[first : first + B], rs) <= TOL


@pytest.mark.usefixtures("no_generic_path")
def test_scattered_and_negative_slots() -> None:
    B, H, HV, K, V = 3, 1, 2, 8, 8
    x = make_gdn_inputs(B, 1, H, HV, K, V, seed=11)
    h0 = x.h0.clone()
    h0[1] = 0  # the padding row starts from zeros
    ro, rs = _oracle(x, h0, use_qk_l2norm=True)
    y = x.cast(torch.float32)
    cache = torch.randn(6, HV, K, V)
    slots = torch.tensor([4, -1, 1])
    cache[4], cache[1] = y.h0[0], y.h0[2]
    before = cache.clone()
    o, s = fused_recurrent_gated_delta_rule(
        y.q, y.k, y.v, y.g, y.beta, state_cache=cache, state_indices=slots,
        output_final_state=True, use_qk_l2norm=True,
    )  # fmt: skip
    assert s is not None
    assert rms_rel(o, ro) <= TOL
    assert rms_rel(s, rs) <= TOL
    assert rms_rel(cache[4], rs[0]) <= TOL
    assert rms_rel(cache[1], rs[2]) <= TOL
    untouched = [0, 2, 3, 5]
    assert torch.equal(cache[untouched], before[untouched])


@pytest.mark.usefixtures("no_generic_path")
def test_float64_inputs_on_an_fp32_cache_and_bf16_inputs() -> None:
    x = make_gdn_inputs(2, 1, 1, 2, 8, 8, seed=5)
    ro, rs = _oracle(x, x.h0)
    cache = x.h0.float().clone()
    o, _ = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, state_cache=cache, state_indices=torch.arange(2)
    )
    assert o.dtype == torch.float64
    assert rms_rel(o, ro) <= 1e-6
    assert rms_rel(cache, rs) <= 1e-6
    b = x.cast(torch.bfloat16)
    ob, sb = fused_recurrent_gated_delta_rule(
        b.q, b.k, b.v, b.g, b.beta, initial_state=x.h0.float(), output_final_state=True
    )
    assert ob.dtype == torch.bfloat16
    assert sb is not None
    assert sb.dtype == torch.float32
    rb_o, rb_s = _oracle(b.cast(torch.float64), x.h0)
    assert rms_rel(sb, rb_s) <= TOL
    assert rms_rel(ob, rb_o) <= 1e-2  # the bf16 rounding of the output


def test_gradient_calls_still_take_the_differentiable_path() -> None:
    x = make_gdn_inputs(2, 1, 1, 2, 8, 4, seed=6)
    x64 = x.cast(torch.float64, requires_grad=True)
    ro, rs = _oracle(x64, x64.h0, use_qk_l2norm=True)
    want = torch.autograd.grad(ro.sum() + rs.sum(), x64.tensors())
    x32 = x.cast(torch.float32, requires_grad=True)
    o, s = fused_recurrent_gated_delta_rule(
        x32.q, x32.k, x32.v, x32.g, x32.beta, initial_state=x32.h0,
        output_final_state=True, use_qk_l2norm=True,
    )  # fmt: skip
    assert s is not None
    got = torch.autograd.grad(o.sum() + s.sum(), x32.tensors())
    for a, e in zip(got, want, strict=True):
        assert rms_rel(a, e) <= TOL


@st.composite
def _step_case(draw: st.DrawFn) -> tuple[int, int, int, int, int, bool, bool, int]:
    H = draw(st.integers(1, 3))
    return (
        draw(st.integers(1, 5)),  # B
        H,
        H * draw(st.integers(1, 3)),  # HV
        draw(st.sampled_from([4, 8, 16])),  # K
        draw(st.sampled_from([4, 8])),  # V
        draw(st.booleans()),  # l2
        draw(st.booleans()),  # fused gate (A_log, dt_bias)
        draw(st.integers(0, 10_000)),  # seed
    )


@settings(max_examples=40, deadline=None)
@given(_step_case())
def test_decode_step_is_the_cached_call_bit_for_bit_and_matches_the_oracle(
    case: tuple[int, int, int, int, int, bool, bool, int],
) -> None:
    B, H, HV, K, V, l2, fused_gate, seed = case
    x = make_gdn_inputs(B, 1, H, HV, K, V, seed=seed).cast(torch.float32)
    gen = torch.Generator().manual_seed(seed)
    gate: dict[str, torch.Tensor] = {}
    g = x.g
    if fused_gate:  # g is the raw gate input; the decay is computed inside, in FP32
        gate = {"A_log": torch.randn(HV, generator=gen), "dt_bias": torch.randn(HV, generator=gen)}
        g = torch.randn(B, 1, HV, generator=gen)
    pool = torch.randn(B + 2, HV, K, V, generator=gen)
    via_api = pool.clone()
    o_api, _ = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, g, x.beta, state_cache=via_api, state_indices=torch.arange(1, B + 1),
        use_qk_l2norm=l2, use_gate_in_kernel=fused_gate, **gate,
    )  # fmt: skip
    direct = pool.clone()
    o = gated_delta_decode_step_(
        x.q[:, 0], x.k[:, 0], x.v[:, 0], g[:, 0], x.beta[:, 0], direct[1 : B + 1],
        use_qk_l2norm=l2, **gate,
    )  # fmt: skip
    assert torch.equal(o, o_api[:, 0])
    assert torch.equal(direct, via_api)  # same states, and only the sequences' rows written
    assert torch.equal(direct[0], pool[0])
    assert torch.equal(direct[B + 1], pool[B + 1])
    decay = g if not fused_gate else gdn_gate(g, gate["A_log"], gate["dt_bias"])
    ro, rs = reference_gated_delta_rule(
        x.q.double(), x.k.double(), x.v.double(), decay.double(), x.beta.double(),
        initial_state=pool[1 : B + 1].double(), output_final_state=True, use_qk_l2norm=l2,
    )  # fmt: skip
    assert rs is not None
    assert rms_rel(o, ro[:, 0]) <= TOL
    assert rms_rel(direct[1 : B + 1], rs) <= TOL


@pytest.mark.parametrize(
    "change",
    [
        {"q": torch.zeros(2, 2, 8, 1)},  # rank
        {"k": torch.zeros(2, 1, 8)},  # k differs from q
        {"v": torch.zeros(2, 3, 8)},  # HV not a multiple of H
        {"g": torch.zeros(2, 3)},  # g / beta shape
        {"state": torch.zeros(2, 4, 8, 8, dtype=torch.float64)},  # not FP32
        {"state": torch.zeros(2, 4, 8, 8).transpose(2, 3)},  # not contiguous
        {"state": torch.zeros(3, 4, 8, 8)},  # rows do not match the batch
    ],
)
def test_decode_step_rejects_inconsistent_shapes(change: dict[str, torch.Tensor]) -> None:
    args = {
        "q": torch.zeros(2, 2, 8), "k": torch.zeros(2, 2, 8), "v": torch.zeros(2, 4, 8),
        "g": torch.zeros(2, 4), "beta": torch.zeros(2, 4), "state": torch.zeros(2, 4, 8, 8),
    }  # fmt: skip
    args.update(change)
    before = args["state"].clone()
    with pytest.raises(GDNInputError):
        gated_delta_decode_step_(**args)
    assert torch.equal(args["state"], before)  # nothing written
