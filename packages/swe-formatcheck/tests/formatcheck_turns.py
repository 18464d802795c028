"""Hand-written turn builders shared by the tests (not a test module).

The hypothesis strategies live in the public kit, `swe_formatcheck.strategies`.
"""

from __future__ import annotations

from swe_formatcheck import TOOLSETS, ToolCall, ToolSpec, TurnVerdict, check_turn

TOOLS: tuple[ToolSpec, ...] = TOOLSETS["mini_swe_agent_plus"]
THINK = "<think>\nLook around first.\n</think>\n\n"


def xml_call(name: str, *params: tuple[str, str]) -> str:
    """A canonical qwen3_coder envelope written by hand (independent of render_turn)."""
    body = "".join(f"<parameter={param}>\n{value}\n</parameter>\n" for param, value in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


LS = xml_call("execute_bash", ("command", "ls"))


def check(raw: str, **options: object) -> TurnVerdict:
    """`check_turn` with the Mini-SWE-Agent-Plus tools by default."""
    options.setdefault("tools", TOOLS)
    return check_turn(raw, **options)  # type: ignore[arg-type]


def bash(command: str) -> ToolCall:
    return ToolCall("execute_bash", {"command": command})
