"""Turn strategies of the property-testing kit: valid, near-miss, malformed and adversarial turns.

Every strategy draws `GeneratedTurn` records for one dialect. Valid turns are written by
`render_turn` (the checker's exact inverse), so their expected call is known without asking the
checker; near-miss and malformed turns carry the exact codes written down beside their builders.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence

import attrs
from hypothesis import strategies as st

from swe_formatcheck._check import DialectName
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import REASONING_MODES, ReasoningMode
from swe_formatcheck._generated import GeneratedTurn, TurnKind
from swe_formatcheck._kit_mutations import MUTATIONS, NEAR_MISSES, Base, Mutation
from swe_formatcheck._kit_random import generate_turn
from swe_formatcheck._kit_text import (
    ALL_MARKUP,
    any_text,
    special_token_texts,
    tag_variants,
    text_without,
    tool_names,
)
from swe_formatcheck._lexer import HERMES_CALL_MARKERS, THINK_MARKERS, XML_CALL_MARKERS
from swe_formatcheck._render import render_turn
from swe_formatcheck._tools import TOOLSETS, ToolCall, ToolSpec, resolve_tools

#: Whitespace json.dumps(ensure_ascii=False) leaves raw, so a variant survives inside a JSON string.
_JSON_RAW_SPACES = (" ", "\x85", "\xa0", "\u2028", "\u3000")
_DEFAULT_TOOLS: tuple[ToolSpec, ...] = TOOLSETS["mini_swe_agent_plus"]


@functools.cache
def _values(dialect: str) -> st.SearchStrategy[str]:
    # hermes renders escape every "<", so any text at all is a valid hermes value.
    return any_text() if dialect == "hermes" else text_without(XML_CALL_MARKERS)


@functools.cache
def _reasoning_texts(dialect: str) -> st.SearchStrategy[str]:
    markers = HERMES_CALL_MARKERS if dialect == "hermes" else XML_CALL_MARKERS
    return text_without((*THINK_MARKERS, *markers))


@st.composite
def _spec_and_call(
    draw: st.DrawFn, tools: tuple[ToolSpec, ...] | None, values: st.SearchStrategy[str]
) -> tuple[ToolSpec, tuple[ToolSpec, ...], ToolCall]:
    if tools is None:  # a random tool, declared just for this turn
        name = draw(tool_names())
        arguments = draw(st.dictionaries(tool_names(), values, max_size=4))
        required = tuple(param for param in arguments if draw(st.booleans()))
        optional = tuple(param for param in arguments if param not in required)
        spec = ToolSpec(name, required, optional)
        return spec, (spec,), ToolCall(name, arguments)
    spec = draw(st.sampled_from(tools))
    params = [*spec.required, *(param for param in spec.optional if draw(st.booleans()))]
    order = draw(st.permutations(params))
    return spec, tools, ToolCall(spec.name, {param: draw(values) for param in order})


@st.composite
def _base(
    draw: st.DrawFn,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] | None,
    reasoning: ReasoningMode | None,
    think_prefilled: bool | None,
    *,
    with_reasoning: bool = False,
) -> Base:
    """A canonical valid turn; `with_reasoning` forces a reasoning block (not in forbidden mode)."""
    opened = with_reasoning or think_prefilled is True
    modes: list[ReasoningMode] = [m for m in REASONING_MODES if not (opened and m == "forbidden")]
    mode = reasoning if reasoning is not None else draw(st.sampled_from(modes))
    if think_prefilled is None:
        prefilled = mode != "forbidden" and draw(st.booleans())
    else:
        prefilled = think_prefilled
    spec, declared, call = draw(_spec_and_call(tools, _values(dialect)))
    text: str | None = None
    if mode != "forbidden":
        texts = _reasoning_texts(dialect)
        always = prefilled or mode == "required" or with_reasoning
        text = draw(texts if always else st.none() | texts)
    raw = render_turn(text, call, dialect=dialect, think_prefilled=prefilled)
    return Base(raw, call, spec, declared, text, mode, prefilled)


def _turn(
    base: Base,
    dialect: DialectName,
    kind: TurnKind,
    label: str,
    *,
    expected_codes: tuple[Code, ...],
    expected_call: ToolCall | None = None,
    expected_reasoning: str | None = None,
) -> GeneratedTurn:
    return GeneratedTurn(
        raw=base.raw,
        dialect=dialect,
        tools=base.tools,
        reasoning=base.mode,
        think_prefilled=base.prefilled,
        kind=kind,
        label=label,
        expected_call=expected_call,
        expected_reasoning=expected_reasoning,
        expected_codes=expected_codes,
    )


def _reformat_hermes(draw: st.DrawFn, raw: str, call: ToolCall) -> str:
    """The same call in another strict-JSON layout (ASCII escapes, indentation)."""
    head = raw[: raw.index("<tool_call>\n")]
    body = json.dumps(
        {"name": call.name, "arguments": call.arguments},
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 2])),
    ).replace("<", "\\u003c")
    return f"{head}<tool_call>\n{body}\n</tool_call>"


def _validated(
    dialect: object, tools: object, reasoning: object, think_prefilled: object
) -> tuple[ToolSpec, ...] | None:
    if not isinstance(dialect, str):
        raise TypeError(f"dialect must be str, got {type(dialect).__name__}")
    if dialect not in MUTATIONS:  # the kit writes the built-in dialects' grammars only
        raise ValueError(f"dialect must be one of {sorted(MUTATIONS)}, got {dialect!r}")
    if reasoning is not None and reasoning not in REASONING_MODES:
        raise ValueError(f"reasoning must be None or one of {REASONING_MODES}, got {reasoning!r}")
    if think_prefilled is not None and not isinstance(think_prefilled, bool):
        raise TypeError(
            f"think_prefilled must be bool or None, got {type(think_prefilled).__name__}"
        )
    if think_prefilled and reasoning == "forbidden":
        raise ValueError("think_prefilled=True opens a reasoning block; it cannot be forbidden")
    if tools is None:
        return None
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise TypeError(f"tools must be a sequence of ToolSpec or None, got {type(tools).__name__}")
    resolved = resolve_tools(tuple(tools))
    if not resolved:
        raise ValueError("tools must hold at least one ToolSpec")
    return tuple(resolved.values())


#: Stands in for the adversarial text while the rest of the turn is rendered canonically.
_SLOT = "\ue000\uf8ff\ue000"


def _insert(raw: str, text: str) -> str | None:
    """`raw` with its one slot replaced by `text`; ``None`` if the drawn text held a slot too."""
    return raw.replace(_SLOT, text) if raw.count(_SLOT) == 1 else None


@st.composite
def _slotted_base(
    draw: st.DrawFn,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] | None,
    reasoning: ReasoningMode | None,
    think_prefilled: bool | None,
    where: str,
) -> tuple[Base, str] | None:
    """A canonical turn with `_SLOT` in one value (or the reasoning), and its raw text."""
    base = draw(
        _base(dialect, tools, reasoning, think_prefilled, with_reasoning=where == "reasoning")
    )
    if where == "reasoning":
        if base.reasoning is None:
            return None
        slotted = base.reasoning + _SLOT + draw(_reasoning_texts(dialect))
        return base, render_turn(
            slotted, base.call, dialect=dialect, think_prefilled=base.prefilled
        )
    if not base.call.arguments:
        return None
    param = draw(st.sampled_from(sorted(base.call.arguments)))
    safe = text_without(ALL_MARKUP)
    arguments = {**base.call.arguments, param: draw(safe) + _SLOT + draw(safe)}
    call = ToolCall(base.call.name, arguments)
    # hermes renders write every "<" as \u003c; the slot holds none, so what fills it stays raw.
    return base, render_turn(base.reasoning, call, dialect=dialect, think_prefilled=base.prefilled)


@functools.cache
def _near_miss_texts(dialect: str, where: str) -> Mapping[str, tuple[st.SearchStrategy[str], Code]]:
    if dialect == "hermes" and where == "value":
        # The Hermes parser reads no call tag inside a JSON string; its reasoning stage reads
        # the reasoning tags and special tokens.
        variants = tag_variants(("think",), _JSON_RAW_SPACES)
    else:
        variants = tag_variants()
    return {
        f"tag_variant_in_{where}": (variants, Code.AMBIGUOUS_MARKUP),
        f"special_token_in_{where}": (special_token_texts(), Code.SPECIAL_TOKEN_TEXT),
    }


def valid_turns(
    dialect: DialectName = "qwen3_coder",
    *,
    tools: Sequence[ToolSpec] | None = _DEFAULT_TOOLS,
    reasoning: ReasoningMode | None = None,
    think_prefilled: bool | None = None,
) -> st.SearchStrategy[GeneratedTurn]:
    """Valid turns: the raw text and the exact call (and reasoning) the strict rule reads.

    Values mix ordinary text with what lenient parsers trip on but the format allows: leading,
    trailing and inner newlines, HTML, ``<``, near-miss tags (``<parameters>``), NUL, lone
    surrogates; hermes turns also come in other strict-JSON layouts (ASCII escapes, indentation).

    Args:
        dialect: ``"qwen3_coder"`` or ``"hermes"``.
        tools: the declared tools a call is drawn from (default: Mini-SWE-Agent-Plus); ``None``
            draws a random tool per turn and declares only it.
        reasoning: the ``reasoning=`` mode, or ``None`` to draw one per turn.
        think_prefilled: whether the template pre-fills ``<think>\\n``; ``None`` draws it.

    Raises:
        TypeError, ValueError: a bad argument (the message names it); `ToolSpecError` for
            tools declared twice.
    """
    declared = _validated(dialect, tools, reasoning, think_prefilled)
    return _valid(dialect, declared, reasoning, think_prefilled)


@st.composite
def _valid(
    draw: st.DrawFn,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] | None,
    reasoning: ReasoningMode | None,
    think_prefilled: bool | None,
) -> GeneratedTurn:
    base = draw(_base(dialect, tools, reasoning, think_prefilled))
    if dialect == "hermes" and draw(st.booleans()):
        base = attrs.evolve(base, raw=_reformat_hermes(draw, base.raw, base.call))
    return _turn(
        base,
        dialect,
        "valid",
        "valid",
        expected_call=base.call,
        expected_reasoning=base.reasoning,
        expected_codes=(),
    )


def near_miss_turns(
    dialect: DialectName = "qwen3_coder",
    *,
    tools: Sequence[ToolSpec] | None = _DEFAULT_TOOLS,
    reasoning: ReasoningMode | None = None,
    think_prefilled: bool | None = None,
) -> st.SearchStrategy[GeneratedTurn]:
    """Near-miss turns: one piece of adversarial markup in an otherwise canonical turn, which
    lenient parsers read as markup (or ignore) and the strict rule rejects with `expected_codes`.

    The pieces: a whitespace or case variant of a tag (``</ parameter>``, ``<PARAMETER=``,
    ``< think >``) or special-token text (``<|im_end|>``) inside a value or the reasoning;
    exact call markup inside a value; a variant where ``</parameter>`` belongs; a bare
    ``<function=...>`` outside any envelope; a stray closing tag; in hermes, a repeated key of
    the call object. Arguments as for `valid_turns`.
    """
    declared = _validated(dialect, tools, reasoning, think_prefilled)
    return _near_miss(dialect, declared, reasoning, think_prefilled)


@st.composite
def _near_miss(
    draw: st.DrawFn,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] | None,
    reasoning: ReasoningMode | None,
    think_prefilled: bool | None,
) -> GeneratedTurn:
    where = draw(st.sampled_from(["value", "reasoning", "structure"]))
    if where != "structure":
        slotted = draw(_slotted_base(dialect, tools, reasoning, think_prefilled, where))
        if slotted is not None:
            base, raw = slotted
            texts = _near_miss_texts(dialect, where)
            label = draw(st.sampled_from(sorted(texts)))
            inserted = _insert(raw, draw(texts[label][0]))
            if inserted is not None:
                base = attrs.evolve(base, raw=inserted)
                return _turn(base, dialect, "near_miss", label, expected_codes=(texts[label][1],))
    # No value or reasoning to hold the text (or a structural near-miss was drawn).
    base = draw(_base(dialect, tools, reasoning, think_prefilled))
    return _mutated(draw, base, dialect, "near_miss", NEAR_MISSES[dialect])


def malformed_turns(
    dialect: DialectName = "qwen3_coder",
    *,
    tools: Sequence[ToolSpec] | None = _DEFAULT_TOOLS,
    reasoning: ReasoningMode | None = None,
    think_prefilled: bool | None = None,
) -> st.SearchStrategy[GeneratedTurn]:
    """Malformed turns: a structural mutation of a valid turn (duplicate, missing or unknown
    parameter, unknown function, an unclosed tag, prose around the call, two calls, broken or
    non-object JSON, a missing, doubled or misplaced reasoning block, ...) with exactly the codes
    `check_turn` gives it. The turn's `label` names the mutation. Arguments as for `valid_turns`.
    """
    declared = _validated(dialect, tools, reasoning, think_prefilled)
    return _malformed(dialect, declared, reasoning, think_prefilled)


@st.composite
def _malformed(
    draw: st.DrawFn,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] | None,
    reasoning: ReasoningMode | None,
    think_prefilled: bool | None,
) -> GeneratedTurn:
    base = draw(_base(dialect, tools, reasoning, think_prefilled))
    return _mutated(draw, base, dialect, "malformed", MUTATIONS[dialect])


def _mutated(
    draw: st.DrawFn,
    base: Base,
    dialect: DialectName,
    kind: TurnKind,
    mutations: tuple[Mutation, ...],
) -> GeneratedTurn:
    applicable = [(m, raw) for m in mutations if (raw := m.rewrite(base)) is not None]
    # Every list holds rewrites that apply to any turn (prose around the call, ...).
    mutation, raw = draw(st.sampled_from(applicable))
    return _turn(
        attrs.evolve(base, raw=raw), dialect, kind, mutation.name, expected_codes=mutation.codes
    )


def adversarial_turns(
    dialect: DialectName = "qwen3_coder",
    *,
    tools: Sequence[ToolSpec] = _DEFAULT_TOOLS,
    reasoning: ReasoningMode | None = None,
    think_prefilled: bool | None = None,
) -> st.SearchStrategy[GeneratedTurn]:
    """Randomly built and mutated turns (`generate_turn` driven by hypothesis): values of text,
    unicode, near-miss markup, tag variants and special-token text; zero to two mutations
    (duplicates, split or nested tags, variants in place of structural tags, truncation, ...).
    About half stay valid. No expectation is set (``expected_codes is None``): the strict
    verdict (`GeneratedTurn.verdict`) decides. With ``reasoning=None`` the reasoning mode (and
    the pre-filled ``<think>``) is drawn per turn; ``tools=None`` is not supported.
    """
    declared = _validated(dialect, tools, reasoning, think_prefilled)
    if declared is None:
        raise ValueError("adversarial_turns needs declared tools (tools=None is not supported)")
    if reasoning is None and think_prefilled is not None:
        raise ValueError("adversarial_turns: think_prefilled applies only with a reasoning= mode")
    return st.randoms(use_true_random=False).map(
        lambda rng: generate_turn(
            rng, dialect, declared, reasoning=reasoning, think_prefilled=bool(think_prefilled)
        )
    )
