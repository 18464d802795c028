"""TokenVersions, GroupRecord and PolicyClock against a per-token reference."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from load_router import GroupRecord, InvalidArgumentError, PolicyClock, TokenVersions


def test_runs_merge_equal_versions_and_expand() -> None:
    versions = TokenVersions()
    versions.append(0, 3)
    versions.append(0, 2)
    versions.append(2, 1)
    versions.append(2, 0)
    assert versions.runs == ((0, 5), (2, 1))
    assert versions.per_token() == [0, 0, 0, 0, 0, 2]
    assert versions.num_tokens == 6
    assert versions.oldest == 0


def test_versions_never_go_backwards() -> None:
    versions = TokenVersions([(3, 1)])
    with pytest.raises(InvalidArgumentError, match="backwards"):
        versions.append(2, 1)
    assert versions.runs == ((3, 1),)  # the failed call changed nothing


version_runs = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=6).map(
    lambda steps: [(sum(d for d, _ in steps[: i + 1]), n) for i, (_, n) in enumerate(steps)]
)


@given(st.lists(version_runs, min_size=1, max_size=4), st.integers(0, 4), st.integers(0, 6))
def test_screen_matches_per_token_reference(
    rollouts: list[list[tuple[int, int]]], cap: int, extra: int
) -> None:
    group = GroupRecord("g", tuple(TokenVersions(r) for r in rollouts))
    tokens = [v for r in rollouts for v, n in r for _ in range(n)]
    trainer_version = max(tokens, default=0) + extra
    clock = PolicyClock(max_off_policy=cap, start_version=trainer_version)
    screened = clock.screen([group])
    expected_lag = trainer_version - min(tokens) if tokens else 0
    assert group.lag_at(trainer_version) == expected_lag
    assert group.token_lag_sum(trainer_version) == sum(trainer_version - v for v in tokens)
    assert (len(screened.dropped) == 1) == (expected_lag > cap)
    clock.advance()
    stats = clock.history[-1]
    assert stats.dropped + stats.kept == 1
    assert stats.mean_offered_lag == expected_lag
    if stats.kept:
        assert stats.max_lag == expected_lag
        if tokens:
            assert stats.mean_token_lag == pytest.approx(
                sum(trainer_version - v for v in tokens) / len(tokens)
            )


def test_drops_are_counted_per_update() -> None:
    clock = PolicyClock(max_off_policy=1)
    fresh = GroupRecord("fresh", (TokenVersions([(0, 4)]),))
    assert clock.screen([fresh]).kept == (fresh,)
    clock.advance()
    clock.advance()  # version 2: the group's lag is 2 > 1
    screened = clock.screen([fresh, fresh])
    assert screened.kept == ()
    assert len(screened.dropped) == 2
    assert clock.dropped_this_update == 2
    clock.advance()
    assert [u.dropped for u in clock.history] == [0, 0, 2]
    assert clock.total_dropped == 2
    assert clock.version == 3
    assert clock.dropped_this_update == 0


def test_group_from_the_future_is_rejected() -> None:
    clock = PolicyClock()
    with pytest.raises(InvalidArgumentError, match="newer than the trainer"):
        clock.screen([GroupRecord("g", (TokenVersions([(1, 1)]),))])


def test_bad_clock_arguments() -> None:
    with pytest.raises(InvalidArgumentError):
        PolicyClock(max_off_policy=-1)
    with pytest.raises(InvalidArgumentError):
        PolicyClock(start_version=-3)


def test_default_cap_is_four() -> None:
    assert PolicyClock().max_off_policy == 4


@given(st.lists(st.lists(st.integers(0, 4), max_size=8).map(sorted), max_size=5))
def test_extend_by_turns_equals_the_per_token_sequence(turns: list[list[int]]) -> None:
    # Turns come in order and versions only move forward: shift each turn past the previous.
    shifted: list[list[int]] = []
    floor = 0
    for turn in turns:
        shifted.append([floor + v for v in turn])
        floor = shifted[-1][-1] if turn else floor
    record = TokenVersions()
    for turn in shifted:
        record.extend(turn)
    flat = [v for turn in shifted for v in turn]
    assert record.per_token() == flat
    assert record.num_tokens == len(flat)
    assert record.oldest == (flat[0] if flat else None)
    assert all(a[0] < b[0] for a, b in zip(record.runs, record.runs[1:], strict=False))


def test_extend_refuses_a_turn_older_than_the_rollout() -> None:
    record = TokenVersions([(2, 3)])
    with pytest.raises(InvalidArgumentError, match="backwards"):
        record.extend([1, 2])
