"""Tests for ``arctic_swe.harness._trajectory``."""

import pytest

from arctic_swe.harness import Trajectory, TurnRecord


def _trajectory(**overrides: object) -> Trajectory:
    turn = TurnRecord(0, 2, 4, "raw", (), "submit", {}, None, 4, 4, "stop", 0.1, 0.0)
    fields: dict[str, object] = {
        "task_id": "t", "prompt_length": 2, "token_ids": (5, 6, 7, 2), "loss_mask": (False, False, True, True),
        "logprobs": (0.0, 0.0, -0.5, -0.1), "versions": (-1, -1, 3, 3), "turns": (turn,),
        "termination": "submitted", "raw_reward": 1.0, "reward": 1.0, "grade_reasons": ("x",),
    }  # fmt: skip
    fields.update(overrides)
    return Trajectory(**fields)  # type: ignore[arg-type]


def test_json_round_trip_is_exact() -> None:
    trajectory = _trajectory()
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_solved_and_generated_tokens() -> None:
    assert _trajectory().solved
    assert _trajectory().generated_tokens == 2
    assert not _trajectory(reward=0.0).solved


def test_misaligned_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        _trajectory(logprobs=(0.0,))
