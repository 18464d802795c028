"""Cumulative-solve-rate curriculum filter (RFT + DAPO curriculum) against a readable reference."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deck_evictor import (
    CurriculumFilter,
    Deck,
    InvalidConfigError,
    InvalidResultError,
    RetireReason,
    split_by_solve_rate,
)

rows = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 30)).map(lambda p: (min(p), max(p))),
    max_size=30,
)


def reference(successes: int, attempts: int, rule: CurriculumFilter) -> str:
    if attempts < rule.min_attempts:
        return "untested"
    if Fraction(successes, attempts) > Fraction(rule.max_solve_rate).limit_denominator(1000):
        return "solved"
    if successes == 0 and rule.drop_never_solved:
        return "unsolved"
    return "kept"


@given(counts=rows, min_attempts=st.integers(1, 5), drop=st.booleans())
def test_split_matches_reference(
    counts: list[tuple[int, int]], min_attempts: int, drop: bool
) -> None:
    rule = CurriculumFilter(drop_never_solved=drop, min_attempts=min_attempts)
    table = [(f"t{i}", s, a) for i, (s, a) in enumerate(counts)]
    report = split_by_solve_rate(table, rule)
    expected: dict[str, list[str]] = {"solved": [], "unsolved": [], "kept": [], "untested": []}
    for task_id, s, a in table:
        verdict = reference(s, a, rule)
        expected[verdict].append(task_id)
        if verdict == "untested":
            expected["kept"].append(task_id)
    assert list(report.dropped_solved) == expected["solved"]
    assert list(report.dropped_unsolved) == expected["unsolved"]
    assert sorted(report.kept) == sorted(expected["kept"])
    assert list(report.untested) == expected["untested"]


def test_exactly_two_thirds_is_kept() -> None:
    report = split_by_solve_rate([("a", 2, 3), ("b", 3, 4), ("c", 0, 6), ("d", 1, 6)])
    assert report.dropped_solved == ("b",)
    assert report.dropped_unsolved == ("c",)
    assert report.kept == ("a", "d")
    at_threshold = [(f"t{a}", 2 * a // 3, a) for a in range(3, 30_000, 3)]
    assert split_by_solve_rate(at_threshold).dropped_solved == ()


def test_deck_applies_the_filter_to_active_tasks_at_a_stage_boundary() -> None:
    deck = Deck(["solved", "unsolved", "mid", "fresh", "easy"], seed=0)
    deck.advance(3)
    deck.record("solved", 7, 8)
    deck.record("unsolved", 0, 8)
    deck.record("mid", 4, 8)
    deck.record("easy", 8, 8)  # retired by the easy rule already: not the filter's business
    report = deck.apply_curriculum()
    assert report.dropped_solved == ("solved",)
    assert report.dropped_unsolved == ("unsolved",)
    assert report.untested == ("fresh",)
    assert set(deck.active_ids) == {"mid", "fresh"}
    retired = deck.retired
    assert retired["solved"].reason is RetireReason.CURRICULUM_SOLVED
    assert (retired["solved"].update, retired["solved"].successes, retired["solved"].n) == (3, 7, 8)
    assert retired["unsolved"].reason is RetireReason.CURRICULUM_UNSOLVED
    assert deck.adjusted_reward().active_scored == 1  # curriculum drops leave the denominator
    assert deck.replay_schedule(10) == ("easy",)  # and are not probed by default


def test_bad_counts_and_bad_filters_are_refused() -> None:
    with pytest.raises(InvalidResultError):
        split_by_solve_rate([("a", 5, 4)])
    with pytest.raises(InvalidConfigError):
        CurriculumFilter(max_solve_rate=1.5)
    with pytest.raises(InvalidConfigError):
        CurriculumFilter(min_attempts=0)
