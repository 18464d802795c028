"""The package's exception types.

Verdicts are values, not exceptions: `check_turn` never raises on any `str`. Exceptions are kept for
programming errors (wrong argument types or values), unrepresentable renders and misuse of a gate.
"""

from __future__ import annotations


class FormatcheckError(Exception):
    """Base class of every error this package raises on purpose."""


class ToolSpecError(FormatcheckError, ValueError):
    """A tool specification is malformed (bad name, a parameter both required and optional, ...)."""


class RenderError(FormatcheckError, ValueError):
    """`render_turn` was asked for a turn the format cannot represent exactly.

    Example: a parameter value containing ``</parameter>``; every public parser would cut the value
    there, so rendering it would make the parsed call differ from the one intended.
    """


class GateClosedError(FormatcheckError, RuntimeError):
    """A turn was fed to an `EpisodeGate` that has already terminated the episode."""


class ParserContractError(FormatcheckError, TypeError):
    """A parser under test (`swe_formatcheck.strategies.check_parser`) returned something other
    than ``None`` or a sequence of `ToolCall`."""


class UnknownDialectError(FormatcheckError, ValueError):
    """No tool-call dialect is registered under the name asked for; `known` lists those there
    are."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"dialect must be one of {list(known)}, got {name!r}")
        self.name = name
        self.known = known


class DialectPluginError(FormatcheckError):
    """A third-party dialect's entry point (group ``swe_formatcheck.dialects``) cannot be loaded
    or does not name a `Dialect`; the message names the entry point."""
