"""Strict validation of raw assistant turns and the gated-reward episode gate.

Arctic-SWE §3.2: check the raw tokens, not the parsed call, and gate the reward on a clean,
explicit submit.
"""

from swe_formatcheck._check import check_turn
from swe_formatcheck._codes import Code
from swe_formatcheck._corpus import MALFORMED_CORPUS, VALID_CORPUS, MalformedCase, ValidCase
from swe_formatcheck._errors import FormatcheckError, GateClosedError, RenderError, ToolSpecError
from swe_formatcheck._gate import EpisodeGate, GateDecision, GateReason
from swe_formatcheck._render import render_turn
from swe_formatcheck._tools import TOOLSETS, ToolCall, ToolSpec
from swe_formatcheck._verdict import TurnVerdict, Violation
from swe_formatcheck._version import __version__

__all__ = [
    "MALFORMED_CORPUS",
    "TOOLSETS",
    "VALID_CORPUS",
    "Code",
    "EpisodeGate",
    "FormatcheckError",
    "GateClosedError",
    "GateDecision",
    "GateReason",
    "MalformedCase",
    "RenderError",
    "ToolCall",
    "ToolSpec",
    "ToolSpecError",
    "TurnVerdict",
    "ValidCase",
    "Violation",
    "__version__",
    "check_turn",
    "render_turn",
]
