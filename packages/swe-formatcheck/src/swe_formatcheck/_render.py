"""`render_turn`: write a turn in the exact form `check_turn` accepts (its inverse).

Used to write expert trajectories (the RFT warm start) in the same bytes a model must emit, so
``check_turn(render_turn(r, c), ...).call == c`` for every representable call. The dialect's
`Dialect.render` writes it; this module validates the arguments and looks the dialect up.
"""

from __future__ import annotations

from swe_formatcheck._registry import get_dialect
from swe_formatcheck._tools import ToolCall


def render_turn(
    reasoning: str | None,
    call: ToolCall,
    *,
    dialect: str = "qwen3_coder",
    think_prefilled: bool = False,
) -> str:
    """Render one assistant turn (without the stop token) in canonical form.

    qwen3_coder::

        <think>\\nREASONING\\n</think>\\n\\n<tool_call>\\n<function=NAME>\\n
        <parameter=P>\\nVALUE\\n</parameter>\\n ... </function>\\n</tool_call>

    hermes: the same reasoning block, then ``<tool_call>\\n{JSON}\\n</tool_call>``.

    Args:
        reasoning: the reasoning text, or ``None`` for no reasoning block.
        call: the call to write; parameters are written in the dict's order.
        dialect: ``"qwen3_coder"``, ``"hermes"`` or any other name of `dialect_names`.
        think_prefilled: omit ``<think>\\n`` because the chat template already wrote it; a
            reasoning text is then required (``""`` for an empty one).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        UnknownDialectError: an unknown dialect (a ValueError).
        RenderError: the call or reasoning cannot be written so that it parses back exactly
            (a value holding call markup, a malformed tag name, reasoning holding tags), or
            a public parser would split or shorten it: a whitespace or case variant of a tag
            or special-token text such as ``<|im_end|>`` in a qwen3_coder value or in the
            reasoning (exactly the strings `check_turn` rejects). hermes values never fail:
            every ``<`` in them is written as the JSON escape ``\\u003c``.
    """
    _validate(reasoning, call, dialect, think_prefilled)
    return get_dialect(dialect).render(reasoning, call, think_prefilled=think_prefilled)


def _validate(reasoning: object, call: object, dialect: object, think_prefilled: object) -> None:
    if reasoning is not None and not isinstance(reasoning, str):
        raise TypeError(f"reasoning must be str or None, got {type(reasoning).__name__}")
    if not isinstance(call, ToolCall):
        raise TypeError(f"call must be a ToolCall, got {type(call).__name__}")
    if not isinstance(dialect, str):
        raise TypeError(f"dialect must be str, got {type(dialect).__name__}")
    get_dialect(dialect)  # UnknownDialectError names the known ones
    if not isinstance(think_prefilled, bool):
        raise TypeError(f"think_prefilled must be bool, got {type(think_prefilled).__name__}")
