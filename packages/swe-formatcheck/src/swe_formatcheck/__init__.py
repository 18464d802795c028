"""Strict validation of raw assistant turns and the gated-reward episode gate.

Arctic-SWE §3.2: check the raw tokens, not the parsed call, and gate the reward on a clean,
explicit submit. Tool-call dialects (render, check, lenient parse) are looked up by name:
`dialect_names`, `get_dialect`, `register_dialect`, and the ``swe_formatcheck.dialects`` entry
points.
"""

from swe_formatcheck._check import check_turn, parse_lenient
from swe_formatcheck._codes import Code
from swe_formatcheck._corpus import MALFORMED_CORPUS, VALID_CORPUS, MalformedCase, ValidCase
from swe_formatcheck._dialect import CheckFn, Dialect, LenientParseFn, ReasoningMode, RenderFn
from swe_formatcheck._errors import (
    DialectPluginError,
    FormatcheckError,
    GateClosedError,
    RenderError,
    ToolSpecError,
    UnknownDialectError,
)
from swe_formatcheck._gate import EpisodeGate, GateDecision, GateReason
from swe_formatcheck._registry import (
    DIALECT_ENTRY_POINT_GROUP,
    dialect_names,
    get_dialect,
    register_dialect,
)
from swe_formatcheck._render import render_turn
from swe_formatcheck._tools import TOOLSETS, ToolCall, ToolSpec
from swe_formatcheck._verdict import TurnVerdict, Violation
from swe_formatcheck._version import __version__

__all__ = [
    "DIALECT_ENTRY_POINT_GROUP",
    "MALFORMED_CORPUS",
    "TOOLSETS",
    "VALID_CORPUS",
    "CheckFn",
    "Code",
    "Dialect",
    "DialectPluginError",
    "EpisodeGate",
    "FormatcheckError",
    "GateClosedError",
    "GateDecision",
    "GateReason",
    "LenientParseFn",
    "MalformedCase",
    "ReasoningMode",
    "RenderError",
    "RenderFn",
    "ToolCall",
    "ToolSpec",
    "ToolSpecError",
    "TurnVerdict",
    "UnknownDialectError",
    "ValidCase",
    "Violation",
    "__version__",
    "check_turn",
    "dialect_names",
    "get_dialect",
    "parse_lenient",
    "register_dialect",
    "render_turn",
]
