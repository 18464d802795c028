"""``_evictor``: the deck the loop trains from is built from ``config.deck`` — the mastery rule
and its streak, hard retirement, replay feedback — and ``deck.eviction = false`` retires
nothing whatever the other keys say (Arctic-SWE §3.3 eviction, §5 "retire only mastered")."""

from __future__ import annotations

import pytest

from arctic_swe.config import RunConfig, apply_overrides
from arctic_swe.orchestrator._setup import _evictor
from deck_evictor import Deck, EvictionRules, RetireReason


def _deck(*overrides: str) -> Deck:
    return _evictor(apply_overrides(RunConfig(), list(overrides)), ["a", "b", "c"])


def test_the_default_deck_is_the_final_recipe_mastered_only_with_replay_feedback() -> None:
    deck = _deck()
    assert deck.rules == EvictionRules.mastered_only(2)
    assert deck.replay_policy.reactivate_below == 0.75
    assert deck.replay_policy.reactivate_hard_at_or_above is None
    for _ in range(6):  # never retired as hard
        assert deck.record("b", 0, 8) is None


def test_the_streak_length_and_the_old_rule_are_configurable() -> None:
    three = _deck("deck.mastered_groups=3")
    assert [three.record("a", 8, 8) is None for _ in range(3)] == [True, True, False]
    first = _deck('deck.retire_rule="first_all_correct"', "deck.hard_consecutive_zero=2")
    assert (first.rules.easy, first.rules.mastery_streak) == ("first_all_correct", 1)
    assert first.rules.hard_consecutive_zero == 2
    retirement = first.record("a", 8, 8)
    assert retirement is not None
    assert retirement.reason is RetireReason.EASY
    first.record("b", 0, 8)
    hard = first.record("b", 0, 8)
    assert hard is not None
    assert hard.reason is RetireReason.HARD


@pytest.mark.parametrize(("threshold", "probe", "back"), [(0.75, 5, True), (0.75, 6, False),
                                                          (0.0, 0, False)])  # fmt: skip
def test_a_probe_below_the_threshold_returns_the_task_and_zero_switches_feedback_off(
    threshold: float, probe: int, back: bool
) -> None:
    deck = _deck(f"deck.reactivate_below={threshold}", "deck.mastered_groups=1")
    deck.record("a", 8, 8)
    deck.advance(deck.replay_policy.every)
    assert deck.replay_schedule() == ("a",)
    assert deck.record_replay("a", probe, 8).reactivated is back
    assert deck.is_active("a") is back
    assert deck.reactivations == int(back)


def test_no_eviction_retires_nothing_whatever_the_other_keys_say() -> None:
    deck = _deck("deck.eviction=false", "deck.hard_consecutive_zero=1", "deck.mastered_groups=1")
    assert deck.rules == EvictionRules.off()
    for task_id, wins in (("a", 8), ("b", 0), ("a", 8), ("b", 0)):
        assert deck.record(task_id, wins, 8) is None
    assert deck.retired == {}
