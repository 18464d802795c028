"""`EpisodeGate`: reasons, gated reward, feedback taint; invariants as a state machine."""

from __future__ import annotations

import pytest
from formatcheck_turns import LS, THINK, bash, check
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from swe_formatcheck import (
    EpisodeGate,
    GateClosedError,
    GateDecision,
    GateReason,
    ToolCall,
    TurnVerdict,
    render_turn,
)

SUBMIT = check(render_turn("done", ToolCall("submit")))
LIST = check(THINK + LS)
PWD = check(render_turn("where", bash("pwd")))
INVALID = check(LS + " trailing prose")
VERDICT_KINDS = {"submit": SUBMIT, "list": LIST, "invalid": INVALID}  # list twice = a duplicate


def test_clean_submit_earns_the_task_reward() -> None:
    gate = EpisodeGate()
    assert gate.observe(LIST, 100) == GateDecision(False, None)
    assert gate.observe(SUBMIT, 50) == GateDecision(True, GateReason.SUBMITTED)
    assert gate.submitted
    assert gate.done
    assert not gate.tainted
    assert gate.reward(1.0) == 1.0
    assert (gate.turns, gate.tokens) == (2, 150)


@pytest.mark.parametrize(
    ("gate", "turns", "reason"),
    [
        (EpisodeGate(), [INVALID], GateReason.INVALID_FORMAT),
        (EpisodeGate(), [LIST, LIST], GateReason.DUPLICATE_CALL),
        (EpisodeGate(max_turns=2), [LIST, PWD], GateReason.TURN_BUDGET),
        (EpisodeGate(max_tokens=150), [LIST, PWD], GateReason.TOKEN_BUDGET),
        (EpisodeGate(max_tokens=150), [LIST, SUBMIT], GateReason.SUBMITTED),
        (EpisodeGate(max_turns=1), [SUBMIT], GateReason.SUBMITTED),
        (EpisodeGate(max_turns=1), [INVALID], GateReason.INVALID_FORMAT),
    ],
)
def test_termination_reasons(
    gate: EpisodeGate, turns: list[TurnVerdict], reason: GateReason
) -> None:
    decisions = [gate.observe(verdict, 100) for verdict in turns]
    assert [decision.terminate for decision in decisions] == [False] * (len(turns) - 1) + [True]
    assert gate.reason is reason
    expected = 1.0 if reason is GateReason.SUBMITTED else 0.0
    assert gate.reward(1.0) == expected


def test_feedback_mode_continues_but_taints() -> None:
    gate = EpisodeGate(on_invalid="feedback", invalid_reward=-1.0)
    assert not gate.observe(INVALID, 10).terminate
    assert not gate.observe(LIST, 10).terminate
    assert gate.observe(SUBMIT, 10).reason is GateReason.SUBMITTED
    assert gate.tainted
    assert gate.reward(1.0) == -1.0


def test_duplicate_needs_consecutive_valid_turns() -> None:
    gate = EpisodeGate(on_invalid="feedback")
    for verdict in (LIST, INVALID, LIST, PWD, LIST):
        assert not gate.observe(verdict, 1).terminate
    assert gate.observe(LIST, 1).reason is GateReason.DUPLICATE_CALL


def test_open_episode_and_failed_submit_get_invalid_reward() -> None:
    gate = EpisodeGate(invalid_reward=-1.0)
    gate.observe(LIST, 1)
    assert gate.reward(1.0) == -1.0
    gate.observe(SUBMIT, 1)
    assert gate.reward(0.0) == 0.0


def test_custom_submit_tool_name() -> None:
    gate = EpisodeGate(submit_tool="execute_bash")
    assert gate.observe(LIST, 1).reason is GateReason.SUBMITTED


def test_state_is_read_only() -> None:
    gate = EpisodeGate()
    with pytest.raises(AttributeError):
        gate.reason = GateReason.SUBMITTED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        gate.turns = 0  # type: ignore[misc]


