"""The result of checking one turn: `TurnVerdict` and its `Violation` entries."""

from __future__ import annotations

import attrs

from swe_formatcheck._codes import Code
from swe_formatcheck._tools import ToolCall


@attrs.frozen
class Violation:
    """One kind of problem found in a turn.

    Attributes:
        code: the stable code (a `Code`, which is also a plain `str`).
        offset: index into ``raw`` where it was first seen (0 for whole-turn problems).
        detail: a short human-readable explanation, fit to show the model as feedback.
    """

    code: Code
    offset: int
    detail: str


@attrs.frozen
class TurnVerdict:
    """The verdict on one raw assistant turn.

    Attributes:
        violations: one entry per kind of violation, in the order first found; empty when ok.
        call: the single parsed call, only when the turn is valid.
        reasoning: the reasoning text (one canonical newline removed on each side) when the turn
            has a reasoning block, else ``None``. Given even for invalid turns when it was found.
    """

    violations: tuple[Violation, ...]
    call: ToolCall | None
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        """True when the turn is exactly one well-formed, known call and nothing else."""
        return not self.violations

    @property
    def codes(self) -> tuple[Code, ...]:
        """The stable codes of `violations`, in order (each a `str`)."""
        return tuple(violation.code for violation in self.violations)
