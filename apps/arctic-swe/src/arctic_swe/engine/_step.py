"""The indices of one decode step (one new token for each of ``B`` cached sequences), shared
by the FP32 plan step and the generic step."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import torch


class Step:
    """Indices of one decode step: ``B`` sequences, one token each."""

    def __init__(
        self,
        slots: Sequence[int],
        tokens: Sequence[int],
        starts: Sequence[int],
        device: torch.device,
    ) -> None:
        self.size = size = len(slots)
        packed = torch.tensor([*tokens, *starts], dtype=torch.long, device=device)
        self.ids, self.positions = packed[:size], packed[size:]  # [B] each
        self.start = starts[0]
        self.context = max(starts) + 1  # longest prefix after this step
        self.same_position = min(starts) == max(starts)
        first = slots[0]
        consecutive = list(slots) == list(range(first, first + size))
        #: ``slice`` of the slots when they are consecutive: caches are read and written as views.
        self.rows = slice(first, first + size) if consecutive else None
        self._slot_list, self._device = list(slots), device

    @cached_property
    def slots(self) -> torch.Tensor:
        """The slots as an index tensor (built only when a step needs one)."""
        return torch.tensor(self._slot_list, dtype=torch.long, device=self._device)

    def read(self, pool: torch.Tensor) -> torch.Tensor:
        """This step's rows of a per-slot cache (a view when the slots are consecutive)."""
        return pool[self.rows] if self.rows is not None else pool.index_select(0, self.slots)

    def write(self, pool: torch.Tensor, rows: torch.Tensor) -> None:
        """Store ``rows`` (one per sequence, in step order) into their slots, in place."""
        if self.rows is not None:
            pool[self.rows].copy_(rows)
        else:
            pool.index_copy_(0, self.slots, rows)
