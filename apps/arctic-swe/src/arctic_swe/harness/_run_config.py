"""A run's harness: the :class:`HarnessConfig` a run configuration's ``[harness]`` section (and
the engine's ``max_new_tokens``) describes, for the loop and for evaluation alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arctic_swe.harness._config import HarnessConfig

if TYPE_CHECKING:
    from arctic_swe.config import RunConfig


def harness_config(config: RunConfig) -> HarnessConfig:
    """The harness limits and recipe switches of a run (``[harness]`` and the engine's
    ``max_new_tokens``)."""
    h = config.harness
    return HarnessConfig(
        max_turns=h.max_turns,
        max_tokens=h.max_tokens,
        max_new_tokens=config.engine.max_new_tokens,
        observation_chars=h.observation_chars,
        exec_timeout_s=h.exec_timeout_s,
        gated_reward=h.gated_reward,
        strict_format=h.strict_format,
        mask_durations=h.mask_durations,
    )
