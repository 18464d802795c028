"""Pass-based sampler: without replacement within a pass, a fresh seeded permutation per pass.

A *pass* is one permutation of the tasks active when it began. Draws consume the permutation
front to back; tasks retired meanwhile are skipped lazily (O(1) each), so ``sample(k)`` costs
O(k) amortised and a new pass costs O(N) once per N/k draws. Everything that influences the
sequence — the generator state, the permutation and the cursor — is part of the saved state,
which is what lets a reloaded deck continue with exactly the same draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class PassSampler:
    """Seeded pass-based sampling over task indices ``0..N-1`` given an ``active`` mask."""

    def __init__(self, n_tasks: int, seed: int) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._order: list[int] = []
        self._cursor = 0
        self.pass_index = -1
        self._n_tasks = n_tasks

    def draw(
        self, k: int, active: Sequence[bool], active_count: int
    ) -> tuple[list[int], int | None]:
        """Take up to ``k`` distinct active indices; returns them and where a new pass began.

        When the current pass runs out mid-draw a new pass starts; the indices already taken in
        this draw go to the *end* of the new permutation so the draw stays duplicate-free while
        every active task still appears exactly once in the new pass.
        """
        chosen: list[int] = []
        chosen_set: set[int] = set()
        new_pass_at: int | None = None
        # Locals, not attributes, in the hot loop: this is most of sample()'s cost at 100k tasks.
        order, cursor = self._order, self._cursor
        while len(chosen) < k:
            end = len(order)
            while cursor < end and not active[order[cursor]]:
                cursor += 1
            if cursor < end:
                index = order[cursor]
                if index in chosen_set:
                    break  # only the tail of a pass begun in this draw: no more fresh tasks
                cursor += 1
                chosen.append(index)
                chosen_set.add(index)
                continue
            if new_pass_at is not None or active_count == 0:
                break  # a pass begun in this draw is spent: fewer active tasks than k
            self._start_pass(active, chosen_set)
            order, cursor = self._order, 0
            new_pass_at = len(chosen)
        self._cursor = cursor
        return chosen, new_pass_at

    def _start_pass(self, active: Sequence[bool], taken: set[int]) -> None:
        fresh = [i for i in range(self._n_tasks) if active[i] and i not in taken]
        tail = sorted(taken)
        order = [fresh[j] for j in self._rng.permutation(len(fresh))]
        order.extend(tail[j] for j in self._rng.permutation(len(tail)))
        self._order = order
        self._cursor = 0
        self.pass_index += 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-able state: generator state, permutation, cursor, pass index."""
        return {
            "rng": self._rng.bit_generator.state,
            "order": list(self._order),  # a copy: callers may mutate what they are given
            "cursor": self._cursor,
            "pass_index": self.pass_index,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], n_tasks: int) -> PassSampler:
        """Inverse of :meth:`to_dict`; raises ``KeyError``/``TypeError``/``ValueError`` if malformed."""
        sampler = cls(n_tasks, seed=0)
        bit_generator = np.random.PCG64()
        bit_generator.state = dict(data["rng"])  # type: ignore[assignment]
        sampler._rng = np.random.Generator(bit_generator)
        order = [int(i) for i in data["order"]]
        if any(not 0 <= i < n_tasks for i in order):
            raise ValueError("sampler order holds an index outside the deck")
        cursor = int(data["cursor"])
        if not 0 <= cursor <= len(order):
            raise ValueError("sampler cursor outside its permutation")
        sampler._order = order
        sampler._cursor = cursor
        sampler.pass_index = int(data["pass_index"])
        return sampler
