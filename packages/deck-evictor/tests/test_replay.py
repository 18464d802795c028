"""Replay probes: scheduling, scores kept apart from training stats, forgetting, re-activation."""

from __future__ import annotations

import math

import pytest

from deck_evictor import Deck, EvictionRules, NotRetiredError, ReplayPolicy, RetireReason


def retired_deck(policy: ReplayPolicy) -> Deck:
    """Tasks e0..e3 retired easy at updates 0..3, h0 retired hard at update 4, a0 active."""
    deck = Deck(["e0", "e1", "e2", "e3", "h0", "a0"], replay=policy, seed=0)
    for update, task_id in enumerate(["e0", "e1", "e2", "e3"]):
        deck.advance(update)
        deck.record(task_id, 8, 8)
    deck.advance(4)
    for _ in range(3):
        deck.record("h0", 0, 8)
    return deck


def test_schedule_fires_every_n_updates_respects_age_size_and_reasons() -> None:
    deck = retired_deck(ReplayPolicy(every=5, size=3, min_age=2))
    assert deck.replay_schedule(7) == ()  # not a probe update
    assert deck.replay_schedule(5) == ("e0", "e1", "e2")  # e3 (age 2) waits for size; h0 too young
    deck.advance(10)
    assert deck.replay_schedule() == ("e0", "e1", "e2")
    assert deck.replay_schedule() == ("e0", "e1", "e2")  # pure: asking twice reserves nothing
    easy_only = retired_deck(ReplayPolicy(every=1, size=10, min_age=0, reasons=["easy"]))
    assert easy_only.replay_schedule(4) == ("e0", "e1", "e2", "e3")


def test_least_recently_probed_go_first_so_every_retired_task_is_revisited() -> None:
    deck = retired_deck(ReplayPolicy(every=1, size=2, min_age=0))
    seen: list[str] = []
    for update in range(5, 10):
        deck.advance(update)
        for task_id in deck.replay_schedule():
            deck.record_replay(task_id, 8, 8)
            seen.append(task_id)
    assert seen[:5] == ["e0", "e1", "e2", "e3", "h0"]
    assert set(seen) == {"e0", "e1", "e2", "e3", "h0"}


def test_replay_scores_stay_out_of_training_stats_and_report_forgetting() -> None:
    deck = retired_deck(ReplayPolicy(every=1, min_age=0))
    before = deck.stats("e0")
    deck.advance(20)
    first = deck.record_replay("e0", 7, 8)
    second = deck.record_replay("e0", 5, 8)
    assert deck.stats("e0") == before
    assert first.probe_rate == pytest.approx(7 / 8)
    assert second.replay_rate == pytest.approx(12 / 16)
    assert second.forgetting == pytest.approx(1.0 - 12 / 16)
    stat = deck.forgetting()["e0"]
    assert (stat.probes, stat.replay_attempts, stat.replay_successes) == (2, 16, 12)
    assert stat.last_probe_update == 20
    assert set(deck.forgetting()) == {"e0"}


def test_replay_reward_and_the_replay_adjusted_reward_expose_forgetting() -> None:
    deck = retired_deck(ReplayPolicy(every=1, min_age=0))
    blind = deck.adjusted_reward()
    assert blind.value == pytest.approx(4 / 5)  # four easy at 1.0, one hard at 0.0
    deck.record_replay("e0", 4, 8)
    deck.record_replay("e1", 8, 8)
    deck.record_replay("h0", 1, 8)
    after = deck.adjusted_reward()
    assert after.value == blind.value  # eviction-adjusted reward cannot see it
    assert after.replay_adjusted == pytest.approx((0.5 + 1 + 1 + 1 + 1 / 8) / 5)
    easy = deck.replay_reward()
    assert (easy.tasks_probed, easy.attempts, easy.successes) == (2, 16, 12)
    assert easy.reward == pytest.approx(0.75)
    assert easy.mean_forgetting == pytest.approx(0.25)
    hard = deck.replay_reward([RetireReason.HARD])
    assert hard.mean_forgetting == pytest.approx(-1 / 8)
    assert math.isnan(deck.replay_reward(["curriculum_solved"]).reward)


def test_forgotten_easy_task_is_reactivated_when_configured() -> None:
    deck = retired_deck(ReplayPolicy(every=1, min_age=0, reactivate_below=0.5))
    assert not deck.record_replay("e0", 4, 8).reactivated  # 0.5 is not below 0.5
    outcome = deck.record_replay("e1", 3, 8)
    assert outcome.reactivated
    assert deck.is_active("e1")
    assert "e1" not in deck.retired
    assert "e1" in deck.sample(10).task_ids


def test_hard_task_that_became_solvable_is_reactivated_when_configured() -> None:
    never = retired_deck(ReplayPolicy(every=1, min_age=0))
    assert not never.record_replay("h0", 8, 8).reactivated
    deck = retired_deck(ReplayPolicy(every=1, min_age=0, reactivate_hard_at_or_above=0.25))
    assert not deck.record_replay("h0", 1, 8).reactivated
    assert deck.record_replay("h0", 2, 8).reactivated
    assert deck.stats("h0").consecutive_zero == 0


def test_re_retirement_starts_fresh_replay_evidence() -> None:
    deck = retired_deck(ReplayPolicy(every=1, min_age=0, reactivate_below=0.5))
    deck.record_replay("e0", 0, 8)
    deck.record("e0", 8, 8)
    assert "e0" not in deck.forgetting()


def test_probing_an_active_task_is_refused() -> None:
    deck = retired_deck(ReplayPolicy())
    with pytest.raises(NotRetiredError):
        deck.record_replay("a0", 1, 8)
    with pytest.raises(NotRetiredError):
        deck.reactivate("a0")


def test_a_forgotten_mastered_task_must_earn_its_streak_again() -> None:
    """Replay feedback: the probe that fails puts the task back with its history kept (counts,
    times retired) and its streak restarted, so one lucky group cannot retire it again."""
    deck = Deck(
        ["m0", "a0"],
        rules=EvictionRules.mastered_only(2),
        replay=ReplayPolicy(every=1, min_age=0, reactivate_below=0.75),
        seed=0,
    )
    deck.record("m0", 8, 8)
    assert deck.record("m0", 8, 8) is not None
    before = deck.stats("m0")
    assert not deck.record_replay("m0", 6, 8).reactivated  # 0.75 is not below 0.75
    assert deck.reactivations == 0
    assert deck.record_replay("m0", 5, 8).reactivated
    after = deck.stats("m0")
    assert after.active
    assert (after.groups, after.attempts, after.successes) == (2, 16, 16)  # history kept
    assert (after.times_retired, after.times_reactivated) == (1, 1)
    assert after.consecutive_all_correct == 0 < before.consecutive_all_correct
    assert deck.reactivations == 1
    assert deck.record("m0", 8, 8) is None  # one all-correct group is not a streak of two
    again = deck.record("m0", 8, 8)
    assert again is not None
    assert deck.stats("m0").times_retired == 2


def test_a_late_group_never_brings_a_retired_task_back() -> None:
    deck = Deck(["m0"], rules=EvictionRules.mastered_only(1), seed=0)
    deck.record("m0", 4, 4)
    assert deck.record("m0", 0, 4) is None  # a straggler of the retired task fails
    assert not deck.is_active("m0")
    assert deck.stats("m0").late_groups == 1
    assert deck.reactivations == 0
