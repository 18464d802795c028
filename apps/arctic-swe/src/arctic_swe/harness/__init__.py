"""The agent harness (Mini-SWE-Agent-Plus shape): engine turns, raw format check, episode gate,
sandbox tools, observations appended as tokens, graded submit — one ``Trajectory`` per rollout."""

from arctic_swe.harness._config import SYSTEM_PROMPT, TINY_HARNESS, HarnessConfig
from arctic_swe.harness._durations import mask_durations
from arctic_swe.harness._episode import (
    TOOLS,
    clip,
    episode_format,
    prompt_text,
    run_episode,
    run_tool,
)
from arctic_swe.harness._errors import HarnessError
from arctic_swe.harness._report import summary, summary_table, trajectory_view
from arctic_swe.harness._rollout import run_rollouts
from arctic_swe.harness._run_config import harness_config
from arctic_swe.harness._sampler import EngineSampler, SampledTurn, ScriptedSampler, TurnSampler
from arctic_swe.harness._trajectory import NOT_GENERATED, Trajectory, TurnRecord

__all__ = [
    "NOT_GENERATED",
    "SYSTEM_PROMPT",
    "TINY_HARNESS",
    "TOOLS",
    "EngineSampler",
    "HarnessConfig",
    "HarnessError",
    "SampledTurn",
    "ScriptedSampler",
    "Trajectory",
    "TurnRecord",
    "TurnSampler",
    "clip",
    "episode_format",
    "harness_config",
    "mask_durations",
    "prompt_text",
    "run_episode",
    "run_rollouts",
    "run_tool",
    "summary",
    "summary_table",
    "trajectory_view",
]
