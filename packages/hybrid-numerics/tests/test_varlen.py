"""Packing helpers: padding a packed batch and unpadding it is the identity."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from hybrid_numerics._varlen import pad_packed, seq_bounds, unpad_packed


@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_pad_then_unpad_is_the_identity(lengths: list[int]) -> None:
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    x = torch.randn(1, int(cu[-1]), 3, 2)
    bounds = seq_bounds(cu)
    assert [e - s for s, e in bounds] == lengths
    padded = pad_packed(x, bounds)
    assert padded.shape == (len(lengths), max(lengths), 3, 2)
    for n, length in enumerate(lengths):  # padding is zeros: no decay, no write
        assert torch.count_nonzero(padded[n, length:]) == 0
    assert torch.equal(unpad_packed(padded, bounds), x)


def test_length_groups_bound_the_padding() -> None:
    from hybrid_numerics._varlen import length_groups

    lengths = [4096, *([16] * 63)]
    groups = length_groups(lengths)
    assert groups == [[0, 1], list(range(2, 64))]
    padded = sum(len(g) * max(lengths[i] for i in g) for g in groups)
    assert padded == 2 * 4096 + 62 * 16  # 9,184 for 5,104 real tokens, not 64 x 4,096


@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=12))
def test_length_groups_partition_and_bound(lengths: list[int]) -> None:
    from hybrid_numerics._varlen import MAX_PADDING_RATIO, length_groups

    groups = length_groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        longest = max(lengths[i] for i in g)
        assert len(g) == 1 or len(g) * longest <= MAX_PADDING_RATIO * sum(lengths[i] for i in g)


def test_grouped_torch_paths_match_the_oracle_on_ragged_packs() -> None:
    """Lengths that form several groups: values, final states and gradients in sequence order."""
    from hybrid_numerics import (
        chunk_gated_delta_rule,
        fused_recurrent_gated_delta_rule,
        reference_gated_delta_rule,
    )
    from hybrid_numerics._varlen import length_groups

    from .conftest import make_gdn_inputs, rms_rel

    lengths = [1, 150, 3, 70, 2]
    assert len(length_groups(lengths)) >= 2
    cu = torch.tensor([0, 1, 151, 154, 224, 226])
    x = make_gdn_inputs(1, 226, 1, 2, 8, 8, seed=3, N=5)

    def run(fn: object, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        leaves = [t.detach().to(dtype).requires_grad_() for t in x.tensors()]
        q, k, v, g, beta, h0 = leaves
        kw = {"initial_state": h0, "output_final_state": True, "cu_seqlens": cu,
              "use_qk_l2norm": True}  # fmt: skip
        if fn is not reference_gated_delta_rule:
            kw["backend"] = "torch"
        o, s = fn(q, k, v, g, beta, **kw)  # type: ignore[operator]
        grads = torch.autograd.grad((o**2).sum() + s.sum(), leaves)
        return (o, s, *grads)

    want = run(reference_gated_delta_rule, torch.float64)
    for fn in (chunk_gated_delta_rule, fused_recurrent_gated_delta_rule):
        got = run(fn, torch.float32)
        for a, e in zip(got, want, strict=True):
            assert rms_rel(a, e) <= 1e-5
