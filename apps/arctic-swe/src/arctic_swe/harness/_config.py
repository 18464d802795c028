"""Harness budgets and the system prompt (Mini-SWE-Agent-Plus shape; Arctic-SWE §3.2)."""

from __future__ import annotations

from dataclasses import dataclass

from arctic_swe.harness._errors import HarnessError
from swe_formatcheck import dialect_names

SYSTEM_PROMPT = (
    "You are a software engineer fixing an issue in the repository in your working directory. "
    "Use the tools to inspect and edit files and to run the tests, then call submit."
)


@dataclass(frozen=True)
class HarnessConfig:
    """Budgets of one episode.

    * ``max_turns`` / ``max_tokens`` — the episode gate's budgets (paper: 100 turns, 131k
      tokens); ``max_tokens`` counts the whole trajectory (prompt, turns, observations).
    * ``max_new_tokens`` — the most tokens one turn may generate.
    * ``observation_chars`` — tool output longer than this is cut (head and tail kept).
    * ``invalid_reward`` — the gated reward of a failed episode (0, or -1 where configured).
    * ``exec_timeout_s`` — wall-clock limit of one ``execute_bash``.
    * ``gated_reward`` — the recipe (True): any violation ends the episode with
      ``invalid_reward`` and only a clean submit is graded. False is the paper's ablation: only
      a submit or a budget ends the episode, an invalid turn gets an error observation, and the
      reward is the grade of the final repository state (see ``_ablations``).
    * ``strict_format`` — the recipe (True): swe-formatcheck's raw check decides. False is the
      ablation: a malformed turn a lenient regex parser can repair is executed.
    * ``tool_dialect`` — the tool-call format turns are checked in (and, under the lenient
      ablation, repaired in): ``"auto"`` (detected from the checkpoint's chat template:
      ``"qwen3_coder"`` XML or ``"hermes"`` JSON) or any name of swe-formatcheck's
      ``dialect_names()``.
    * ``mask_durations`` — drop wall-clock durations from pytest's summary lines in tool
      output (``7 passed in 0.02s`` -> ``7 passed``), so no wall-clock time reaches the tokens
      (:func:`~arctic_swe.harness.mask_durations`). Off by default (observations verbatim);
      on in the embedded preset, whose warm start is then the same for the same seed.
    * ``enable_thinking`` — passed to chat templates with a reasoning switch (Qwen3.5's): True
      opens ``<think>`` in the generation prompt, False closes an empty one (turns then carry
      no reasoning); ``None`` keeps the template's default.
    """

    max_turns: int = 100
    max_tokens: int = 131_072
    max_new_tokens: int = 4096
    observation_chars: int = 16_000
    invalid_reward: float = 0.0
    exec_timeout_s: float = 60.0
    system_prompt: str = SYSTEM_PROMPT
    gated_reward: bool = True
    strict_format: bool = True
    tool_dialect: str = "auto"
    enable_thinking: bool | None = None
    mask_durations: bool = False

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_tokens", "max_new_tokens", "observation_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise HarnessError(f"{name} must be a positive int, got {value!r}")
        if self.invalid_reward > 0:
            raise HarnessError(f"invalid_reward must be <= 0, got {self.invalid_reward}")
        for name in ("gated_reward", "strict_format", "mask_durations"):
            if not isinstance(getattr(self, name), bool):
                raise HarnessError(f"{name} must be a bool, got {getattr(self, name)!r}")
        # "auto" (detected from the template) or a name of swe-formatcheck's dialect registry
        if self.tool_dialect != "auto" and self.tool_dialect not in dialect_names():
            choices = ["auto", *dialect_names()]
            raise HarnessError(f"tool_dialect must be one of {choices}, got {self.tool_dialect!r}")
        if self.enable_thinking is not None and not isinstance(self.enable_thinking, bool):
            raise HarnessError(
                f"enable_thinking must be a bool or None, got {self.enable_thinking!r}"
            )
        if self.exec_timeout_s <= 0:
            raise HarnessError(f"exec_timeout_s must be positive, got {self.exec_timeout_s}")


#: The embedded (tiny-model) preset: deck tasks need four turns of a few dozen tokens each.
TINY_HARNESS = HarnessConfig(
    max_turns=8,
    max_tokens=3072,
    max_new_tokens=160,
    observation_chars=1200,
    exec_timeout_s=30.0,
    mask_durations=True,
)
