"""`check_turn`: the strict verdict on one raw assistant turn (Arctic-SWE §3.2, correction 2),
and `parse_lenient`: what a forgiving public parser would execute instead (the ablation)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from swe_formatcheck._dialect import REASONING_MODES, ReasoningMode
from swe_formatcheck._registry import get_dialect
from swe_formatcheck._tools import ToolCall, ToolSpec, resolve_tools
from swe_formatcheck._verdict import TurnVerdict

#: The built-in dialects' names (a type hint; any registered name is accepted).
DialectName = Literal["qwen3_coder", "hermes"]


def check_turn(
    raw: str,
    *,
    tools: Mapping[str, ToolSpec] | tuple[ToolSpec, ...] | list[ToolSpec],
    dialect: str = "qwen3_coder",
    reasoning: ReasoningMode = "required",
    stopped: bool = True,
    think_prefilled: bool = False,
) -> TurnVerdict:
    """Validate the raw generated text of one assistant turn, exactly as the engine emitted it.

    Args:
        raw: the decoded completion of one turn, without the stop token (``<|im_end|>``).
        tools: the declared tools: a tuple/list of `ToolSpec` (e.g.
            ``TOOLSETS["mini_swe_agent_plus"]``) or a mapping name -> `ToolSpec`.
        dialect: ``"qwen3_coder"`` (Qwen3.5 / Qwen3-Coder XML), ``"hermes"`` (JSON) or any
            other name of `dialect_names` (its `Dialect.check` decides).
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
        ValueError: an unknown `reasoning`, or ``think_prefilled`` with
            ``reasoning="forbidden"``; `UnknownDialectError` (a ValueError) for an unknown
            `dialect`.

    Never raises on the content of `raw`: any ``str`` (lone surrogates, NUL, megabytes) gets a
    verdict, in time linear in its length.
    """
    spec_by_name = _validate_arguments(raw, tools, dialect, reasoning, stopped, think_prefilled)
    return get_dialect(dialect).check(
        raw,
        tools=spec_by_name,
        reasoning=reasoning,
        stopped=stopped,
        think_prefilled=think_prefilled,
    )


def parse_lenient(
    raw: str,
    *,
    tools: Mapping[str, ToolSpec] | Iterable[ToolSpec],
    dialect: str = "qwen3_coder",
) -> ToolCall | None:
    """The call a forgiving public parser of `dialect` would execute from `raw`, or ``None``.

    Not a check: it repairs what `check_turn` rejects (an unclosed envelope, text around the
    call, the last of two duplicate parameters), as the stacks of Arctic-SWE §3.2 do. It exists
    for the lenient-format ablation, to measure what the strict rule prevents. The call names a
    declared tool and has every required parameter; unknown parameters are dropped.

    Raises:
        TypeError: `raw` is not a ``str`` or `tools` is malformed.
        UnknownDialectError: `dialect` is not a registered name (a ValueError).
    """
    if not isinstance(raw, str):
        raise TypeError(f"raw must be str, got {type(raw).__name__}")
    try:
        spec_by_name = resolve_tools(tools)
    except TypeError as exc:
        raise TypeError(f"tools: {exc}") from None
    return get_dialect(dialect).parse_lenient(raw, spec_by_name)


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
    assert isinstance(dialect, str)  # checked just above; narrows the type
    get_dialect(dialect)  # UnknownDialectError names the known ones
    if reasoning not in REASONING_MODES:
        raise ValueError(f"reasoning must be one of {REASONING_MODES}, got {reasoning!r}")
    if think_prefilled and reasoning == "forbidden":
        raise ValueError("think_prefilled=True opens a reasoning block; it cannot be forbidden")
    try:
        return resolve_tools(tools)
    except TypeError as exc:
        raise TypeError(f"tools: {exc}") from None
