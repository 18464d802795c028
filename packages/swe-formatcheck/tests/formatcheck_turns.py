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
    "< /Parameter >",
    "<\u3000parameter =",
    "<|im_end|>",
    "<|",
    "|>",
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


TAG_NAMES = ("tool_call", "function", "parameter", "think")


def _same_letter(char: str, letter: str) -> bool:
    # Broader than any case-insensitive regex engine: scrubbing too much only shrinks the space.
    return (
        letter in (char.lower(), char.lower()[:1], char.casefold())
        or char.upper() == letter.upper()
    )


def tag_variant_at(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts with ``<`` ws* [/ ws*] TAG ws* (= or >), any letter case.

    A slow, readable oracle of what values may not hold; written apart from the package's regex.
    """
    if not text.startswith("<", at):
        return False
    pos = at + 1
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if text.startswith("/", pos):
        pos += 1
        while pos < len(text) and text[pos].isspace():
            pos += 1
    for name in TAG_NAMES:
        end = pos + len(name)
        if end <= len(text) and all(map(_same_letter, text[pos:end], name)):
            while end < len(text) and text[end].isspace():
                end += 1
            if end < len(text) and text[end] in "=>":
                return True
    return False


def special_token_at(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts with ``<|NAME|>`` (NAME: ASCII letters, digits, ``_``)."""
    if not text.startswith("<|", at):
        return False
    end = text.find("|>", at + 2)
    name = text[at + 2 : end]
    return end > at + 2 and all(char.isascii() and (char.isalnum() or char == "_") for char in name)


def unambiguous(text: str) -> bool:
    """No tag variant and no special-token text anywhere in `text`."""
    return not any(tag_variant_at(text, i) or special_token_at(text, i) for i in range(len(text)))


def scrub(text: str, markers: tuple[str, ...]) -> str:
    """Cut out every marker, tag variant and special token (repeatedly: a cut can form a new one)."""
    while True:
        for marker in markers:
            text = text.replace(marker, "")
        bad = [i for i in range(len(text)) if tag_variant_at(text, i) or special_token_at(text, i)]
        if not bad and not any(marker in text for marker in markers):
            return text
        text = "".join(char for i, char in enumerate(text) if i not in set(bad))


def without(markers: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Text that holds none of `markers`, no tag variant and no special-token text (each
    occurrence is cut out, so nothing is filtered)."""
    return ANY_TEXT.map(lambda text: scrub(text, markers))
