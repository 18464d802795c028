"""Thread-safe ``ast.parse`` / ``ast.literal_eval`` for the curation workers.

CPython 3.11 converts a parsed tree into Python objects with a recursion counter kept in
per-interpreter module state, not per thread. Two worker threads converting trees at once (a
garbage collection or a finaliser can switch threads mid-conversion) corrupt that counter and
the parse fails with ``SystemError: AST constructor recursion depth mismatch`` - seen in the
test suite when ``swe-curate run`` judged tasks on several workers in a process that already
held a lot of garbage. One lock around every parse removes the race; parses are short next to
the sandbox work the workers wait on.
"""

from __future__ import annotations

import ast
import threading
from typing import Any, Literal

_PARSE_LOCK = threading.Lock()


def parse_source(source: str, mode: Literal["exec", "eval"] = "exec") -> Any:
    """``ast.parse(source, mode=mode)`` under the process-wide parse lock."""
    with _PARSE_LOCK:
        return ast.parse(source, mode=mode)


def literal_eval(text: str | ast.expr) -> Any:
    """``ast.literal_eval(text)`` (source text or an already parsed expression node) under the
    process-wide parse lock."""
    with _PARSE_LOCK:
        return ast.literal_eval(text)
