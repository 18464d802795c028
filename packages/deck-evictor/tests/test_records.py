"""Derived properties of the result records."""

from __future__ import annotations

import math

from deck_evictor import Draw, ForgettingStat, Retirement, RetireReason, TaskStats


def test_derived_properties() -> None:
    assert Draw(("a",), 0, None, False).new_pass is False
    assert Draw(("a", "b"), 1, 1, False).new_pass is True
    assert Retirement("a", RetireReason.HARD, 3, 0, 8).rate == 0.0
    stats = TaskStats("a", None, 0, 0, 0, 0, 0, 0)
    assert stats.active
    assert math.isnan(stats.solve_rate)
    stat = ForgettingStat("a", RetireReason.EASY, 1, 1.0, 2, 16, 12, 5)
    assert stat.replay_rate == 0.75
    assert stat.forgetting == 0.25
