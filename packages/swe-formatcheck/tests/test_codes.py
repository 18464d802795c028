"""Codes are stable strings and every one is documented in the package README."""

from __future__ import annotations

from pathlib import Path

from swe_formatcheck import Code, GateReason

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_codes_are_their_string_values() -> None:
    assert Code.DUPLICATE_PARAMETER == "duplicate_parameter"
    assert all(code.value == code.name.lower() for code in Code)
    assert len({code.value for code in Code}) == len(Code)


def test_every_code_and_gate_reason_is_in_the_readme() -> None:
    missing = [item.value for item in (*Code, *GateReason) if f"`{item.value}`" not in README]
    assert missing == []
