"""TaskRecord columns: field order, round trip and malformed columns."""

from __future__ import annotations

import attrs
import pytest

from deck_evictor import RetireReason
from deck_evictor._tasks import COUNTERS, TaskRecord, from_columns, to_columns


def test_counters_mirror_the_record_field_order() -> None:
    names = [field.name for field in attrs.fields(TaskRecord)]
    assert tuple(names[2:]) == COUNTERS


def test_columns_round_trip() -> None:
    records = [TaskRecord("a"), TaskRecord("b", RetireReason.HARD, groups=3, attempts=24)]
    records[0].retire(RetireReason.EASY, 4, 8, 8)
    assert from_columns(to_columns(records)) == records


@pytest.mark.parametrize(
    "patch",
    [
        {"groups": [0, True]},
        {"groups": [0, 1.0]},
        {"groups": [0]},
        {"reason": [None, "bored"]},
        {"task_ids": ["a", 2]},
    ],
)
def test_malformed_columns_raise(patch: dict[str, list[object]]) -> None:
    columns = {**to_columns([TaskRecord("a"), TaskRecord("b")]), **patch}
    with pytest.raises((TypeError, ValueError)):
        from_columns(columns)
