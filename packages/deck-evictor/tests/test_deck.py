"""Deck: construction, sampling, recording, the eviction rules, late groups, adjusted reward."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deck_evictor import (
    Deck,
    DuplicateTaskError,
    EvictionRules,
    InvalidConfigError,
    InvalidResultError,
    RetireReason,
    UnknownTaskError,
    UpdateOrderError,
)


def ids(n: int) -> list[str]:
    return [f"task-{i:03d}" for i in range(n)]


def test_first_all_correct_group_retires_easy_at_the_current_update() -> None:
    deck = Deck(ids(4), seed=0)
    deck.advance(7)
    assert deck.record("task-001", 7, 8) is None
    retirement = deck.record("task-001", 8, 8)
    assert retirement is not None
    assert (retirement.task_id, retirement.reason, retirement.update) == (
        "task-001",
        RetireReason.EASY,
        7,
    )
    assert deck.retired == {"task-001": retirement}
    assert not deck.is_active("task-001")
    assert deck.active_count == 3


def test_three_consecutive_zero_groups_retire_hard_and_a_success_resets_the_run() -> None:
    deck = Deck(ids(2), seed=0)
    assert deck.record("task-000", 0, 8) is None
    assert deck.record("task-000", 0, 8) is None
    assert deck.record("task-000", 1, 8) is None  # run broken
    assert deck.record("task-000", 0, 8) is None
    assert deck.record("task-000", 0, 8) is None
    retirement = deck.record("task-000", 0, 8)
    assert retirement is not None
    assert retirement.reason is RetireReason.HARD
    assert deck.stats("task-000").consecutive_zero == 3


@pytest.mark.parametrize(
    ("rules", "easy_fires", "hard_fires"),
    [
        (EvictionRules.paper(), True, True),
        (EvictionRules.mastered_only(), True, False),
        (EvictionRules(easy=None), False, True),
        (EvictionRules.off(), False, False),
    ],
)
def test_rules_switch_individually(
    rules: EvictionRules, easy_fires: bool, hard_fires: bool
) -> None:
    deck = Deck(["easy", "hard"], rules=rules, seed=0)
    easy = deck.record("easy", 8, 8)
    hard = [deck.record("hard", 0, 8) for _ in range(5)]
    assert (easy is not None) is easy_fires
    assert any(r is not None for r in hard) is hard_fires
    if hard_fires:
        assert [r is not None for r in hard] == [False, False, True, False, False]


def test_min_group_size_keeps_small_groups_from_retiring() -> None:
    deck = Deck(["a"], rules=EvictionRules(min_group_size=4), seed=0)
    assert deck.record("a", 2, 2) is None
    assert deck.record("a", 4, 4) is not None


def test_late_group_for_a_retired_task_counts_but_changes_nothing() -> None:
    deck = Deck(["a", "b"], seed=0)
    first = deck.record("a", 8, 8)
    assert deck.record("a", 0, 8) is None
    stats = deck.stats("a")
    assert (stats.groups, stats.attempts, stats.successes, stats.late_groups) == (2, 16, 8, 1)
    assert deck.retired["a"] == first


def test_sample_is_seeded_and_without_replacement_within_a_pass() -> None:
    deck_a, deck_b = Deck(ids(50), seed=3), Deck(ids(50), seed=3)
    draws = [deck_a.sample(10) for _ in range(5)]
    assert draws == [deck_b.sample(10) for _ in range(5)]
    flat = [t for d in draws for t in d.task_ids]
    assert sorted(flat) == ids(50)  # one full pass, each task exactly once
    assert Deck(ids(50), seed=4).sample(10) != draws[0]


def test_draw_across_a_pass_boundary_is_duplicate_free_and_marks_the_boundary() -> None:
    deck = Deck(ids(7), seed=1)
    first = deck.sample(5)
    second = deck.sample(5)
    assert second.new_pass_at == 2
    assert len(set(second.task_ids)) == 5
    assert set(first.task_ids) | set(second.task_ids[:2]) == set(ids(7))
    # the rest of pass 1 holds exactly the tasks not yet drawn in it
    rest = deck.sample(4)
    assert set(rest.task_ids) | set(second.task_ids[2:]) == set(ids(7))
    assert not rest.new_pass


def test_retired_tasks_are_skipped_and_exhaustion_is_reported() -> None:
    deck = Deck(ids(5), seed=0)
    for task_id in ids(5)[:3]:
        deck.record(task_id, 8, 8)
    draw = deck.sample(4)
    assert set(draw.task_ids) == {"task-003", "task-004"}
    assert draw.exhausted
    for task_id in ("task-003", "task-004"):
        deck.record(task_id, 8, 8)
    assert deck.exhausted
    empty = deck.sample(3)
    assert (empty.task_ids, empty.exhausted) == ((), True)
    assert deck.sample(0).task_ids == ()


def test_reactivated_task_is_sampled_again() -> None:
    deck = Deck(["a", "b"], seed=0)
    deck.record("a", 8, 8)
    assert deck.sample(2).task_ids == ("b",)
    deck.reactivate("a")
    assert set(deck.sample(2).task_ids) == {"a", "b"}
    assert deck.stats("a").times_retired == 1
    assert deck.record("a", 8, 8) is not None
    assert deck.stats("a").times_retired == 2


def test_adjusted_reward_imputes_retired_verdicts() -> None:
    deck = Deck(["easy", "hard", "mid", "unseen"], seed=0)
    deck.record("easy", 8, 8)
    for _ in range(3):
        deck.record("hard", 0, 8)
    deck.record("mid", 2, 8)
    deck.record("mid", 4, 8)  # latest group counts
    reward = deck.adjusted_reward()
    assert reward.value == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert (reward.active_scored, reward.easy_retired, reward.hard_retired) == (1, 1, 1)
    assert reward.replay_adjusted == reward.value  # nothing probed yet
    assert math.isnan(Deck(["x"], seed=0).adjusted_reward().value)


def test_numpy_integers_are_accepted() -> None:
    deck = Deck(["a"], seed=0)
    assert deck.record("a", np.int64(8), np.int32(8)) is not None


@pytest.mark.parametrize(
    ("successes", "n"), [(9, 8), (-1, 8), (0, 0), (1.0, 8), (True, 8), ("1", 8), (None, 8)]
)
def test_bad_group_is_refused_and_nothing_is_recorded(successes: object, n: object) -> None:
    deck = Deck(["a"], seed=0)
    with pytest.raises(InvalidResultError):
        deck.record("a", successes, n)  # type: ignore[arg-type]
    stats = deck.stats("a")
    assert (stats.groups, stats.attempts, stats.successes) == (0, 0, 0)


@pytest.mark.parametrize("task_id", ["missing", 3, ["a"]])
def test_unknown_task_raises_typed_error(task_id: object) -> None:
    deck = Deck(["a"], seed=0)
    with pytest.raises(UnknownTaskError, match="unknown task id"):
        deck.record(task_id, 1, 8)  # type: ignore[arg-type]
    with pytest.raises(LookupError):
        deck.stats(task_id)  # type: ignore[arg-type]


def test_duplicate_and_malformed_ids_are_refused() -> None:
    with pytest.raises(DuplicateTaskError, match="'b'"):
        Deck(["a", "b", "b"], seed=0)
    with pytest.raises(InvalidConfigError):
        Deck(["a", ""], seed=0)
    with pytest.raises(InvalidConfigError):
        Deck(["a", 1], seed=0)  # type: ignore[list-item]
    with pytest.raises(InvalidConfigError):
        Deck(["a"], seed=-1)
    with pytest.raises(InvalidConfigError, match="single string"):
        Deck("abc", seed=0)
    with pytest.raises(InvalidConfigError):
        Deck(["a"], rules={"easy": None}, seed=0)  # type: ignore[arg-type]


def test_membership_and_repr() -> None:
    deck = Deck(["a", "b"], seed=0)
    deck.record("a", 8, 8)
    assert "a" in deck
    assert "z" not in deck
    assert ["a"] not in deck
    assert len(deck) == 2
    assert "2 tasks, 1 active, 1 retired" in repr(deck)


def test_update_clock_only_moves_forward() -> None:
    deck = Deck(["a"], seed=0)
    assert deck.advance() == 1
    assert deck.advance(5) == 5
    assert deck.advance(5) == 5
    with pytest.raises(UpdateOrderError):
        deck.advance(4)
    assert deck.update == 5


def test_mastered_rule_needs_its_streak_and_any_failure_restarts_it() -> None:
    deck = Deck(ids(2), rules=EvictionRules.mastered_only(3), seed=0)
    assert deck.record("task-000", 8, 8) is None
    assert deck.record("task-000", 8, 8) is None
    assert deck.record("task-000", 7, 8) is None  # streak broken at 2
    assert deck.stats("task-000").consecutive_all_correct == 0
    assert deck.record("task-000", 8, 8) is None
    assert deck.record("task-000", 8, 8) is None
    retirement = deck.record("task-000", 8, 8)
    assert retirement is not None
    assert retirement.reason is RetireReason.EASY
    assert deck.stats("task-000").consecutive_all_correct == 3
    for _ in range(5):  # never retired hard: the final recipe has no hard rule
        assert deck.record("task-001", 0, 8) is None


def test_a_small_group_extends_the_streak_but_never_triggers_retirement() -> None:
    rules = EvictionRules(easy="mastered", mastered_groups=2, min_group_size=4)
    deck = Deck(ids(1), rules=rules, seed=0)
    assert deck.record("task-000", 8, 8) is None
    assert deck.record("task-000", 2, 2) is None  # all-correct but too small to decide
    retirement = deck.record("task-000", 4, 4)
    assert retirement is not None
    assert deck.stats("task-000").consecutive_all_correct == 3


@settings(max_examples=150, deadline=None, database=None)
@given(
    groups=st.lists(
        st.integers(1, 3).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
        max_size=30,
    ),
    hard=st.sampled_from([None, 2]),
    min_group=st.integers(1, 3),
)
def test_mastered_with_a_streak_of_one_decides_exactly_as_first_all_correct(
    groups: list[tuple[int, int]], hard: int | None, min_group: int
) -> None:
    """The old easy rule stays reproducible under the new one (and its README figures with it)."""
    first = Deck(ids(3), rules=EvictionRules(hard_consecutive_zero=hard, min_group_size=min_group))
    mastered = Deck(
        ids(3),
        rules=EvictionRules(
            easy="mastered", mastered_groups=1, hard_consecutive_zero=hard, min_group_size=min_group
        ),
    )
    for index, (wins, n) in enumerate(groups):
        task_id = ids(3)[index % 3]
        assert first.record(task_id, wins, n) == mastered.record(task_id, wins, n)
    assert first.retired == mastered.retired
