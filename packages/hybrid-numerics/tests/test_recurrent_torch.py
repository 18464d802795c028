"""The torch recurrent (decode) path: oracle accuracy, agreement with chunk, in-place cache."""

from __future__ import annotations

import pytest
import torch

from hybrid_numerics import (
    GDNInputError,
    chunk_gated_delta_rule,
    fused_recurrent_gated_delta_rule,
    reference_gated_delta_rule,
)

from .conftest import make_gdn_inputs, rms_rel


@pytest.mark.parametrize(("T", "H", "HV"), [(1, 1, 1), (37, 2, 4), (300, 1, 2)])
def test_matches_oracle_and_chunk_path(T: int, H: int, HV: int) -> None:
    x = make_gdn_inputs(2, T, H, HV, 32, 16, seed=T)
    ro, rs = reference_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True,
        use_qk_l2norm=True,
    )  # fmt: skip
    y = x.cast(torch.float32)
    kw = {"initial_state": y.h0, "output_final_state": True, "use_qk_l2norm": True}
    o, s = fused_recurrent_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, **kw)
    oc, sc = chunk_gated_delta_rule(y.q, y.k, y.v, y.g, y.beta, **kw)
    assert s is not None
    assert sc is not None
    assert rs is not None
    assert rms_rel(o, ro) <= 1e-5
    assert rms_rel(s, rs) <= 1e-5
    # Trainer (chunk) and engine (recurrent) must assign the same numbers, to <= 1e-6.
    assert rms_rel(o, oc) <= 1e-6
    assert rms_rel(s, sc) <= 1e-6


def test_decode_steps_on_an_in_place_cache_equal_one_long_run() -> None:
    B, T, HV = 3, 12, 2
    x = make_gdn_inputs(B, T, 1, HV, 8, 4, seed=1).cast(torch.float32)
    cache = torch.full((6, HV, 8, 4), float("nan"))  # unused slots may hold anything
    slots = torch.tensor([4, 0, 2])
    cache[slots] = x.h0
    other = cache[[1, 3, 5]].clone()
    outs = []
    for t in range(T):
        step = (z[:, t : t + 1].contiguous() for z in (x.q, x.k, x.v, x.g, x.beta))
        o, s = fused_recurrent_gated_delta_rule(*step, state_cache=cache, state_indices=slots)
        assert s is None
        outs.append(o)
    full_o, full_s = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, initial_state=x.h0, output_final_state=True
    )
    assert full_s is not None
    torch.testing.assert_close(torch.cat(outs, dim=1), full_o, rtol=0, atol=0)
    torch.testing.assert_close(cache[slots], full_s, rtol=0, atol=0)
    torch.testing.assert_close(cache[[1, 3, 5]], other, equal_nan=True)


def test_negative_slot_starts_from_zero_and_is_not_written() -> None:
    x = make_gdn_inputs(2, 3, 1, 1, 4, 4, seed=2).cast(torch.float32)
    cache = torch.randn(2, 1, 4, 4)
    before = cache.clone()
    o, _ = fused_recurrent_gated_delta_rule(
        x.q, x.k, x.v, x.g, x.beta, state_cache=cache, state_indices=torch.tensor([-1, 1])
    )
    o0, _ = fused_recurrent_gated_delta_rule(x.q[:1], x.k[:1], x.v[:1], x.g[:1], x.beta[:1])
    torch.testing.assert_close(o[:1], o0)
    torch.testing.assert_close(cache[0], before[0])
    assert not torch.equal(cache[1], before[1])


def test_chunk_prefill_then_recurrent_decode_on_the_same_cache() -> None:
    x = make_gdn_inputs(2, 80, 1, 2, 16, 8, seed=4).cast(torch.float32)
    cache = torch.zeros(2, 2, 16, 8)
    slots = torch.tensor([1, 0])
    prefill = (z[:, :79].contiguous() for z in (x.q, x.k, x.v, x.g, x.beta))
    chunk_gated_delta_rule(*prefill, state_cache=cache, state_indices=slots)
    last = (z[:, 79:].contiguous() for z in (x.q, x.k, x.v, x.g, x.beta))
    o, _ = fused_recurrent_gated_delta_rule(*last, state_cache=cache, state_indices=slots)
    full, s = chunk_gated_delta_rule(x.q, x.k, x.v, x.g, x.beta, output_final_state=True)
    assert s is not None
    assert rms_rel(o, full[:, 79:]) <= 1e-6
    assert rms_rel(cache[slots], s) <= 1e-6


@pytest.mark.parametrize(
    ("slots", "match"),
    [([0, 0], "distinct"), ([0, 9], "out of range"), ([0], "one slot per sequence")],
)
def test_bad_slots_raise_before_touching_the_cache(slots: list[int], match: str) -> None:
    x = make_gdn_inputs(2, 2, 1, 1, 4, 4).cast(torch.float32)
    cache = torch.randn(3, 1, 4, 4)
    before = cache.clone()
    with pytest.raises(GDNInputError, match=match):
        fused_recurrent_gated_delta_rule(
            x.q, x.k, x.v, x.g, x.beta, state_cache=cache, state_indices=torch.tensor(slots)
        )
    torch.testing.assert_close(cache, before, rtol=0, atol=0)


def test_bf16_cache_is_rejected() -> None:
    x = make_gdn_inputs(1, 1, 1, 1, 4, 4).cast(torch.float32)
    with pytest.raises(GDNInputError, match="state_cache has dtype"):
        fused_recurrent_gated_delta_rule(
            x.q, x.k, x.v, x.g, x.beta,
            state_cache=torch.zeros(1, 1, 4, 4, dtype=torch.bfloat16),
            state_indices=torch.tensor([0]),
        )  # fmt: skip
