"""Packed (``cu_seqlens``) sequences <-> a right-padded batch (the vectorised torch paths) or a
chunk-aligned packed batch (the Triton training path).

Padding is chosen so that it cannot change a final state: padded tokens get ``g = 0`` (no decay),
``beta = 0`` and ``k = 0`` (no write), so the state leaving the last real token passes through
unchanged.
"""

from __future__ import annotations

import itertools

import torch


def seq_bounds(cu_seqlens: torch.Tensor) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` for each packed sequence (host-side; offsets are small)."""
    offsets = [int(x) for x in cu_seqlens.tolist()]
    return list(itertools.pairwise(offsets))


def pad_packed(x: torch.Tensor, bounds: list[tuple[int, int]]) -> torch.Tensor:
    """``[1, T, ...]`` packed -> ``[N, T_max, ...]`` right-padded with zeros."""
    longest = max(end - start for start, end in bounds)
    out = x.new_zeros((len(bounds), longest, *x.shape[2:]))
    for n, (start, end) in enumerate(bounds):
        out[n, : end - start] = x[0, start:end]
    return out


def unpad_packed(x: torch.Tensor, bounds: list[tuple[int, int]]) -> torch.Tensor:
    """``[N, T_max, ...]`` right-padded -> ``[1, T, ...]`` packed."""
    return torch.cat([x[n, : end - start] for n, (start, end) in enumerate(bounds)]).unsqueeze(0)


def align_packed(x: torch.Tensor, bounds: list[tuple[int, int]], C: int) -> torch.Tensor:
    """``[1, T, ...]`` packed -> ``[1, T', ...]``, each sequence zero-padded to a multiple of
    ``C`` (at most ``C - 1`` tokens each, never to the longest), so no chunk holds two
    sequences. Differentiable."""
    pieces = []
    for start, end in bounds:
        pieces.append(x[:, start:end])
        pad = -(end - start) % C
        if pad:
            pieces.append(x.new_zeros((1, pad, *x.shape[2:])))
    return torch.cat(pieces, dim=1)


def unalign_packed(x: torch.Tensor, bounds: list[tuple[int, int]], C: int) -> torch.Tensor:
    """Inverse of :func:`align_packed` (drops the padding)."""
    pieces, at = [], 0
    for start, end in bounds:
        pieces.append(x[:, at : at + end - start])
        at += -(-(end - start) // C) * C
    return torch.cat(pieces, dim=1)
