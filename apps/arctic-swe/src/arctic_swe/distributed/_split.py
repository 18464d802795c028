"""Split one global batch across data-parallel ranks, balanced by tokens.

Every rank's forward/backward costs about its token count, and the step waits for the slowest
rank, so the split minimises the largest per-rank load: longest-processing-time-first (LPT) —
samples in decreasing length, each to the currently lightest rank. Whatever the lengths, each
sample lands on exactly one rank and the heaviest rank exceeds the lightest by at most one
sample's length (the lightest rank was the one chosen for each sample when it was placed).
The split depends only on the lengths and the world size, so every rank computes the same one.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def split_by_tokens(lengths: Sequence[int], world_size: int) -> list[list[int]]:
    """Sample indices of each of ``world_size`` ranks (LPT on ``lengths``).

    Ties are broken by the lower sample index and the lower rank, so the result is
    deterministic; each rank's indices are returned in increasing order (the batch order of the
    sender, which fixes the order of the float sums of its micro-batches). A rank may get no
    sample at all (fewer samples than ranks); it still takes part in every collective.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if any(length < 0 for length in lengths):
        raise ValueError("sample lengths must be >= 0")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    heap = [(0, rank) for rank in range(world_size)]  # (load, rank): the lightest pops first
    shards: list[list[int]] = [[] for _ in range(world_size)]
    for index in order:
        load, rank = heapq.heappop(heap)
        shards[rank].append(index)
        heapq.heappush(heap, (load + lengths[index], rank))
    return [sorted(shard) for shard in shards]
