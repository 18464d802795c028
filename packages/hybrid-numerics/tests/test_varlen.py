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
