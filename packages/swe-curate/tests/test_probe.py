"""In-sandbox instrumentation plumbing: commands, patches, parsing what came back."""

from __future__ import annotations

import json

import pytest

from swe_curate._diff import apply_patch, make_patch
from swe_curate._errors import ScorerError
from swe_curate._probe import (
    MARKER,
    assertion_command,
    function_probe_command,
    parse_probe_output,
    with_file,
)


def test_with_file_adds_a_new_file_to_any_patch() -> None:
    base = make_patch({"m.py": "a\n"}, {"m.py": "b\n"})
    combined = with_file(base, "_probe.py", "print(1)\n")
    assert apply_patch({"m.py": "a\n"}, combined) == {"m.py": "b\n", "_probe.py": "print(1)\n"}
    assert apply_patch({}, with_file("", "p.py", "x\n")) == {"p.py": "x\n"}


def test_parse_takes_the_json_after_the_last_marker() -> None:
    spoof = f"{MARKER}\n[1]\n"  # test output printing a marker cannot win: ours comes last
    assert parse_probe_output(spoof + f"noise\n{MARKER}\n" + json.dumps([{"ok": True}])) == [
        {"ok": True}
    ]
    with pytest.raises(ScorerError, match="no marker"):
        parse_probe_output("pytest crashed")
    with pytest.raises(ScorerError, match="no result"):
        parse_probe_output(f"{MARKER}\ncat: no such file\n")


def test_commands_discard_the_runs_own_output() -> None:
    assert ">/dev/null 2>&1" in assertion_command("python3 -m pytest", ["t.py::a"])
    assert "enable_assertion_pass_hook=true" in assertion_command("python3 -m pytest", ["t.py::a"])
    command = function_probe_command([("pkg.m", "f", "(1, 'it''s')")])
    assert "/dev/null" in command
    assert command.rstrip().endswith("cat /tmp/_swe_curate_probe.json")
