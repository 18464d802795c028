"""Shared builders for test turns (not a test module)."""

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


# -- hypothesis strategies shared by the property tests

from hypothesis import strategies as st  # noqa: E402

from swe_formatcheck._lexer import THINK_MARKERS, XML_CALL_MARKERS  # noqa: E402

TOOL_NAMES = st.from_regex(r"[A-Za-z0-9_-]{1,16}", fullmatch=True)
#: Pieces that stress a scanner: markup near-misses, reasoning tags, newlines, NUL, surrogates.
FRAGMENTS = (
    "<",
    ">",
    "</",
    "=",
    "\n",
    "\n\n",
    " ",
    "\t",
    "\r\n",
    "\x00",
    "\ud800",
    "\udfff",
    "<think>",
    "</think>",
    "<div>",
    "</div>",
    "<parameter",
    "</parameter",
    "<function >",
    "<tool_call",
    "&lt;",
    '"',
    "\\",
    "{",
    "}",
    "\u00e9",
    "\U0001f600",
)
ANY_TEXT = st.lists(st.one_of(st.text(), st.sampled_from(FRAGMENTS)), max_size=8).map("".join)
ALL_MARKUP = (*THINK_MARKERS, *XML_CALL_MARKERS)


def without(markers: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Text that holds none of `markers` (each occurrence is cut out, so nothing is filtered)."""

    def scrub(text: str) -> str:
        while any(marker in text for marker in markers):
            for marker in markers:
                text = text.replace(marker, "")
        return text

    return ANY_TEXT.map(scrub)
