"""`EpisodeGate`: terminate bad episodes at once and gate the reward (Arctic-SWE §3.2, corrections 1, 3).

Fed every turn's verdict and token count, the gate decides *continue* or *terminate* with a
reason, before group advantages are computed. Its `reward` is positive only for an episode that
ended on an explicit ``submit`` with no invalid turn. With ``on_invalid="feedback"`` (stacks that
show the model an error message and let it retry) the episode goes on but is *tainted*: a harness
remedy must never share in a positive reward, or the policy learns to lean on the harness.

``gated=False`` is the ablation Arctic-SWE §3.2 measures the gate against: nothing but a submit
or a budget ends the episode (an invalid turn is only counted, a repeated call is allowed) and
the reward is the task reward of whatever the repository holds at the end, submitted or not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import StrEnum
from typing import Literal

import attrs

from swe_formatcheck._errors import GateClosedError
from swe_formatcheck._tools import ToolCall
from swe_formatcheck._verdict import TurnVerdict


class GateReason(StrEnum):
    """Why a gate terminated an episode (stable string values)."""

    INVALID_FORMAT = "invalid_format"
    """A turn failed `check_turn` and ``on_invalid="terminate"``."""
    DUPLICATE_CALL = "duplicate_call"
    """The same call (name and arguments) as the previous turn's."""
    TURN_BUDGET = "turn_budget"
    """``max_turns`` turns were taken without a submit."""
    TOKEN_BUDGET = "token_budget"
    """The episode's tokens reached ``max_tokens`` without a submit."""
    SUBMITTED = "submitted"
    """A valid call of the submit tool: the only ending that can earn positive reward."""


@attrs.frozen
class GateDecision:
    """What to do after a turn: ``terminate`` (with a `reason`) or continue."""

    terminate: bool
    reason: GateReason | None = None


def _positive_int(name: str) -> Callable[[object, object, object], None]:
    def check(_instance: object, _attribute: object, value: object) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")

    return check


def _check_invalid_reward(_instance: object, _attribute: object, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"invalid_reward must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value > 0:
        raise ValueError(f"invalid_reward must be finite and <= 0, got {value}")


def _check_on_invalid(_instance: object, _attribute: object, value: object) -> None:
    if value not in ("terminate", "feedback"):
        raise ValueError(f"on_invalid must be 'terminate' or 'feedback', got {value!r}")


@attrs.define
class EpisodeGate:
    """The per-episode gate. Create one per rollout; call `observe` after every turn.

    Attributes:
        max_turns: turns allowed; the turn that reaches it terminates (``turn_budget``).
        max_tokens: tokens allowed in the whole trajectory (prompt, generations, observations).
        invalid_reward: the reward of every episode that does not end in a clean submit
            (0.0, or -1.0 where configured); must be <= 0.
        on_invalid: ``"terminate"`` (default, the paper's recipe) or ``"feedback"`` (continue,
            but the episode is tainted and can never earn positive reward).
        submit_tool: the function name that ends an episode by submitting.
        gated: ``True`` (default, the recipe). ``False`` is the ungated ablation: only a submit
            or a budget terminates (``on_invalid`` and duplicate calls no longer end an
            episode; invalid turns are still counted) and `reward` passes the task reward
            through whatever ended the episode.
    """

    max_turns: int = attrs.field(default=100, validator=_positive_int("max_turns"))
    max_tokens: int = attrs.field(default=131072, validator=_positive_int("max_tokens"))
    invalid_reward: float = attrs.field(default=0.0, validator=_check_invalid_reward)
    on_invalid: Literal["terminate", "feedback"] = attrs.field(
        default="terminate", validator=_check_on_invalid
    )
    submit_tool: str = attrs.field(default="submit")
    gated: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    # Episode state: private so that only `observe` moves it; read through the properties below.
    _turns: int = attrs.field(default=0, init=False)
    _tokens: int = attrs.field(default=0, init=False)
    _invalid_turns: int = attrs.field(default=0, init=False)
    _reason: GateReason | None = attrs.field(default=None, init=False)
    _previous_call: ToolCall | None = attrs.field(default=None, init=False, repr=False)

    @property
    def turns(self) -> int:
        """Turns observed so far."""
        return self._turns

    @property
    def tokens(self) -> int:
        """Running token total of the trajectory."""
        return self._tokens

    @property
    def invalid_turns(self) -> int:
        """Turns whose verdict was not ok."""
        return self._invalid_turns

    @property
    def reason(self) -> GateReason | None:
        """Why the episode was terminated, or ``None`` while it continues."""
        return self._reason

    @property
    def done(self) -> bool:
        """Whether the episode has been terminated."""
        return self._reason is not None

    @property
    def tainted(self) -> bool:
        """Whether any turn was invalid (in either mode)."""
        return self.invalid_turns > 0

    @property
    def submitted(self) -> bool:
        """Whether the episode ended on a valid submit call."""
        return self.reason is GateReason.SUBMITTED

    def observe(self, verdict: TurnVerdict, n_tokens: int) -> GateDecision:
        """Record one turn and decide.

        Args:
            verdict: the turn's `check_turn` verdict.
            n_tokens: tokens this turn added to the trajectory (its generation plus the prompt or
                observation tokens appended since the previous turn), so the running sum is the
                trajectory's length.

        Checks, first match wins: invalid format, duplicate call, submitted, token budget,
        turn budget.

        Raises:
            GateClosedError: the episode was already terminated.
            TypeError / ValueError: bad arguments (named in the message).
        """
        if not isinstance(verdict, TurnVerdict):
            raise TypeError(f"verdict must be a TurnVerdict, got {type(verdict).__name__}")
        if not isinstance(n_tokens, int) or isinstance(n_tokens, bool):
            raise TypeError(f"n_tokens must be int, got {type(n_tokens).__name__}")
        if n_tokens < 0:
            raise ValueError(f"n_tokens must be >= 0, got {n_tokens}")
        if self._reason is not None:
            raise GateClosedError(f"the episode already ended ({self._reason.value})")
        self._turns += 1
        self._tokens += n_tokens
        self._reason = self._decide(verdict)
        return GateDecision(self._reason is not None, self._reason)

    def _decide(self, verdict: TurnVerdict) -> GateReason | None:
        call = verdict.call if verdict.ok else None
        previous, self._previous_call = self._previous_call, call
        if call is None:
            self._invalid_turns += 1
            if self.gated and self.on_invalid == "terminate":
                return GateReason.INVALID_FORMAT
        elif call == previous and self.gated:
            return GateReason.DUPLICATE_CALL
        elif call.name == self.submit_tool:
            return GateReason.SUBMITTED
        if self.tokens >= self.max_tokens:
            return GateReason.TOKEN_BUDGET
        if self.turns >= self.max_turns:
            return GateReason.TURN_BUDGET
        return None

    def reward(self, task_reward: float) -> float:
        """The gated reward: `task_reward` after a clean submit, else `invalid_reward`.

        Clean means the episode ended with ``submitted`` and no turn was ever invalid. An episode
        not yet terminated has not submitted, so it also gets `invalid_reward`. An ungated gate
        (``gated=False``) returns `task_reward` whatever ended the episode.
        """
        if not isinstance(task_reward, int | float) or isinstance(task_reward, bool):
            raise TypeError(f"task_reward must be a number, got {type(task_reward).__name__}")
        if not math.isfinite(task_reward):
            raise ValueError(f"task_reward must be finite, got {task_reward}")
        if not self.gated:
            return float(task_reward)
        if self.submitted and not self.tainted:
            return float(task_reward)
        return float(self.invalid_reward)
