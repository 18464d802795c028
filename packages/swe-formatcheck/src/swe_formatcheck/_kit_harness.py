"""`check_parser`: property-test any tool-call parser against the strict rule of `check_turn`.

The strict rule is the oracle. A turn `check_turn` accepts must be read as exactly its one call;
a turn it rejects must not be executed at all. A lenient parser fails the second half: it runs
a call out of a malformed turn, keeps the last of two duplicate parameters, reads a tag variant
as markup, deletes special-token text from a value. Hypothesis draws the turns (the kit's
strategies); the report keeps the shortest disagreement of each label of turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, Protocol

import attrs
from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis import strategies as st

from swe_formatcheck._check import DialectName
from swe_formatcheck._codes import Code
from swe_formatcheck._dialect import ReasoningMode
from swe_formatcheck._errors import ParserContractError
from swe_formatcheck._generated import GeneratedTurn, TurnKind
from swe_formatcheck._kit_mutations import MUTATIONS
from swe_formatcheck._kit_turns import (
    adversarial_turns,
    malformed_turns,
    near_miss_turns,
    valid_turns,
)
from swe_formatcheck._tools import TOOLSETS, ToolCall, ToolSpec

#: The kinds of turns `check_parser` draws, in the order it runs them.
TURN_KINDS: Final[tuple[TurnKind, ...]] = ("valid", "near_miss", "malformed", "adversarial")
Problem = Literal["misread_valid_turn", "executed_rejected_turn"]


class ToolCallParser(Protocol):
    """The parser contract: raw turn text in, the calls a stack would execute out.

    Called with the raw text of one assistant turn exactly as the engine emitted it (without the
    stop token). Returns the calls it would execute, in order, as `ToolCall` records (name and
    ``dict[str, str]`` arguments: decode JSON arguments first), or ``None`` / an empty sequence
    when it rejects the turn or finds no call. Raising an exception also counts as rejecting.
    """

    def __call__(self, raw: str, /) -> Sequence[ToolCall] | None: ...


@attrs.frozen
class Counterexample:
    """One turn the parser reads differently from the strict rule.

    Attributes:
        problem: ``"misread_valid_turn"`` (a valid turn not read as exactly its one call) or
            ``"executed_rejected_turn"`` (calls returned for a turn the strict rule rejects).
        turn: the turn, as drawn (after shrinking), with its options and label.
        strict_codes: the strict verdict's codes (``()`` for a valid turn).
        expected_call: the strict reading (``None``: nothing may be executed).
        parsed: what the parser returned (``()``: it rejected the turn).
        error: ``repr`` of the exception the parser raised, if it raised.
    """

    problem: Problem
    turn: GeneratedTurn
    strict_codes: tuple[Code, ...]
    expected_call: ToolCall | None
    parsed: tuple[ToolCall, ...]
    error: str | None = None

    def describe(self) -> str:
        """A few lines fit for a test failure: what was drawn, what each side read."""
        strict = (
            f"strict: ok {self.expected_call!r}"
            if self.expected_call is not None
            else f"strict: rejected {[str(code) for code in self.strict_codes]}"
        )
        parsed = f"parser: {list(self.parsed)!r}" + (
            f" (raised {self.error})" if self.error else ""
        )
        head = f"{self.problem} [{self.turn.kind}: {self.turn.label}]"
        return f"{head}\n  raw: {self.turn.raw!r}\n  {strict}\n  {parsed}"


@attrs.frozen
class ParserReport:
    """What `check_parser` found.

    Attributes:
        dialect: the dialect the turns were written in.
        turns_checked: turns handed to the parser (including those tried while shrinking).
        mismatched: turns on which the parser disagreed with the strict rule (with
            ``shrink=True``: one per kind that disagreed).
        counterexamples: the shortest disagreement per label of turn (with ``shrink=True``: the
            shrunk first one per kind), in the order found; empty when the parser agreed with
            the strict rule on every turn.
    """

    dialect: DialectName
    turns_checked: int
    mismatched: int
    counterexamples: tuple[Counterexample, ...]

    @property
    def ok(self) -> bool:
        """True when no counterexample was found."""
        return not self.counterexamples

    def describe(self) -> str:
        """A summary line, then every counterexample."""
        head = (
            f"{self.dialect}: the parser disagreed with the strict rule on {self.mismatched} of "
            f"{self.turns_checked} turns"
        )
        return "\n".join([head, *(found.describe() for found in self.counterexamples)])

    def assert_ok(self) -> None:
        """Raise `AssertionError` describing the counterexamples, if any (for pytest)."""
        if not self.ok:
            raise AssertionError(self.describe())


def _parse(parse: ToolCallParser, raw: str) -> tuple[tuple[ToolCall, ...], str | None]:
    try:
        result: object = parse(raw)  # checked below: a user's parser may break its contract
    except Exception as exc:  # the contract: raising is rejecting
        return (), repr(exc)
    if result is None:
        return (), None
    if isinstance(result, str | bytes) or not isinstance(result, Sequence):
        raise ParserContractError(
            f"the parser must return None or a sequence of ToolCall, got {type(result).__name__}"
        )
    calls = tuple(result)
    for call in calls:
        if not isinstance(call, ToolCall):
            raise ParserContractError(
                f"the parser must return ToolCall records, got {type(call).__name__}"
            )
    return calls, None


def find_mismatch(parse: ToolCallParser, turn: GeneratedTurn) -> Counterexample | None:
    """Compare `parse` with the strict rule on one turn; ``None`` when they agree.

    For use inside your own hypothesis tests: ``assert find_mismatch(parse, turn) is None``.

    Raises:
        ParserContractError: the parser returned something other than ``None`` or a sequence
            of `ToolCall`.
    """
    if not callable(parse):
        raise TypeError(f"parse must be callable, got {type(parse).__name__}")
    if not isinstance(turn, GeneratedTurn):
        raise TypeError(f"turn must be a GeneratedTurn, got {type(turn).__name__}")
    verdict = turn.verdict()
    parsed, error = _parse(parse, turn.raw)
    if verdict.call is not None:
        if parsed == (verdict.call,):
            return None
        problem: Problem = "misread_valid_turn"
    elif not parsed:
        return None
    else:
        problem = "executed_rejected_turn"
    return Counterexample(problem, turn, verdict.codes, verdict.call, parsed, error)


class _DisagreementError(Exception):
    """Raised inside the hypothesis test so that hypothesis shrinks the turn."""


_STRATEGIES: Final[dict[TurnKind, Callable[..., st.SearchStrategy[GeneratedTurn]]]] = {
    "valid": valid_turns,
    "near_miss": near_miss_turns,
    "malformed": malformed_turns,
    "adversarial": adversarial_turns,
}


def check_parser(
    parse: ToolCallParser,
    *,
    dialect: DialectName = "qwen3_coder",
    tools: Sequence[ToolSpec] = TOOLSETS["mini_swe_agent_plus"],
    reasoning: ReasoningMode = "optional",
    think_prefilled: bool = False,
    max_examples: int = 100,
    kinds: Sequence[TurnKind] = TURN_KINDS,
    shrink: bool = False,
) -> ParserReport:
    """Property-test `parse` against the strict rule and report the first counterexamples.

    For each kind of turn in `kinds` (valid, near-miss, malformed, adversarial), draws up to
    `max_examples` turns of `dialect` and hands each raw text to `parse` (`ToolCallParser`).
    The report keeps the shortest disagreement found for each label of turn (``"valid"``,
    ``"duplicate_parameter"``, ``"tag_variant_in_value"``, ...), or with ``shrink=True`` the
    first disagreement of each kind, shrunk by hypothesis to a minimal turn (smaller, slower).
    The run is derandomized: the same parser gets the same report every time. Works anywhere
    (returns a report); in pytest call ``check_parser(...).assert_ok()`` from a plain test
    function (not from inside another ``@given`` test).

    Args:
        parse: the parser under test.
        dialect: ``"qwen3_coder"`` or ``"hermes"``: the format the turns are written in.
        tools: the tools the turns call (and the strict rule declares); configure the parser
            with the same ones. Default: Mini-SWE-Agent-Plus.
        reasoning, think_prefilled: how the template handles reasoning (see `check_turn`);
            the default, an optional ``<think>`` block the model writes itself, suits a
            parser that is handed the whole completion.
        max_examples: turns drawn per kind.
        kinds: which kinds of turns to draw (a subset of `TURN_KINDS`).
        shrink: stop each kind at its first disagreement and shrink it.

    Returns:
        A `ParserReport`; ``report.ok`` when no counterexample was found.

    Raises:
        TypeError, ValueError: a bad argument (the message names it).
        ParserContractError: the parser returned something other than ``None`` or a sequence
            of `ToolCall`.
    """
    _check_arguments(parse, dialect, reasoning, think_prefilled, max_examples, kinds)
    if not isinstance(shrink, bool):
        raise TypeError(f"shrink must be bool, got {type(shrink).__name__}")
    found: list[Counterexample] = []
    checked = mismatched = 0
    for kind in kinds:
        strategy = _STRATEGIES[kind](
            dialect, tools=tools, reasoning=reasoning, think_prefilled=think_prefilled
        )
        search = _search(parse, strategy, max_examples, shrink=shrink)
        checked += search.tried
        mismatched += search.mismatched
        found.extend(search.counterexamples)
    return ParserReport(dialect, checked, mismatched, tuple(found))


@attrs.frozen
class _Search:
    """One kind's search: its counterexamples, turns tried and disagreements seen."""

    counterexamples: tuple[Counterexample, ...]
    tried: int
    mismatched: int


