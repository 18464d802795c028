"""Tests for ``arctic_swe.harness._report`` (summary figures and the readable view)."""

from rich.console import Console

from arctic_swe.harness import Trajectory, TurnRecord, summary, summary_table, trajectory_view


def _make(reward: float, termination: str, seconds: float) -> Trajectory:
    turn = TurnRecord(0, 1, 3, "<think>\nx\n</think>", (), "execute_bash", {"command": "ls"},
                      "a\nb", 3, 5, "stop", 0.2, 0.1)  # fmt: skip
    return Trajectory("t", 1, (1, 2, 3, 4, 5), (False, True, True, False, False),
                      (0.0, -1.0, -1.0, 0.0, 0.0), (-1, 0, 0, -1, -1), (turn,), termination,
                      reward, reward, seconds=seconds)  # fmt: skip


def test_summary_counts_solved_and_terminations() -> None:
    stats = summary([_make(1.0, "submitted", 2.0), _make(0.0, "invalid_format", 4.0)])
    assert stats["rollouts"] == 2
    assert stats["solved"] == 1
    assert stats["solve_rate"] == 0.5
    assert stats["terminated_submitted"] == 1
    assert stats["terminated_invalid_format"] == 1
    assert stats["median_seconds"] == 3.0
    assert stats["mean_tokens"] == 5.0
    assert summary([]) == {"rollouts": 0}


def test_views_render_the_raw_turn_and_the_figures() -> None:
    console = Console(record=True, width=120)
    console.print(trajectory_view(_make(1.0, "submitted", 1.0)))
    console.print(summary_table([_make(1.0, "submitted", 1.0)]))
    text = console.export_text()
    assert "<think>" in text
    assert "termination: submitted" in text
    assert "solve_rate" in text
