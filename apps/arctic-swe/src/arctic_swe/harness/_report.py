"""Readable trajectories and the rollout summary table (``arctic-swe rollout``)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from arctic_swe.harness._trajectory import Trajectory


def trajectory_view(trajectory: Trajectory, observation_lines: int = 12) -> Panel:
    """A panel with every turn: the raw text the model wrote, its verdict, the observation."""
    parts: list[Text] = []
    for turn in trajectory.turns:
        verdict = "valid" if not turn.codes else "INVALID " + ", ".join(turn.codes)
        parts.append(
            Text(f"turn {turn.index}  [{verdict}]  {turn.end - turn.start} tokens", "bold")
        )
        parts.append(Text(turn.raw, "cyan"))
        if turn.observation is not None:
            lines = turn.observation.splitlines()
            shown = "\n".join(lines[:observation_lines])
            if len(lines) > observation_lines:
                shown += f"\n… ({len(lines) - observation_lines} more lines)"
            parts.append(Text(shown, "dim"))
    footer = (
        f"termination: {trajectory.termination}   raw reward: {trajectory.raw_reward}   "
        f"gated reward: {trajectory.reward}   tokens: {len(trajectory.token_ids)} "
        f"({trajectory.generated_tokens} generated)   {trajectory.seconds:.1f} s"
    )
    parts.append(Text(footer, "bold green" if trajectory.solved else "bold red"))
    return Panel(Group(*parts), title=trajectory.task_id)


def summary(trajectories: Sequence[Trajectory]) -> dict[str, float | int]:
    """Aggregates: solved count and rate, terminations, tokens, latency."""
    count = len(trajectories)
    if not count:
        return {"rollouts": 0}
    solved = sum(t.solved for t in trajectories)
    seconds = [t.seconds for t in trajectories]
    stats: dict[str, float | int] = {
        "rollouts": count,
        "solved": solved,
        "solve_rate": solved / count,
        "mean_tokens": statistics.fmean(len(t.token_ids) for t in trajectories),
        "mean_generated_tokens": statistics.fmean(t.generated_tokens for t in trajectories),
        "mean_turns": statistics.fmean(len(t.turns) for t in trajectories),
        "median_seconds": statistics.median(seconds),
        "max_seconds": max(seconds),
        "generate_seconds": sum(t.generate_seconds for t in trajectories),
        "tool_seconds": sum(t.tool_seconds for t in trajectories),
        "grade_seconds": sum(t.grade_seconds for t in trajectories),
    }
    for reason, n in Counter(t.termination for t in trajectories).items():
        stats[f"terminated_{reason}"] = n
    return stats


def summary_table(trajectories: Sequence[Trajectory]) -> Table:
    """The summary as a rich table."""
    table = Table(title="rollout summary")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in summary(trajectories).items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        table.add_row(key, shown)
    return table
