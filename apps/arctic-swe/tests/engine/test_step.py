"""A decode step's indices: cache rows as views for consecutive slots, copies otherwise."""

from __future__ import annotations

import torch

from arctic_swe.engine._step import Step


def test_step_reads_consecutive_slots_as_views_and_others_as_copies() -> None:
    pool = torch.arange(24.0).reshape(6, 4)
    step = Step([2, 3, 4], [0, 0, 0], [5, 5, 5], torch.device("cpu"))
    rows = step.read(pool)
    assert rows.data_ptr() == pool[2].data_ptr()  # a view: updates land in the pool
    assert step.same_position
    assert step.context == 6
    scattered = Step([4, 0], [1, 2], [3, 7], torch.device("cpu"))
    copied = scattered.read(pool)
    assert torch.equal(copied, pool[[4, 0]])
    assert copied.data_ptr() != pool[4].data_ptr()
    assert not scattered.same_position
    assert scattered.context == 8
    assert scattered.ids.tolist() == [1, 2]
    assert scattered.positions.tolist() == [3, 7]
    scattered.write(pool, torch.zeros(2, 4))
    assert pool[4].abs().sum() == 0
    assert pool[0].abs().sum() == 0
    assert pool[1].abs().sum() > 0  # untouched
