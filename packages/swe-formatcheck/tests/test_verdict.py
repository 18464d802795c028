"""`TurnVerdict` derives ok and codes from its violations."""

from __future__ import annotations

from swe_formatcheck import Code, ToolCall, TurnVerdict, Violation


def test_ok_and_codes_follow_violations() -> None:
    clean = TurnVerdict((), ToolCall("submit"), "r")
    assert clean.ok
    assert clean.codes == ()
    dirty = TurnVerdict((Violation(Code.NO_CALL, 3, "x"), Violation(Code.TRUNCATED, 4, "y")), None)
    assert not dirty.ok
    assert dirty.codes == ("no_call", "truncated")
    assert dirty.reasoning is None