def _shortest_per_label(seen: list[Counterexample]) -> tuple[Counterexample, ...]:
    shortest: dict[str, Counterexample] = {}
    for found in seen:
        kept = shortest.get(found.turn.label)
        if kept is None or len(found.turn.raw) < len(kept.turn.raw):
            shortest[found.turn.label] = found
    return tuple(shortest.values())


def _search(
    parse: ToolCallParser,
    strategy: st.SearchStrategy[GeneratedTurn],
    max_examples: int,
    *,
    shrink: bool,
) -> _Search:
    """Draw up to `max_examples` turns. Without `shrink` every turn is tried and the shortest
    disagreement of each label kept; with it the first disagreement stops the search and
    hypothesis shrinks it (smaller, but each shrink step draws and parses again)."""
    seen: list[Counterexample] = []
    broken: list[ParserContractError] = []
    tried = 0

    @settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def property_holds(turn: GeneratedTurn) -> None:
        nonlocal tried
        if broken:  # raised below once hypothesis is done: a contract error needs no shrinking
            return
        tried += 1
        try:
            mismatch = find_mismatch(parse, turn)
        except ParserContractError as exc:
            broken.append(exc)
            return
        if mismatch is not None:
            seen.append(mismatch)
            if shrink:
                raise _DisagreementError

    try:
        property_holds()
    except _DisagreementError:
        return _Search((seen[-1],), tried, 1)  # hypothesis replays the shrunk example last
    if broken:
        raise broken[0]
    return _Search(_shortest_per_label(seen), tried, len(seen))


def _check_arguments(
    parse: object,
    dialect: object,
    reasoning: object,
    think_prefilled: object,
    max_examples: object,
    kinds: object,
) -> None:
    if not callable(parse):
        raise TypeError(f"parse must be callable, got {type(parse).__name__}")
    if not isinstance(dialect, str) or dialect not in MUTATIONS:  # built-in grammars only
        raise ValueError(f"dialect must be one of {sorted(MUTATIONS)}, got {dialect!r}")
    if reasoning is None:
        raise ValueError("reasoning must be 'required', 'optional' or 'forbidden', got None")
    if not isinstance(think_prefilled, bool):
        raise TypeError(f"think_prefilled must be bool, got {type(think_prefilled).__name__}")
    if isinstance(max_examples, bool) or not isinstance(max_examples, int):
        raise TypeError(f"max_examples must be int, got {type(max_examples).__name__}")
    if max_examples < 1:
        raise ValueError(f"max_examples must be at least 1, got {max_examples}")
    if isinstance(kinds, str) or not isinstance(kinds, Sequence):
        raise TypeError(f"kinds must be a sequence of turn kinds, got {type(kinds).__name__}")
    unknown = [kind for kind in kinds if kind not in TURN_KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {TURN_KINDS}, got {kinds!r}")
