"""Held-out-style curation cases: small duration-parsing repositories written here, each with an
issue, a gold patch, a graded suite, and hand-written wrong and correct patches that prove the
expected verdict by grading them with the sandbox grader (not by reading the verdict).

| case | suite | expected judge verdict |
|---|---|---|
| ``good_literal`` | literal asserts on values beyond the issue's one example | accepted |
| ``loose_isinstance`` | only ``isinstance(result, int)`` | too_loose, then strengthened |
| ``exact_message`` | pins an error message the issue never states | over_restrictive |
| ``private_helper`` | imports a private helper the issue never names | over_restrictive |
| ``stated_message`` | pins the error message the issue *does* state | accepted |
| ``edge_unchecked`` | values only; the issue's stated ``''`` → ValueError is unchecked | too_loose, then strengthened |
"""

from __future__ import annotations

from pathlib import Path

import attrs

from swe_curate._diff import make_patch
from swe_sandbox import RepoSource, TaskSpec

MODULE = "durations.py"
HEAD = "\"\"\"Duration strings such as '1h30m', '2m' or '90s'.\"\"\"\n\nimport re\n\n\n"
FORMAT = '''

def format_duration(seconds):
    """The duration string of a number of seconds (minutes and seconds)."""
    minutes, seconds = divmod(seconds, 60)
    return (f"{minutes}m" if minutes else "") + (f"{seconds}s" if seconds or not minutes else "")
'''
BUGGY = (
    HEAD
    + '''def parse_duration(text):
    """Total seconds in a duration string."""
    units = {"m": 60, "s": 1}
    total = 0
    for number, unit in re.findall(r"(\\d+)([a-z])", text):
        total += int(number) * units[unit]
    return total
'''
    + FORMAT
)
GOLD_HOURS = BUGGY.replace('{"m": 60, "s": 1}', '{"h": 3600, "m": 60, "s": 1}')
GOLD_STRICT = GOLD_HOURS.replace(
    '    units = {"h"',
    '    if not re.fullmatch(r"(\\d+[hms])+", text):\n'
    '        raise ValueError(f"not a duration: {text!r}")\n'
    '    units = {"h"',
)
GOLD_HELPER = (
    HEAD
    + '''def _unit_seconds(unit):
    """Seconds in one unit: h, m or s."""
    return {"h": 3600, "m": 60, "s": 1}[unit]


def parse_duration(text):
    """Total seconds in a duration string."""
    total = 0
    for number, unit in re.findall(r"(\\d+)([a-z])", text):
        total += int(number) * _unit_seconds(unit)
    return total


def format_duration(seconds):
    """The duration string of a number of seconds (hours, minutes and seconds)."""
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    head = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return head + (f"{seconds}s" if seconds or not head else "")
'''
)

VISIBLE_TESTS = """\
from durations import format_duration, parse_duration


def test_minutes():
    assert parse_duration("2m") == 120
    assert parse_duration("90s") == 90


def test_format():
    assert format_duration(90) == "1m30s"
"""

HOURS_VALUES = """\
from durations import parse_duration


def test_hours():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2h") == 7200
    assert parse_duration("1h1m1s") == 3661
"""

SUITES = {
    "good_literal": HOURS_VALUES,
    "loose_isinstance": """\
from durations import parse_duration


def test_hours():
    result = parse_duration("1h30m")
    assert isinstance(result, int)
""",
    "exact_message": HOURS_VALUES
    + """

def test_malformed():
    import pytest

    with pytest.raises(ValueError) as info:
        parse_duration("")
    assert str(info.value) == "not a duration: ''"
""",
    "private_helper": """\
from durations import parse_duration


def test_unit():
    from durations import _unit_seconds

    assert _unit_seconds("h") == 3600


def test_hours():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2h") == 7200
""",
    "stated_message": HOURS_VALUES
    + """

def test_malformed():
    import pytest

    with pytest.raises(ValueError) as info:
        parse_duration("")
    assert str(info.value) == "not a duration: ''"
""",
    "edge_unchecked": HOURS_VALUES,
}

ISSUE_HOURS = "parse_duration() ignores hours: parse_duration('1h30m') raises KeyError: 'h'; it should return 5400."
ISSUES = {
    "good_literal": ISSUE_HOURS,
    "loose_isinstance": ISSUE_HOURS
    + " Minutes already work: parse_duration('2m') == 120. Malformed text must be rejected:"
    " parse_duration('') should raise ValueError; parse_duration('1h30') should raise ValueError"
    " too.",
    "exact_message": ISSUE_HOURS
    + " Malformed text must be rejected: parse_duration('') should raise ValueError.",
    "private_helper": ISSUE_HOURS,
    "stated_message": ISSUE_HOURS
    + " Malformed text must be rejected: parse_duration('') should raise ValueError with the"
    " message \"not a duration: ''\" (the text's repr after 'not a duration: ').",
    "edge_unchecked": ISSUE_HOURS
    + " An empty string is not a duration: parse_duration('') should raise ValueError"
    " instead of returning 0.",
}
GOLDS = {
    "good_literal": GOLD_HOURS,
    "loose_isinstance": GOLD_STRICT,
    "exact_message": GOLD_STRICT,
    "private_helper": GOLD_HELPER,
    "stated_message": GOLD_STRICT,
    "edge_unchecked": GOLD_STRICT,
}
F2P = {
    "good_literal": ("tests/test_hours.py::test_hours",),
    "loose_isinstance": ("tests/test_hours.py::test_hours",),
    "exact_message": ("tests/test_hours.py::test_hours", "tests/test_hours.py::test_malformed"),
    "private_helper": ("tests/test_hours.py::test_unit", "tests/test_hours.py::test_hours"),
    "stated_message": ("tests/test_hours.py::test_hours", "tests/test_hours.py::test_malformed"),
    "edge_unchecked": ("tests/test_hours.py::test_hours",),
}
P2P = ("tests/test_visible.py::test_minutes", "tests/test_visible.py::test_format")
EXPECTED = {
    "good_literal": "accepted",
    "loose_isinstance": "too_loose",
    "exact_message": "over_restrictive",
    "private_helper": "over_restrictive",
    "stated_message": "accepted",
    "edge_unchecked": "too_loose",
}
CASES = tuple(SUITES)


