"""The out-of-band test report: the pytest plugin we inject and the parser of what it writes.

Results never come from the tests' output (a conftest printing ``PASSED`` or echoing the log
markers changes nothing). The plugin writes one JSON object per event to its channel, a private
descriptor the boot script of the isolated run (`swe_sandbox._runner`) hands it
(`open_channel`).
The final ``finish`` record carries pytest's exit status, cross-checked against the exit code
the runner returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import attrs

from swe_sandbox._results import TestOutcome

#: Installed at grading time into ``/grader/<nonce>/report.py`` and loaded by file path.
PLUGIN_SOURCE = '''\
"""swe-sandbox grading report (written outside the agent's reach)."""
import json
import os

import pytest

_REPORT = None


def open_channel(fd):
    """Isolated run: report into the private descriptor the boot script kept."""
    global _REPORT
    _REPORT = os.fdopen(fd, "w", encoding="utf-8")


def _emit(record):
    if _REPORT is not None:
        _REPORT.write(json.dumps(record) + "\\n")
        _REPORT.flush()


def pytest_configure(config):
    _emit({"event": "start", "v": 2})


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect", "nodeid": report.nodeid, "outcome": "failed"})


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    # Whether the test function raised, seen by the hook machinery itself: a test report object
    # patched to say "passed" (TestReport.from_item_and_call, report.outcome) contradicts it.
    outcome = yield
    _emit({"event": "call", "nodeid": item.nodeid, "raised": outcome.excinfo is not None})


def pytest_runtest_logreport(report):
    _emit({
        "event": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": bool(getattr(report, "wasxfail", False)),
    })


def pytest_sessionfinish(session, exitstatus):
    _emit({"event": "finish", "exitstatus": int(exitstatus)})
'''


@attrs.frozen(kw_only=True)
class ParsedReport:
    """What the plugin wrote: per-test outcomes, collection errors, pytest's exit status."""

    outcomes: dict[str, TestOutcome]
    collection_errors: tuple[str, ...]
    exit_status: int | None  # None: no ``finish`` record (the run died or exited early)
    started: bool
    version: int = 1  # the ``start`` record's ``v``: 2 carries the hook-level call records


def _merge(current: TestOutcome | None, when: str, outcome: str, xfail: bool) -> TestOutcome:
    """Fold one phase report into the test's outcome; a failure in any phase wins."""
    if outcome == "failed":
        phase = TestOutcome.FAILED if when == "call" else TestOutcome.ERROR
        return current if current in (TestOutcome.FAILED, TestOutcome.ERROR) else phase
    if current in (TestOutcome.FAILED, TestOutcome.ERROR):
        return current
    if outcome == "skipped" or xfail:
        return TestOutcome.SKIPPED
    if when == "call" and outcome == "passed":
        return TestOutcome.PASSED if current is not TestOutcome.SKIPPED else current
    return current or TestOutcome.MISSING  # setup passed, call not reported (yet)


def parse_report(lines: Iterable[str]) -> ParsedReport:
    """Parse the plugin's JSON lines; malformed lines are ignored (they cannot add passes)."""
    outcomes: dict[str, TestOutcome] = {}
    collection_errors: list[str] = []
    exit_status: int | None = None
    started = False
    version = 1
    raised: dict[str, bool] = {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "start":
            started = True
            found = record.get("v")
            version = found if isinstance(found, int) else 1
        elif event == "call" and isinstance(record.get("nodeid"), str):
            raised[record["nodeid"]] = raised.get(record["nodeid"], False) or bool(
                record.get("raised", True)
            )
        elif event == "collect":
            collection_errors.append(str(record.get("nodeid", "")))
        elif event == "test" and isinstance(record.get("nodeid"), str):
            nodeid = record["nodeid"]
            outcomes[nodeid] = _merge(
                outcomes.get(nodeid),
                str(record.get("when")),
                str(record.get("outcome")),
                bool(record.get("xfail")),
            )
        elif event == "finish" and isinstance(record.get("exitstatus"), int):
            exit_status = record["exitstatus"]
    if version >= 2:  # a pass needs the hook-level record of a call that did not raise
        for nodeid, outcome in outcomes.items():
            if outcome is TestOutcome.PASSED and raised.get(nodeid) is not False:
                outcomes[nodeid] = TestOutcome.FAILED if nodeid in raised else TestOutcome.MISSING
    return ParsedReport(
        outcomes=outcomes,
        collection_errors=tuple(collection_errors),
        exit_status=exit_status,
        started=started,
        version=version,
    )
