"""Group advantages and reward shaping against the readable reference and their invariants."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cispo_loss import (
    InputError,
    LengthPenalty,
    RewardShaping,
    group_advantages,
    length_penalty,
    shape_rewards,
)
from cispo_loss.reference import reference_group_advantages

rewards_and_groups = st.integers(1, 24).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.integers(-3, 6), min_size=n, max_size=n),
    )
)


@given(rewards_and_groups, st.booleans())
def test_matches_reference(data: tuple[list[float], list[int]], normalize_std: bool) -> None:
    rewards, groups = data
    got = group_advantages(
        torch.tensor(rewards, dtype=torch.float64),
        torch.tensor(groups),
        normalize_std=normalize_std,
    )
    want = reference_group_advantages(rewards, groups, normalize_std=normalize_std)
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=1e-9, atol=1e-9)


@given(rewards_and_groups)
def test_advantages_sum_to_zero_in_every_group(data: tuple[list[float], list[int]]) -> None:
    rewards, groups = data
    ids = torch.tensor(groups)
    adv = group_advantages(torch.tensor(rewards, dtype=torch.float64), ids)
    for group in ids.unique():
        assert abs(float(adv[ids == group].sum())) < 1e-9


@given(rewards_and_groups, st.randoms(use_true_random=False))
def test_permuting_rollouts_permutes_advantages(data: tuple[list[float], list[int]], rnd) -> None:  # type: ignore[no-untyped-def]
    rewards, groups = data
    order = list(range(len(rewards)))
    rnd.shuffle(order)
    perm = torch.tensor(order)
    r, g = torch.tensor(rewards, dtype=torch.float64), torch.tensor(groups)
    torch.testing.assert_close(group_advantages(r[perm], g[perm]), group_advantages(r, g)[perm])


def test_uniform_groups_and_singletons_get_zero() -> None:
    rewards = torch.tensor([1.0, 1.0, 0.0, 0.0, 0.7])
    groups = torch.tensor([0, 0, 1, 1, 2])
    for normalize_std in (False, True):
        adv = group_advantages(rewards, groups, normalize_std=normalize_std)
        assert torch.equal(adv, torch.zeros(5))


def test_std_normalisation_gives_unit_population_std() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 3.0, 5.0], dtype=torch.float64)
    groups = torch.tensor([4, 4, 4, 4, 9, 9])
    adv = group_advantages(rewards, groups, normalize_std=True, eps=0.0)
    for g in (4, 9):
        chosen = adv[groups == g]
        assert float(chosen.std(correction=0)) == pytest.approx(1.0)
    # without std division the paper's recipe keeps the raw scale: R - mean
    raw = group_advantages(rewards, groups)
    torch.testing.assert_close(
        raw, torch.tensor([0.75, -0.25, -0.25, -0.25, -1.0, 1.0], dtype=torch.float64)
    )


def test_keeps_dtype_and_device() -> None:
    adv = group_advantages(torch.tensor([1.0, 0.0], dtype=torch.bfloat16), torch.tensor([0, 0]))
    assert adv.dtype == torch.bfloat16
    assert adv.tolist() == [0.5, -0.5]


@pytest.mark.parametrize(
    ("rewards", "groups", "name"),
    [
        (torch.tensor([]), torch.tensor([], dtype=torch.int64), "rewards"),
        (torch.tensor([1.0, float("nan")]), torch.tensor([0, 0]), "rewards"),
        (torch.tensor([1.0, float("inf")]), torch.tensor([0, 0]), "rewards"),
        (torch.tensor([[1.0, 0.0]]), torch.tensor([[0, 0]]), "rewards"),
        (torch.tensor([1, 0]), torch.tensor([0, 0]), "rewards"),
        (torch.tensor([1.0, 0.0]), torch.tensor([0, 0, 1]), "group_ids"),
        (torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), "group_ids"),
    ],
)
def test_bad_input_names_the_tensor(rewards: torch.Tensor, groups: torch.Tensor, name: str) -> None:
    with pytest.raises(InputError) as info:
        group_advantages(rewards, groups)
    assert info.value.tensor == name
    assert str(info.value).startswith(name)
    assert isinstance(info.value, ValueError)


def test_length_penalty_ramp() -> None:
    penalty = LengthPenalty(max_length=100, buffer=20, coef=0.5)
    got = length_penalty(torch.tensor([0, 80, 90, 100, 150]), penalty)
    torch.testing.assert_close(
        got, torch.tensor([0.0, 0.0, -0.25, -0.5, -0.5], dtype=torch.float64)
    )


def test_shape_rewards_default_is_identity() -> None:
    rewards = torch.tensor([1.0, 0.0, 1.0])
    shaped = shape_rewards(rewards)
    assert torch.equal(shaped, rewards)
    assert shaped is not rewards


def test_invalid_override_wins_over_length_penalty() -> None:
    config = RewardShaping(invalid_reward=-1.0, length_penalty=LengthPenalty(10, 5))
    shaped = shape_rewards(
        torch.tensor([1.0, 1.0, 0.0, 1.0]),
        valid=torch.tensor([True, False, False, True]),
        lengths=torch.tensor([3, 3, 30, 8]),
        config=config,
    )
    torch.testing.assert_close(shaped, torch.tensor([1.0, -1.0, -1.0, 0.4]))


def test_override_feeds_group_advantages() -> None:
    """The gate's -1 changes the group mean, exactly as the paper orders it (shape, then centre)."""
    rewards = shape_rewards(
        torch.tensor([1.0, 0.0, 0.0]),
        valid=torch.tensor([True, True, False]),
        config=RewardShaping(invalid_reward=-1.0),
    )
    adv = group_advantages(rewards, torch.tensor([0, 0, 0]))
    torch.testing.assert_close(adv, torch.tensor([1.0, 0.0, -1.0]))


@pytest.mark.parametrize(
    ("kwargs", "config", "name"),
    [
        ({}, RewardShaping(invalid_reward=-1.0), "valid"),
        ({"valid": torch.tensor([True])}, RewardShaping(invalid_reward=-1.0), "valid"),
        ({"valid": torch.tensor([2, 0])}, RewardShaping(invalid_reward=-1.0), "valid"),
        ({}, RewardShaping(length_penalty=LengthPenalty(10, 2)), "lengths"),
        (
            {"lengths": torch.tensor([1.0, 2.0])},
            RewardShaping(length_penalty=LengthPenalty(10, 2)),
            "lengths",
        ),
        (
            {"lengths": torch.tensor([1, -2])},
            RewardShaping(length_penalty=LengthPenalty(10, 2)),
            "lengths",
        ),
    ],
)
def test_shape_rewards_bad_input(
    kwargs: dict[str, torch.Tensor], config: RewardShaping, name: str
) -> None:
    with pytest.raises(InputError) as info:
        shape_rewards(torch.tensor([1.0, 0.0]), config=config, **kwargs)
    assert info.value.tensor == name