def test_closed_gate_refuses_more_turns() -> None:
    gate = EpisodeGate()
    gate.observe(INVALID, 1)
    with pytest.raises(GateClosedError, match="invalid_format"):
        gate.observe(LIST, 1)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_turns": 0}, ValueError),
        ({"max_turns": 1.5}, TypeError),
        ({"max_tokens": True}, TypeError),
        ({"invalid_reward": 0.5}, ValueError),
        ({"invalid_reward": float("nan")}, ValueError),
        ({"invalid_reward": "0"}, TypeError),
        ({"on_invalid": "repair"}, ValueError),
        ({"gated": "no"}, TypeError),
    ],
)
def test_bad_configuration(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        EpisodeGate(**kwargs)  # type: ignore[arg-type]


@given(
    kinds=st.lists(st.sampled_from(sorted(VERDICT_KINDS)), min_size=1, max_size=12),
    max_turns=st.integers(1, 10),
    max_tokens=st.integers(1, 400),
    step=st.integers(0, 60),
    on_invalid=st.sampled_from(["terminate", "feedback"]),
    task_reward=st.floats(-1.0, 1.0),
)
def test_ungated_gate_ends_only_on_submit_or_a_budget(
    kinds: list[str], max_turns: int, max_tokens: int, step: int, on_invalid: str,
    task_reward: float,
) -> None:  # fmt: skip
    gate = EpisodeGate(max_turns, max_tokens, -1.0, on_invalid, gated=False)  # type: ignore[arg-type]
    for n, kind in enumerate(kinds, start=1):
        decision = gate.observe(VERDICT_KINDS[kind], n_tokens=step)
        expected = (
            GateReason.SUBMITTED if kind == "submit"
            else GateReason.TOKEN_BUDGET if n * step >= max_tokens
            else GateReason.TURN_BUDGET if n >= max_turns
            else None
        )  # fmt: skip
        assert decision.reason is expected
        assert decision.terminate == (expected is not None) == gate.done
        if gate.done:
            break
    assert gate.invalid_turns == kinds[: gate.turns].count("invalid")
    assert gate.reward(task_reward) == task_reward  # the grade itself, whatever ended it


def test_bad_observe_and_reward_arguments() -> None:
    gate = EpisodeGate()
    with pytest.raises(TypeError, match="verdict"):
        gate.observe("ok", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n_tokens"):
        gate.observe(LIST, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_tokens"):
        gate.observe(LIST, -1)
    with pytest.raises(ValueError, match="task_reward"):
        gate.reward(float("inf"))
    with pytest.raises(TypeError, match="task_reward"):
        gate.reward(None)  # type: ignore[arg-type]
    assert gate.turns == 0


VERDICTS = {"submit": SUBMIT, "list": LIST, "pwd": PWD, "invalid": INVALID}


class GateMachine(RuleBasedStateMachine):
    """Feeds random turns and checks the gate against a plain model of the rules."""

    @initialize(
        max_turns=st.integers(1, 6),
        max_tokens=st.integers(1, 400),
        feedback=st.booleans(),
        invalid_reward=st.sampled_from([0.0, -1.0]),
    )
    def start(self, max_turns: int, max_tokens: int, feedback: bool, invalid_reward: float) -> None:
        self.gate = EpisodeGate(
            max_turns=max_turns,
            max_tokens=max_tokens,
            invalid_reward=invalid_reward,
            on_invalid="feedback" if feedback else "terminate",
        )
        self.history: list[str] = []
        self.tokens = 0

    @precondition(lambda self: not self.gate.done)
    @rule(kind=st.sampled_from(sorted(VERDICTS)), n_tokens=st.integers(0, 120))
    def turn(self, kind: str, n_tokens: int) -> None:
        previous = self.history[-1] if self.history else None
        self.history.append(kind)
        self.tokens += n_tokens
        decision = self.gate.observe(VERDICTS[kind], n_tokens)
        assert decision.reason is self.expected_reason(kind, previous)
        assert decision.terminate is (decision.reason is not None)

    def expected_reason(self, kind: str, previous: str | None) -> GateReason | None:
        gate = self.gate
        if kind == "invalid" and gate.on_invalid == "terminate":
            return GateReason.INVALID_FORMAT
        if kind != "invalid" and kind == previous:
            return GateReason.DUPLICATE_CALL
        if kind == "submit":
            return GateReason.SUBMITTED
        if self.tokens >= gate.max_tokens:
            return GateReason.TOKEN_BUDGET
        if len(self.history) >= gate.max_turns:
            return GateReason.TURN_BUDGET
        return None

    @precondition(lambda self: self.gate.done)
    @rule()
    def turn_after_end(self) -> None:
        with pytest.raises(GateClosedError):
            self.gate.observe(LIST, 1)

    @invariant()
    def reward_is_positive_only_for_a_clean_submit(self) -> None:
        clean = self.gate.submitted and "invalid" not in self.history
        assert (self.gate.reward(1.0) > 0) is clean
        assert self.gate.reward(0.5) in ((0.5,) if clean else (self.gate.invalid_reward,))

    @invariant()
    def counters_match(self) -> None:
        assert self.gate.turns == len(self.history) <= self.gate.max_turns
        assert self.gate.tokens == self.tokens
        assert self.gate.tainted is ("invalid" in self.history)


TestGateMachine = GateMachine.TestCase
