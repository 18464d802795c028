"""Instrumentation that runs *inside* the sandbox: the assertion recorder of Pipeline 1 and the
function probe of test strengthening.

Both travel as an extra file in the patch under test (so they need nothing from the sandbox
but ``run``), write their findings to a file under ``/tmp`` and print it after a marker line:
the test run's own output is discarded, so no amount of it can truncate or spoof the result.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from swe_curate._diff import make_patch
from swe_curate._errors import ScorerError

MARKER = "@@SWE_CURATE_PROBE@@"
ASSERT_PLUGIN = "_swe_curate_asserts"
FUNCTION_PROBE = "_swe_curate_probe"

ASSERT_PLUGIN_SOURCE = '''\
"""swe-curate: record every assertion of the graded tests (passed, or the one that raised)."""
import json
import os

import pytest

_EVENTS = []
_ONLY = None
if os.environ.get("SWE_CURATE_PROBE_ONLY"):
    with open(os.environ["SWE_CURATE_PROBE_ONLY"], encoding="utf-8") as _handle:
        _ONLY = set(json.load(_handle))


def _wanted(item):
    return _ONLY is None or item.nodeid in _ONLY


def pytest_assertion_pass(item, lineno, orig, expl):
    if _wanted(item):
        _EVENTS.append(
            {"test": item.nodeid, "line": lineno, "source": "assert " + orig, "outcome": "passed"}
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if call.when != "call" or call.excinfo is None or not _wanted(item):
        return
    entry = None
    for candidate in reversed(call.excinfo.traceback):
        if str(candidate.path) == str(item.path):
            entry = candidate
            break
    if entry is None:
        return
    try:
        source = str(entry.statement).strip()
    except Exception:
        source = ""
    _EVENTS.append({
        "test": item.nodeid,
        "line": entry.lineno + 1,
        "source": source,
        "outcome": "raised",
        "exception": call.excinfo.typename,
        "message": str(call.excinfo.value)[:300],
    })


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["SWE_CURATE_PROBE_OUT"], "w", encoding="utf-8") as handle:
        json.dump(_EVENTS, handle)
'''

FUNCTION_PROBE_SOURCE = '''\
"""swe-curate: call functions on literal inputs and record repr(result) or the exception."""
import ast
import importlib
import json
import signal
import sys


def _alarm(signum, frame):
    raise TimeoutError("probe case timed out")


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    signal.signal(signal.SIGALRM, _alarm)
    out = []
    for module, qualname, args_src in cases:
        signal.alarm(2)
        try:
            target = importlib.import_module(module)
            for part in qualname.split("."):
                target = getattr(target, part)
            value = target(*ast.literal_eval(args_src))
            out.append({"ok": True, "repr": repr(value)})
        except BaseException as exc:
            out.append({"ok": False, "exception": type(exc).__name__})
        finally:
            signal.alarm(0)
    json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))


main()
'''


def with_file(patch: str, path: str, text: str) -> str:
    """``patch`` plus the creation of ``path`` holding ``text``."""
    addition = make_patch({}, {path: text})
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch + addition


def assertion_command(test_command: str, only: Sequence[str]) -> str:
    """The task's own test command with the assertion recorder loaded, recording the tests
    in ``only``; prints its findings after :data:`MARKER`."""
    out, only_file = "/tmp/_swe_curate_asserts.json", "/tmp/_swe_curate_only.json"
    return (
        f"printf %s {shlex.quote(json.dumps(list(only)))} > {only_file}; "
        f'export PYTHONPATH="$PWD${{PYTHONPATH:+:$PYTHONPATH}}" SWE_CURATE_PROBE_OUT={out} '
        f"SWE_CURATE_PROBE_ONLY={only_file} "
        f'PYTEST_ADDOPTS="-p {ASSERT_PLUGIN} -o enable_assertion_pass_hook=true"; '
        f"rm -f {out}; ( {test_command} ) >/dev/null 2>&1; "
        f"echo {MARKER}; cat {out}"
    )


def function_probe_command(cases: Sequence[tuple[str, str, str]]) -> str:
    """Shell command running :data:`FUNCTION_PROBE_SOURCE` on ``(module, qualname, args)``."""
    payload = shlex.quote(json.dumps(list(cases)))
    return (
        f"printf %s {payload} > /tmp/_swe_curate_cases.json; "
        f'PYTHONPATH="$PWD:$PWD/src${{PYTHONPATH:+:$PYTHONPATH}}" python3 {FUNCTION_PROBE}.py '
        "/tmp/_swe_curate_cases.json /tmp/_swe_curate_probe.json >/dev/null 2>&1; "
        f"echo {MARKER}; cat /tmp/_swe_curate_probe.json"
    )


def parse_probe_output(output: str, *, truncated: bool = False) -> Any:
    """The JSON after the marker; :class:`ScorerError` when the probe wrote none."""
    if truncated:
        raise ScorerError("probe output exceeded the sandbox output limit")
    _, found, tail = output.rpartition(MARKER)
    if not found:
        raise ScorerError("probe output has no marker (the command did not run)")
    try:
        return json.loads(tail.strip())
    except json.JSONDecodeError as exc:
        raise ScorerError(f"probe wrote no result: {tail.strip()[:200]!r}") from exc