def _edit(source: str, old: str, new: str) -> str:
    assert old in source, old
    return source.replace(old, new)


# -- hand-written patches (full post-images of durations.py) -----------------------------------

RETURN_ZERO_FOR_HOURS = _edit(BUGGY, '{"m": 60, "s": 1}', '{"h": 0, "m": 60, "s": 1}')
"""Stated-value wrong patch: hours parse without error but count nothing (1h30m → 1800)."""
EXAMPLE_SPECIAL_CASED = _edit(
    BUGGY,
    '    """Total seconds in a duration string."""\n',
    '    """Total seconds in a duration string."""\n    if text == "1h30m":\n        return 5400\n',
)
"""The issue's example hard-coded into the buggy function."""
NO_VALIDATION = GOLD_HOURS
"""Hours right, malformed text still accepted (the issue's edge case ignored)."""
REGEX_ALTERNATIVE = (
    HEAD
    + '''def parse_duration(text):
    """Total seconds in a duration string."""
    if not text or re.sub(r"\\d+[hms]", "", text):
        raise ValueError("malformed duration " + repr(text))
    scale = {"s": 1, "m": 60, "h": 60 * 60}
    return sum(int(n) * scale[u] for n, u in re.findall(r"(\\d+)([hms])", text))
'''
    + FORMAT
)
"""A correct alternative with another algorithm and another error message."""
STATED_MESSAGE_ALTERNATIVE = _edit(
    REGEX_ALTERNATIVE, '"malformed duration " + repr(text)', '"not a duration: %r" % (text,)'
)
"""Another algorithm that keeps the message the issue states."""
INLINED_HELPER = GOLD_HOURS
"""The private-helper case's fix without the helper (inlined)."""

HAND_WRONG = {
    "good_literal": {
        "example_special_cased": EXAMPLE_SPECIAL_CASED,
        "hours_count_zero": RETURN_ZERO_FOR_HOURS,
    },
    "loose_isinstance": {
        "hours_count_zero": RETURN_ZERO_FOR_HOURS,
        "example_special_cased": EXAMPLE_SPECIAL_CASED,
    },
    "exact_message": {"no_validation": NO_VALIDATION},
    "private_helper": {"example_special_cased": EXAMPLE_SPECIAL_CASED},
    "stated_message": {"no_validation": NO_VALIDATION},
    "edge_unchecked": {"no_validation": NO_VALIDATION},
}
HAND_CORRECT = {
    "good_literal": {"regex_alternative": REGEX_ALTERNATIVE},
    "loose_isinstance": {"regex_alternative": REGEX_ALTERNATIVE},
    "exact_message": {"other_message": REGEX_ALTERNATIVE},
    "private_helper": {"inlined_helper": INLINED_HELPER},
    "stated_message": {"stated_message_alternative": STATED_MESSAGE_ALTERNATIVE},
    "edge_unchecked": {"regex_alternative": REGEX_ALTERNATIVE},
}


def patch_to(source: str) -> str:
    """A patch from the buggy tree to ``source`` as durations.py."""
    return make_patch({MODULE: BUGGY}, {MODULE: source})


def make_task(root: Path, case: str) -> TaskSpec:
    """Write the case's buggy repository under ``root`` and return its task."""
    repo = root / f"repo-{case}"
    (repo / "tests").mkdir(parents=True)
    (repo / MODULE).write_text(BUGGY)
    (repo / "tests" / "test_visible.py").write_text(VISIBLE_TESTS)
    graded = {"tests/test_hours.py": SUITES[case]}
    return TaskSpec(
        instance_id=f"durations-{case.replace('_', '-')}",
        repo=RepoSource.directory(repo),
        problem_statement=ISSUES[case],
        gold_patch=patch_to(GOLDS[case]),
        test_patch=make_patch({}, graded),
        graded_files=tuple(graded),
        fail_to_pass=F2P[case],
        pass_to_pass=P2P,
    )


def with_suite(task: TaskSpec, suite: str) -> TaskSpec:
    """The same task graded by another test module."""
    return attrs.evolve(task, test_patch=make_patch({}, {"tests/test_hours.py": suite}))
