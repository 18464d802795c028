"""Packed (``cu_seqlens``) sequences <-> a right-padded batch (the vectorised torch paths; the
Triton paths process packed input natively).

Padding is chosen so that it cannot change a final state: padded tokens get ``g = 0`` (no decay),
``beta = 0`` and ``k = 0`` (no write), so the state leaving the last real token passes through
unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

#: Padded tokens allowed per real token when packed sequences are batched (see run_grouped).
MAX_PADDING_RATIO = 2.0


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


def length_groups(lengths: list[int], max_ratio: float = MAX_PADDING_RATIO) -> list[list[int]]:
    """Sequence indices grouped so that padding each group to its longest member costs at most
    ``max_ratio`` x its real tokens: longest first, a group grows while ``count x longest <=
    max_ratio x total``. One 4,096-token and 63 16-token sequences: ``[[0, 1], [2..63]]``
    (9,184 padded tokens for 5,104 real ones, instead of 262,144)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    total = 0
    for i in order:
        if groups and (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= max_ratio * (
            total + lengths[i]
        ):
            groups[-1].append(i)
            total += lengths[i]
        else:
            groups.append([i])
            total = lengths[i]
    return groups


Runner = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def run_grouped(
    fn: Runner,
    tensors: tuple[torch.Tensor, ...],
    bounds: list[tuple[int, int]],
    initial_state: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run a batched path on packed ``[1, T, ...]`` input, group by group (:func:`length_groups`).

    ``fn(*padded, h0) -> (o [m, Tm, ...], final [m, ...])`` for a right-padded group of ``m``
    sequences. Returns ``o [1, T, ...]`` packed again and ``final [N, ...]`` in sequence order;
    differentiable (slices, ``cat``, ``stack``)."""
    lengths = [end - start for start, end in bounds]
    outputs: list[torch.Tensor | None] = [None] * len(bounds)
    finals: list[torch.Tensor | None] = [None] * len(bounds)
    for group in length_groups(lengths):
        sub = [bounds[i] for i in group]
        padded = tuple(pad_packed(x, sub) for x in tensors)
        h0 = None
        if initial_state is not None:
            h0 = initial_state[torch.tensor(group, device=initial_state.device)]
        o, final = fn(*padded, h0)
        for row, i in enumerate(group):
            outputs[i] = o[row, : lengths[i]]
            finals[i] = final[row]
    o_all = torch.cat([x for x in outputs if x is not None]).unsqueeze(0)
    return o_all, torch.stack([x for x in finals if x is not None])
