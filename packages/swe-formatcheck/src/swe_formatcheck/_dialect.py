"""`Dialect`: everything that differs between tool-call formats, as one frozen record.

A dialect is how a call is written inside ``<tool_call>...</tool_call>`` (Qwen3-Coder XML,
Hermes JSON, ...). The reasoning block, the envelope and the episode gate are shared; each
dialect brings three functions: `render` (a call -> the exact text a model must emit),
`check` (a raw turn -> the strict `TurnVerdict`, Arctic-SWE §3.2) and `parse_lenient` (a raw
turn -> the call a forgiving public parser would execute, for the lenient-format ablation).
`check_turn`, `render_turn` and `lenient_parse` look the dialect up by name
(`swe_formatcheck.get_dialect`) and validate their arguments before calling these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, Protocol

import attrs

from swe_formatcheck._tools import ToolCall, ToolSpec
from swe_formatcheck._verdict import TurnVerdict

ReasoningMode = Literal["required", "optional", "forbidden"]
REASONING_MODES: Final[tuple[ReasoningMode, ...]] = ("required", "optional", "forbidden")


class RenderFn(Protocol):
    """Write one turn: the reasoning block (``None``: none) and the call, without the stop
    token; raise `RenderError` when the call cannot be written so that it reads back exactly."""

    def __call__(self, reasoning: str | None, call: ToolCall, *, think_prefilled: bool) -> str: ...


class CheckFn(Protocol):
    """The strict verdict on one raw, non-empty turn (arguments already validated, `tools`
    resolved to a mapping name -> `ToolSpec`)."""

    def __call__(
        self,
        raw: str,
        *,
        tools: Mapping[str, ToolSpec],
        reasoning: ReasoningMode,
        stopped: bool,
        think_prefilled: bool,
    ) -> TurnVerdict: ...


class LenientParseFn(Protocol):
    """The first call a forgiving parser pulls out of `raw` (``None``: it finds none). The
    call's tool must be one of `tools` with every required parameter present."""

    def __call__(self, raw: str, tools: Mapping[str, ToolSpec]) -> ToolCall | None: ...


@attrs.frozen
class Dialect:
    """One tool-call dialect (see the module docstring).

    Attributes:
        name: what ``dialect=`` is given as, e.g. ``"qwen3_coder"``.
        render: `RenderFn`, the exact inverse of `check` for every representable call.
        check: `CheckFn`, the strict rule.
        parse_lenient: `LenientParseFn`, what public stacks would execute instead.
        description: one line for help texts.
    """

    name: str
    render: RenderFn
    check: CheckFn
    parse_lenient: LenientParseFn
    description: str = ""
