"""The FP32 decode step on its plan against the generic step: same logits and same caches for
any slot layout and any mix of positions (property-based)."""

from __future__ import annotations

import copy

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arctic_swe.engine import CachePools, batched_forward
from arctic_swe.engine._decode import decode_generic
from arctic_swe.engine._decode_fp32 import decode_fp32
from arctic_swe.engine._plan import decode_plan
from arctic_swe.engine._step import Step

from .conftest import VOCAB, tiny_model

MODEL = tiny_model(seed=11)
CAPACITY = 6


@st.composite
def layouts(draw: st.DrawFn) -> tuple[list[int], list[int], int]:
    """Distinct slots in any order, each with its own prefix length, and a token seed."""
    slots = draw(st.permutations(range(CAPACITY)))[: draw(st.integers(1, CAPACITY))]
    lengths = draw(st.lists(st.integers(1, 12), min_size=len(slots), max_size=len(slots)))
    same = draw(st.booleans())
    return list(slots), [lengths[0]] * len(slots) if same else lengths, draw(st.integers(0, 99))


def _pools_after_prefill(slots: list[int], prompts: list[list[int]]) -> CachePools:
    pools = CachePools(MODEL.config, CAPACITY, torch.device("cpu"), torch.float32)
    batched_forward(MODEL, pools, slots, prompts, [0] * len(slots))
    return pools


@settings(max_examples=25, deadline=None)
@given(layouts())
def test_plan_step_equals_the_generic_step(layout: tuple[list[int], list[int], int]) -> None:
    slots, lengths, seed = layout
    generator = torch.Generator().manual_seed(seed)
    tokens = [torch.randint(0, VOCAB, (n + 3,), generator=generator).tolist() for n in lengths]
    plan_pools = _pools_after_prefill(slots, [t[:n] for t, n in zip(tokens, lengths, strict=True)])
    generic_pools = copy.deepcopy(plan_pools)
    plan = decode_plan(MODEL, max(lengths) + 3)
    assert plan is not None
    for offset in range(3):  # three steps: every cache rolls forward
        starts = [n + offset for n in lengths]
        fed = [t[p] for t, p in zip(tokens, starts, strict=True)]
        got = decode_fp32(plan, plan_pools, Step(slots, fed, starts, torch.device("cpu")))
        want = decode_generic(MODEL, generic_pools, slots, fed, starts)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    for name in ("conv", "recurrent", "keys", "values"):
        for index, tensor in getattr(plan_pools, name).items():
            other = getattr(generic_pools, name)[index]
            assert torch.allclose(tensor, other, rtol=1e-5, atol=1e-5), (name, index)
