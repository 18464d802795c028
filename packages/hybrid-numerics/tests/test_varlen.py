"""Packing helpers: padding a packed batch and unpadding it is the identity."""

from __future__ import annotations

import itertools

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


def test_chunk_alignment_pads_each_sequence_to_the_chunk_not_to_the_longest() -> None:
    from hybrid_numerics._varlen import align_packed, unalign_packed

    lengths = [4096, *([16] * 63)]
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    bounds = list(itertools.pairwise(offsets))
    x = torch.randn(1, offsets[-1], 2)
    aligned = align_packed(x, bounds, 64)
    assert aligned.shape[1] == 4096 + 63 * 64  # 8,128 tokens, not 64 x 4,096 = 262,144
    assert torch.equal(unalign_packed(aligned, bounds, 64), x)
    assert torch.count_nonzero(aligned[:, 4096 + 16 : 4096 + 64]) == 0  # padding is zeros
