"""`check_turn`: the strict verdict on one raw assistant turn (Arctic-SWE §3.2, correction 2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from swe_formatcheck._codes import Code
from swe_formatcheck._hermes import HermesDialect
from swe_formatcheck._lexer import WHITESPACE
from swe_formatcheck._qwen_xml import QwenXmlDialect
from swe_formatcheck._scan import Dialect, TurnScanner
from swe_formatcheck._tools import ToolCall, ToolSpec, resolve_tools
from swe_formatcheck._verdict import TurnVerdict, Violation

DialectName = Literal["qwen3_coder", "hermes"]
ReasoningMode = Literal["required", "optional", "forbidden"]

DIALECTS: Final[Mapping[str, Dialect]] = {
    "qwen3_coder": QwenXmlDialect(),
    "hermes": HermesDialect(),
}
REASONING_MODES: Final = ("required", "optional", "forbidden")


def check_turn(
    raw: str,
    *,
    tools: Mapping[str, ToolSpec] | tuple[ToolSpec, ...] | list[ToolSpec],
    dialect: DialectName = "qwen3_coder",
    reasoning: ReasoningMode = "required",
    stopped: bool = True,
    think_prefilled: bool = False,
) -> TurnVerdict:
    """Validate the raw generated text of one assistant turn, exactly as the engine emitted it.

    Args:
        raw: the decoded completion of one turn, without the stop token (``<|im_end|>``).
        tools: the declared tools: a tuple/list of `ToolSpec` (e.g.
            ``TOOLSETS["mini_swe_agent_plus"]``) or a mapping name -> `ToolSpec`.
        dialect: ``"qwen3_coder"`` (Qwen3.5 / Qwen3-Coder XML) or ``"hermes"`` (JSON).
        reasoning: whether a leading ``<think>...</think>`` block is ``"required"``,
            ``"optional"`` or ``"forbidden"``.
        stopped: whether generation ended on the stop token; ``False`` (cut off by a length
            limit) always yields ``truncated``.
        think_prefilled: the chat template already ended the prompt with ``<think>\\n`` (Qwen3.5
            thinking mode), so `raw` starts inside the reasoning and must close it.

    Returns:
        A `TurnVerdict`: ``ok`` and ``call`` when the turn is exactly one well-formed call of a
        declared tool, else the ``codes`` of every kind of violation found.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: an unknown `dialect` / `reasoning`, or ``think_prefilled`` with
            ``reasoning="forbidden"``.

    Never raises on the content of `raw`: any ``str`` (lone surrogates, NUL, megabytes) gets a
    verdict, in time linear in its length.
    """
    spec_by_name = _validate_arguments(raw, tools, dialect, reasoning, stopped, think_prefilled)
    if not raw.strip(WHITESPACE):
        empty = [Violation(Code.EMPTY_TURN, 0, "the turn is empty")]
        if not stopped:
            empty.append(Violation(Code.TRUNCATED, len(raw), "cut off before the stop token"))
        return TurnVerdict(tuple(empty), None, None)
    scanner = TurnScanner(raw, DIALECTS[dialect], spec_by_name)
    if not stopped:
        scanner.flag(Code.TRUNCATED, len(raw), "generation was cut off before the stop token")
    scanner.run(think_prefilled=think_prefilled)
    has_reasoning = scanner.reasoning is not None
    if reasoning == "required" and not has_reasoning:
        scanner.flag(Code.REASONING_MISSING, 0, "the turn must open with <think>...</think>")
    elif reasoning == "forbidden" and has_reasoning:
        scanner.flag(Code.REASONING_FORBIDDEN, 0, "reasoning blocks are not allowed here")
    violations = scanner.violations
    call = None
    if not violations and scanner.call is not None:
        call = ToolCall(scanner.call[0], scanner.call[1])
    return TurnVerdict(violations, call, scanner.reasoning)


def _validate_arguments(
    raw: object,
    tools: object,
    dialect: object,
    reasoning: object,
    stopped: object,
    think_prefilled: object,
) -> Mapping[str, ToolSpec]:
    if not isinstance(raw, str):
        raise TypeError(f"raw must be str, got {type(raw).__name__}")
    for name, value in (("dialect", dialect), ("reasoning", reasoning)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be str, got {type(value).__name__}")
    for name, value in (("stopped", stopped), ("think_prefilled", think_prefilled)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be bool, got {type(value).__name__}")
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {sorted(DIALECTS)}, got {dialect!r}")
    if reasoning not in REASONING_MODES:
        raise ValueError(f"reasoning must be one of {REASONING_MODES}, got {reasoning!r}")
    if think_prefilled and reasoning == "forbidden":
        raise ValueError("think_prefilled=True opens a reasoning block; it cannot be forbidden")
    try:
        return resolve_tools(tools)
    except TypeError as exc:
        raise TypeError(f"tools: {exc}") from None
