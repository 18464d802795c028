"""Task files: whatever JSON arrives, the reader returns a `TaskSpec` or raises `TaskSpecError`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swe_sandbox import TaskSpec
from swe_sandbox._errors import TaskSpecError
from swe_sandbox._taskfile import FORMATS, load_task_file, task_from_json, task_to_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = [
    "instance_id",
    "repo",
    "base_commit",
    "fail_to_pass",
    "graded_files",
    "runner_files",
    "test_command",
]
spec_like = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=len(FIELDS))
repo_like = st.fixed_dictionaries(
    {"kind": st.sampled_from(["directory", "tarball", "image", "svn"]), "location": json_values},
    optional={"strip_components": json_values, "path_in_image": json_values},
)


def _outcome(value: object, fmt: str) -> str:
    """``task`` or ``error`` (a `TaskSpecError` with a message); anything else propagates."""
    try:
        task = task_from_json(value, fmt)  # type: ignore[arg-type]
    except TaskSpecError as exc:
        return "error" if str(exc) else "error without a message"
    return "task" if isinstance(task, TaskSpec) else f"returned {type(task).__name__}"


@settings(max_examples=300)
@given(data=spec_like, repo=repo_like, fmt=st.sampled_from(FORMATS))
def test_any_json_object_gives_a_task_or_a_task_spec_error(
    data: dict[str, object], repo: dict[str, object], fmt: str
) -> None:
    data = {**data, "repo": repo} if "repo" in data else data
    assert _outcome(data, fmt) in ("task", "error")


@given(json_values)
def test_any_json_value_gives_a_task_or_a_task_spec_error(value: object) -> None:
    assert _outcome(value, "spec") in ("task", "error")


def test_a_valid_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    spec = {
        "instance_id": "toy-1",
        "repo": {"kind": "tarball", "location": "a.tgz", "strip_components": 1},
        "fail_to_pass": ["tests/test_a.py::test_a"],
    }
    path.write_text(json.dumps(spec))
    task = load_task_file(path)
    assert task.repo.strip_components == 1
    assert task_from_json(task_to_json(task)) == task


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read"),
        ("", "not JSON"),
        ('{"instance_id": ', "not JSON"),
        ('"a string"', "expected a JSON object"),
        ('{"instance_id": "x"}', "missing fields ['repo']"),
        ('{"instance_id": 3, "repo": {"kind": "directory", "location": "."}}', "instance_id"),
        ('{"instance_id": "x", "repo": {"kind": "directory"}}', "repo: missing fields"),
        (
            '{"instance_id": "x", "repo": {"kind": "image", "location": "i", "strip_components": 1.5}}',
            "strip_components",
        ),
    ],
)
def test_each_defect_is_named_with_the_file(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "t.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(TaskSpecError) as raised:
        load_task_file(path)
    assert str(raised.value).startswith(str(path))
    assert message in str(raised.value)
