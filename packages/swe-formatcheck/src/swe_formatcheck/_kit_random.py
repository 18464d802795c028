"""A seeded, standard-library generator of adversarial turns (the differential test's generator).

`generate_turn(rng, dialect)` writes one raw assistant turn the way the Qwen chat template does,
from values built out of ordinary text, unicode, near-miss markup, whitespace and case variants
of every tag, exact tags and special-token text, then applies zero to two structural mutations
(duplicate parameters, tags split across values, nested tags, a variant in place of a structural
tag, missing newlines, extra text, a second call, truncation, ...). Roughly half of the turns
stay valid, so the property "accepted => every parser executes the checked call" is exercised on
many accepted turns. Only ``random.Random`` drives it: hypothesis draws it through
``st.randoms()`` (`adversarial_turns`) and a script can drive it with a plain seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from swe_formatcheck._check import DialectName
from swe_formatcheck._dialect import ReasoningMode
from swe_formatcheck._generated import GeneratedTurn
from swe_formatcheck._tools import TOOLSETS, ToolSpec

TOOLS: tuple[ToolSpec, ...] = TOOLSETS["mini_swe_agent_plus"]
TAG_NAMES = ("think", "tool_call", "function", "parameter")
EXACT_TAGS = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<function=execute_bash>",
    "</function>",
    "<parameter=command>",
    "</parameter>",
    "<parameter=",
    "<function=",
)
#: Every kind of whitespace the parsers' ``\s`` knows, and the separators only ``isspace`` knows.
SPACES = (" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000")
#: Special tokens of the Qwen tokenizers (the differential tokenizer declares the first five).
SPECIAL_TEXT = ("<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|vision_pad|>", "<|image_pad|>")
NEAR_MISSES = (
    "<parameters>",
    "</para",
    "meter>",
    "<functional>",
    "<tool_call",
    "<thinking>",
    "</thinker>",
    "<|im_end|",
    "<| im_end |>",
    "<|not a token|>",
    "<parameter x>",
    "parameter=",
    "<param=x>",
    "< p >",
    "&lt;/parameter&gt;",
    "<\\/parameter>",
)
WORDS = (
    "ls",
    "echo",
    " -la",
    "x",
    "42",
    "null",
    "true",
    "{}",
    "[1, 2]",
    '"q"',
    "'s'",
    "\\",
    "\\n",
    "<div>",
    "</div>",
    "a < b",
    "=>",
    "<",
    ">",
    "/",
    "=",
    "|",
    " ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "    return 1",
)
UNICODE = (
    "é",
    "中文",
    "😀",
    "\u2028",
    "\xa0",
    "\x85",
    "\x1c",
    "\u3000",
    "\x00",
    "\ud800",
    "İ",
    "K",
)


def tag_variant(rng: random.Random) -> str:
    """``<`` ws [/ ws] NAME ws (= or >), in a random letter case; often the exact tag."""
    name = rng.choice(TAG_NAMES)
    if rng.random() < 0.5:
        name = "".join(c.upper() if rng.random() < 0.3 else c for c in name)

    def ws() -> str:
        return "".join(rng.choice(SPACES) for _ in range(rng.choice((0, 0, 1, 2))))

    slash = "/" + ws() if rng.random() < 0.5 else ""
    end = rng.choice((">", "=", "=x>", "=command>"))
    return "<" + ws() + slash + name + ws() + end


def _piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.50:
        return rng.choice(WORDS)
    if roll < 0.62:
        return rng.choice(UNICODE)
    if roll < 0.74:
        return rng.choice(NEAR_MISSES)
    if roll < 0.84:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(1, 6)))
    if roll < 0.93:
        return tag_variant(rng)
    if roll < 0.97:
        return rng.choice(SPECIAL_TEXT)
    return rng.choice(EXACT_TAGS)


def text(rng: random.Random, *, risky: float = 0.25) -> str:
    """A value or reasoning text; with probability ``1 - risky`` only the harmless pieces."""
    pieces = rng.choice((0, 1, 2, 3, 5, 8))
    if rng.random() >= risky:
        out = [_safe_piece(rng) for _ in range(pieces)]
    else:
        out = [_piece(rng) for _ in range(pieces)]
    value = "".join(out)
    if rng.random() < 0.01:  # long values: tens of kilobytes
        value = (value or "x") * rng.randrange(1, 20_000 // max(1, len(value or "x")) + 2)
    return value


def _safe_piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(WORDS)
    if roll < 0.75:
        return rng.choice(UNICODE)
    return rng.choice(NEAR_MISSES)


def _arguments(rng: random.Random, spec: ToolSpec) -> dict[str, str]:
    names = list(spec.required) + [p for p in spec.optional if rng.random() < 0.5]
    return {name: text(rng) for name in names}


def _xml_body(name: str, pairs: list[tuple[str, str]]) -> str:
    params = "".join(f"<parameter={p}>\n{v}\n</parameter>\n" for p, v in pairs)
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def _hermes_body(rng: random.Random, name: str, pairs: list[tuple[str, str]]) -> str:
    arguments = "{" + ", ".join(f"{json.dumps(p)}: {json.dumps(v)}" for p, v in pairs) + "}"
    body = json.dumps({"name": name, "arguments": json.loads(arguments)}, ensure_ascii=False)
    if len(pairs) != len({p for p, _ in pairs}):  # keep duplicate keys: json.dumps would merge
        body = '{"name": ' + json.dumps(name) + ', "arguments": ' + arguments + "}"
    if rng.random() < 0.3:
        body = body.replace("<", "\\u003c")
    elif rng.random() < 0.2:
        body = json.dumps(json.loads(body), ensure_ascii=True, indent=rng.choice((None, 2)))
    return f"<tool_call>\n{body}\n</tool_call>"


def _split_tag_across_values(rng: random.Random, pairs: list[tuple[str, str]]) -> None:
    while len(pairs) < 2:
        pairs.append(("command", "x"))
    tag = rng.choice((*EXACT_TAGS, tag_variant(rng)))
    cut = rng.randrange(1, len(tag))
    (p0, v0), (p1, v1) = pairs[0], pairs[1]
    pairs[0], pairs[1] = (p0, v0 + tag[:cut]), (p1, tag[cut:] + v1)


_PAIR_MUTATIONS: dict[str, Callable[[random.Random, list[tuple[str, str]]], None]] = {
    "duplicate_parameter": lambda rng, pairs: pairs.append(
        (pairs[0][0] if pairs else "command", text(rng))
    ),
    "split_tag": _split_tag_across_values,
    "nested_tag": lambda rng, pairs: pairs.append(
        ("command", text(rng) + rng.choice(EXACT_TAGS[2:]) + text(rng))
    ),
    "unknown_parameter": lambda rng, pairs: pairs.append(("colour", text(rng))),
}


def _structural_variant(rng: random.Random, raw: str) -> str:
    tag = rng.choice(
        (
            "<tool_call>",
            "</tool_call>",
            "<function=",
            "</function>",
            "<parameter=",
            "</parameter>",
            "</think>",
        )
    )
    if tag not in raw:
        return raw
    at = raw.index(tag)
    return raw[:at] + tag_variant(rng).rstrip("=>x") + tag[-1] + raw[at + len(tag) :]


def _truncate(rng: random.Random, raw: str) -> str:
    return raw[: rng.randrange(len(raw) + 1)]


_RAW_MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    "structural_variant": _structural_variant,
    "drop_newline": lambda rng, raw: (
        raw.replace(">\n", ">", 1) if rng.random() < 0.5 else raw.replace("\n</", "</", 1)
    ),
    "text_before": lambda rng, raw: text(rng, risky=1.0) + raw,
    "text_after": lambda rng, raw: raw + text(rng, risky=1.0),
    "second_call": lambda rng, raw: raw + "\n" + raw[raw.find("<tool_call>") :],
    "truncate": _truncate,
    "odd_whitespace": lambda rng, raw: raw.replace(">\n<", ">\n" + rng.choice(SPACES) + "<", 1),
    "markup_in_reasoning": lambda rng, raw: raw.replace(
        "</think>", rng.choice(EXACT_TAGS) + "</think>", 1
    ),
}


_MODES: dict[str, ReasoningMode] = {
    "required": "required",
    "prefilled": "required",
    "optional": "optional",
    "forbidden": "forbidden",
}


def generate_turn(
    rng: random.Random,
    dialect: DialectName,
    tools: tuple[ToolSpec, ...] = TOOLS,
    *,
    reasoning: ReasoningMode | None = None,
    think_prefilled: bool = False,
) -> GeneratedTurn:
    """One raw turn for `dialect` (``"qwen3_coder"`` or ``"hermes"``) and its check options.

    The turn's `kind` is ``"adversarial"``: no expectation is set, the strict verdict decides.
    Its `label` names the mutations applied (``"none"`` for a turn written as the template does).
    The reasoning mode is drawn unless `reasoning` is given (then `think_prefilled` applies);
    the random draws are the same either way, so a seed gives the same values and mutations.
    """
    if dialect not in ("qwen3_coder", "hermes"):
        raise ValueError(f"dialect must be 'qwen3_coder' or 'hermes', got {dialect!r}")
    if not tools:
        raise ValueError("tools must hold at least one ToolSpec")
    spec = rng.choice(tools)
    name = spec.name if rng.random() < 0.97 else "rm_rf"
    pairs = list(_arguments(rng, spec).items())
    rng.shuffle(pairs)
    mutations: list[str] = []
    if rng.random() < 0.15:
        mutation = rng.choice(sorted(_PAIR_MUTATIONS))
        _PAIR_MUTATIONS[mutation](rng, pairs)
        mutations.append(mutation)
    mode = rng.choices(("required", "prefilled", "optional", "forbidden"), (6, 2, 1, 1))[0]
    if reasoning is not None:
        mode = "prefilled" if think_prefilled else reasoning
    thought = text(rng, risky=0.15)
    head = {
        "required": f"<think>\n{thought}\n</think>\n\n",
        "prefilled": f"{thought}\n</think>\n\n",
        "optional": "" if rng.random() < 0.5 else f"<think>\n{thought}\n</think>\n\n",
        "forbidden": "",
    }[mode]
    envelope = (
        _xml_body(name, pairs) if dialect == "qwen3_coder" else _hermes_body(rng, name, pairs)
    )
    raw = head + envelope
    if rng.random() < 0.15:
        mutation = rng.choice(sorted(_RAW_MUTATIONS))
        raw = _RAW_MUTATIONS[mutation](rng, raw)
        mutations.append(mutation)
    return GeneratedTurn(
        raw=raw,
        dialect=dialect,
        tools=tools,
        reasoning=_MODES[mode] if reasoning is None else reasoning,
        think_prefilled=mode == "prefilled",
        kind="adversarial",
        label="+".join(mutations) or "none",
    )
