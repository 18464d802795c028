"""`GeneratedTurn`: one turn drawn by the property-testing kit, with what the strict rule expects."""

from __future__ import annotations

from typing import Literal

import attrs

from swe_formatcheck._check import DialectName, check_turn
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import ReasoningMode
from swe_formatcheck._tools import ToolCall, ToolSpec
from swe_formatcheck._verdict import TurnVerdict

TurnKind = Literal["valid", "near_miss", "malformed", "adversarial"]


@attrs.frozen
class GeneratedTurn:
    """A raw assistant turn, the `check_turn` options it is checked with, and its expectation.

    Attributes:
        raw: the raw turn text (without the stop token).
        dialect: ``"qwen3_coder"`` or ``"hermes"``.
        tools: the declared tools the turn is checked against.
        reasoning: the ``reasoning=`` mode of `check_turn`.
        think_prefilled: the prompt already ends with ``<think>\\n``.
        kind: ``"valid"`` (accepted with `expected_call`), ``"near_miss"`` (adversarial markup
            that lenient parsers misread; rejected with `expected_codes`), ``"malformed"`` (a
            structural mutation of a valid turn; rejected with `expected_codes`) or
            ``"adversarial"`` (randomly mutated, valid about half of the time: nothing is
            known ahead, the strict verdict decides).
        label: what was done to the turn (``"valid"``, ``"duplicate_parameter"``,
            ``"tag_variant_in_value"``, ``"split_tag+truncate"``, ...).
        expected_call: the call a valid turn holds, else ``None``.
        expected_reasoning: the reasoning text a valid turn holds (``None``: no block).
        expected_codes: exactly the codes `check_turn` must give (``()`` for a valid turn),
            or ``None`` for an adversarial turn.
    """

    raw: str
    dialect: DialectName
    tools: tuple[ToolSpec, ...]
    reasoning: ReasoningMode
    think_prefilled: bool
    kind: TurnKind
    label: str
    expected_call: ToolCall | None = None
    expected_reasoning: str | None = None
    expected_codes: tuple[Code, ...] | None = None

    def verdict(self) -> TurnVerdict:
        """The strict verdict: `check_turn` on `raw` with this turn's options."""
        return check_turn(
            self.raw,
            tools=self.tools,
            dialect=self.dialect,
            reasoning=self.reasoning,
            think_prefilled=self.think_prefilled,
        )
