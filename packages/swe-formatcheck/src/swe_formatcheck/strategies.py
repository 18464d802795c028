"""The property-testing kit: hypothesis strategies for raw assistant turns and a harness that
property-tests any tool-call parser against the strict rule of `check_turn` (Arctic-SWE §3.2).

Needs hypothesis, the optional ``[testing]`` extra (``pip install 'swe-formatcheck[testing]'``);
``import swe_formatcheck`` itself never imports it.

Turn strategies (each draws `GeneratedTurn` records for one dialect, ``"qwen3_coder"`` or
``"hermes"``): `valid_turns` (raw text and the exact expected call), `near_miss_turns`
(adversarial markup lenient parsers misread, with the exact expected codes), `malformed_turns`
(structural mutations, with the exact expected codes) and `adversarial_turns` (randomly mutated,
the strict verdict decides). Text strategies: `any_text`, `text_without`, `tag_variants`,
`special_token_texts`, `tool_names`, and the readable oracle `unambiguous`.

Harness: `check_parser(parse, dialect=...)` returns a `ParserReport` of `Counterexample`s;
`find_mismatch(parse, turn)` compares one turn inside your own tests. The parser contract is
`ToolCallParser`.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  # only to fail early with the install hint below
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without hypothesis
    raise ImportError(
        "swe_formatcheck.strategies needs hypothesis: pip install 'swe-formatcheck[testing]'"
    ) from exc

from swe_formatcheck._errors import ParserContractError
from swe_formatcheck._generated import GeneratedTurn, TurnKind
from swe_formatcheck._kit_harness import (
    TURN_KINDS,
    Counterexample,
    ParserReport,
    ToolCallParser,
    check_parser,
    find_mismatch,
)
from swe_formatcheck._kit_random import generate_turn
from swe_formatcheck._kit_text import (
    ALL_MARKUP,
    FRAGMENTS,
    SPACES,
    TAG_NAMES,
    any_text,
    scrub,
    special_token_at,
    special_token_texts,
    tag_variant_at,
    tag_variants,
    text_without,
    tool_names,
    unambiguous,
)
from swe_formatcheck._kit_turns import (
    adversarial_turns,
    malformed_turns,
    near_miss_turns,
    valid_turns,
)

__all__ = [
    "ALL_MARKUP",
    "FRAGMENTS",
    "SPACES",
    "TAG_NAMES",
    "TURN_KINDS",
    "Counterexample",
    "GeneratedTurn",
    "ParserContractError",
    "ParserReport",
    "ToolCallParser",
    "TurnKind",
    "adversarial_turns",
    "any_text",
    "check_parser",
    "find_mismatch",
    "generate_turn",
    "malformed_turns",
    "near_miss_turns",
    "scrub",
    "special_token_at",
    "special_token_texts",
    "tag_variant_at",
    "tag_variants",
    "text_without",
    "tool_names",
    "unambiguous",
    "valid_turns",
]
