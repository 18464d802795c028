"""`_grader`: folding phase reports into outcomes, robust to junk lines."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox import TestOutcome
from swe_sandbox._grader import PLUGIN_SOURCE, parse_report


def line(**record: object) -> str:
    return json.dumps(record)


def test_phases_fold_into_one_outcome() -> None:
    lines = [
        line(event="start"),
        line(event="test", nodeid="t::ok", when="setup", outcome="passed"),
        line(event="test", nodeid="t::ok", when="call", outcome="passed"),
        line(event="test", nodeid="t::ok", when="teardown", outcome="passed"),
        line(event="test", nodeid="t::bad", when="call", outcome="failed"),
        line(event="test", nodeid="t::err", when="setup", outcome="failed"),
        line(event="test", nodeid="t::skip", when="setup", outcome="skipped"),
        line(event="test", nodeid="t::xf", when="call", outcome="skipped", xfail=True),
        line(event="test", nodeid="t::tdown", when="call", outcome="passed"),
        line(event="test", nodeid="t::tdown", when="teardown", outcome="failed"),
        line(event="finish", exitstatus=1),
    ]
    report = parse_report(lines)
    assert report.started
    assert report.exit_status == 1
    assert report.outcomes == {
        "t::ok": TestOutcome.PASSED,
        "t::bad": TestOutcome.FAILED,
        "t::err": TestOutcome.ERROR,
        "t::skip": TestOutcome.SKIPPED,
        "t::xf": TestOutcome.SKIPPED,
        "t::tdown": TestOutcome.ERROR,
    }


def test_collection_errors_and_missing_finish() -> None:
    report = parse_report([line(event="start"), line(event="collect", nodeid="tests/t.py")])
    assert report.collection_errors == ("tests/t.py",)
    assert report.exit_status is None


@given(st.lists(st.text(max_size=40), max_size=20))
def test_junk_never_yields_a_pass(junk: list[str]) -> None:
    report = parse_report(junk)
    assert TestOutcome.PASSED not in report.outcomes.values()


def test_plugin_source_is_valid_python() -> None:
    compile(PLUGIN_SOURCE, "swe_sandbox_report.py", "exec")


def test_version_2_pass_needs_a_clean_call_record() -> None:
    def passed(nodeid: str) -> str:
        return line(event="test", nodeid=nodeid, when="call", outcome="passed")

    lines = [
        line(event="start", v=2),
        line(event="call", nodeid="t::ok", raised=False),
        passed("t::ok"),
        line(event="call", nodeid="t::forged", raised=True),  # the report object was patched
        passed("t::forged"),
        passed("t::never-ran"),  # a report for a test whose function was never called
        line(event="finish", exitstatus=0),
    ]
    assert parse_report(lines).outcomes == {
        "t::ok": TestOutcome.PASSED,
        "t::forged": TestOutcome.FAILED,
        "t::never-ran": TestOutcome.MISSING,
    }
