"""Configuration records validate at construction with typed errors."""

from __future__ import annotations

import pytest

from deck_evictor import (
    CurriculumFilter,
    DeckError,
    EvictionRules,
    InvalidConfigError,
    ReplayPolicy,
    RetireReason,
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"easy": "sometimes"},
        {"hard_consecutive_zero": 0},
        {"hard_consecutive_zero": 2.5},
        {"hard_consecutive_zero": True},
        {"min_group_size": 0},
        {"easy": "mastered", "mastered_groups": 0},
        {"mastered_groups": 1.5},
        {"mastered_groups": True},
    ],
)
def test_bad_eviction_rules(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidConfigError):
        EvictionRules(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"every": 0},
        {"size": -1},
        {"min_age": -1},
        {"reasons": ["lazy"]},
        {"reactivate_below": 1.5},
        {"reactivate_hard_at_or_above": -0.1},
    ],
)
def test_bad_replay_policy(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidConfigError):
        ReplayPolicy(**kwargs)  # type: ignore[arg-type]


def test_presets_and_reason_conversion() -> None:
    assert EvictionRules.paper() == EvictionRules(easy="first_all_correct", hard_consecutive_zero=3)
    assert EvictionRules.mastered_only().hard_consecutive_zero is None
    assert EvictionRules.off() == EvictionRules(easy=None, hard_consecutive_zero=None)
    assert ReplayPolicy(reasons=["easy"]).reasons == (RetireReason.EASY,)
    assert CurriculumFilter().max_solve_rate == pytest.approx(2 / 3)
    with pytest.raises(DeckError):
        CurriculumFilter(max_solve_rate=None)  # type: ignore[arg-type]


def test_the_mastery_streak_each_rule_asks_for() -> None:
    assert EvictionRules().mastery_streak == 1  # first all-correct group
    assert EvictionRules(easy="first_all_correct", mastered_groups=3).mastery_streak == 1
    assert EvictionRules(easy="mastered", mastered_groups=3).mastery_streak == 3
    assert EvictionRules.off().mastery_streak is None
    final = EvictionRules.mastered_only(2)
    assert (final.easy, final.mastered_groups, final.hard_consecutive_zero) == ("mastered", 2, None)
    assert EvictionRules.mastered_only().mastery_streak == 1  # the paper's single 8/8 group
