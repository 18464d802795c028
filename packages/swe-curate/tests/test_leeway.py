"""Correct alternatives that vary what the issue leaves open: unstated error messages reworded,
unnamed private helpers renamed. Each behaves exactly like gold on everything but the varied
detail, and none is written for what the issue states."""

from __future__ import annotations

from typing import Any

import pytest

from swe_curate._diff import apply_patch, make_patch
from swe_curate._leeway import rename_private_helpers, vary_messages
from swe_curate._source import PatchedTree

BUGGY = """\
def _scale(unit):
    return {"m": 60}[unit]


def seconds(n, unit):
    return n * _scale(unit)
"""
GOLD = """\
def _scale(unit):
    if unit not in ("h", "m"):
        raise ValueError(f"unknown unit {unit!r}; use h or m")
    return {"h": 3600, "m": 60}[unit]


def seconds(n, unit):
    if n < 0:
        raise ValueError("negative duration")
    return n * _scale(unit)
"""


def _tree() -> PatchedTree:
    return PatchedTree.from_patch({"t.py": BUGGY}, make_patch({"t.py": BUGGY}, {"t.py": GOLD}))


def _load(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<alternative>", "exec"), namespace)
    return namespace


def _error(fn: Any, *args: Any) -> tuple[type[BaseException], str]:
    with pytest.raises((ValueError, KeyError)) as info:
        fn(*args)
    return type(info.value), str(info.value)


def test_unstated_messages_are_reworded_keeping_types_and_values() -> None:
    found = vary_messages(_tree(), "seconds() ignores hours: seconds(2, 'h') should return 7200.")
    assert {cf.requirement for cf in found} == {
        "exact message f'unknown unit {unit!r}; use h or m' not stated in the issue",
        "exact message 'negative duration' not stated in the issue",
    }
    for cf in found:
        mine, gold = _load(apply_patch({"t.py": BUGGY}, cf.patch)["t.py"]), _load(GOLD)
        assert mine["seconds"](2, "h") == gold["seconds"](2, "h") == 7200
        for args in [(1, "d"), (-1, "m")]:
            kind, text = _error(mine["seconds"], *args)
            gold_kind, gold_text = _error(gold["seconds"], *args)
            assert kind is gold_kind
            if text != gold_text:  # the reworded one keeps the interpolated value
                assert text.startswith("invalid input")
                assert ("'d'" in text) == ("'d'" in gold_text)


def test_a_stated_message_is_not_varied() -> None:
    issue = "seconds(-1, 'm') should raise ValueError('negative duration')."
    found = vary_messages(_tree(), issue)
    assert [cf.requirement for cf in found] == [
        "exact message f'unknown unit {unit!r}; use h or m' not stated in the issue"
    ]


def test_unnamed_private_helpers_are_renamed_everywhere_in_their_file() -> None:
    (cf,) = rename_private_helpers(_tree(), "seconds() ignores hours", {})
    assert cf.requirement == "imports private helper `_scale` not named in the issue"
    mine = _load(apply_patch({"t.py": BUGGY}, cf.patch)["t.py"])
    assert "_scale" not in mine
    assert mine["seconds"](3, "h") == 10800


def test_named_or_shared_helpers_are_left_alone() -> None:
    assert rename_private_helpers(_tree(), "_scale('h') should return 3600", {}) == []
    others = {"other.py": "from t import _scale\n"}
    assert rename_private_helpers(_tree(), "seconds() ignores hours", others) == []
