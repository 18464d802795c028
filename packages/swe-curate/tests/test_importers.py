"""Row importers: SWE-bench, SWE-rebench, R2E-Gym and native rows; bad rows become records."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from swe_curate._importers import (
    RowFormat,
    detect_format,
    import_rows,
    parse_row,
    task_from_native_row,
    task_to_row,
)
from swe_sandbox import RepoKind, RepoSource

PATCH = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
TEST_PATCH = "--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1 @@\n-a\n+b\n"
SWEBENCH = {
    "instance_id": "astropy__astropy-12907",
    "repo": "astropy/astropy",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": PATCH,
    "test_patch": TEST_PATCH,
    "problem_statement": "separability is wrong",
    "FAIL_TO_PASS": json.dumps(["tests/test_m.py::test_a"]),
    "PASS_TO_PASS": json.dumps(["tests/test_m.py::test_b"]),
}
REBENCH = {
    **SWEBENCH,
    "instance_id": "org__proj-1",
    "install_config": {"test_cmd": "pytest -x"},
    "docker_image": "img:1",
}
R2E = {
    "repo_name": "orderedmultidict",
    "docker_image": "namanjain12/orderedmultidict_final:abc",
    "commit_hash": "abcdef0123456789",
    "problem_statement": "bug",
    "expected_output_json": json.dumps(
        {"tests/test_x.py::test_1": "PASSED", "tests/test_x.py::test_2": "FAILED"}
    ),
}


def test_formats_are_detected_and_parsed() -> None:
    assert detect_format(SWEBENCH) is RowFormat.SWEBENCH
    assert detect_format(REBENCH) is RowFormat.SWEREBENCH
    assert detect_format(R2E) is RowFormat.R2EGYM
    swe = parse_row(0, SWEBENCH)
    assert swe.task is not None
    assert swe.task.fail_to_pass == ("tests/test_m.py::test_a",)
    assert swe.task.repo.kind is RepoKind.IMAGE
    rebench = parse_row(1, REBENCH)
    assert rebench.task is not None
    assert rebench.task.test_command == "pytest -x"
    r2e = parse_row(2, R2E)
    assert r2e.task is not None
    assert r2e.task.pass_to_pass == ("tests/test_x.py::test_1",)


def test_native_rows_round_trip(tmp_path: Path) -> None:
    task = parse_row(0, SWEBENCH, repo_for=lambda row: RepoSource.directory(tmp_path)).task
    assert task is not None
    assert task.repo == RepoSource.directory(tmp_path)
    row = json.loads(json.dumps(task_to_row(task)))
    assert detect_format(row) is RowFormat.NATIVE
    assert task_from_native_row(row) == task
    in_env = attrs.evolve(task, environment="swe-sandbox-env:geom-0123abcd")
    assert task_from_native_row(json.loads(json.dumps(task_to_row(in_env)))) == in_env


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"instance_id": "x"}, "lacks fields"),
        ({**SWEBENCH, "FAIL_TO_PASS": "[not json"}, "FAIL_TO_PASS"),
        ({**SWEBENCH, "instance_id": "bad id with spaces"}, "instance_id"),
        ({**R2E, "expected_output_json": "[1, 2]"}, "expected_output_json"),
        ({"repo": {"kind": "nonsense", "location": "x"}, "instance_id": "n"}, "native row"),
    ],
)
def test_malformed_rows_carry_their_reason(row: dict[str, object], message: str) -> None:
    imported = parse_row(7, row)
    assert imported.task is None
    assert message in imported.error


def test_files_with_garbage_lines_keep_going(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([json.dumps(SWEBENCH), "{broken", "[1]", "", json.dumps(R2E)]) + "\n")
    rows = list(import_rows(path))
    assert [r.task is not None for r in rows] == [True, False, False, True]
    assert "not JSON" in rows[1].error
    array = tmp_path / "rows.json"
    array.write_text(json.dumps([SWEBENCH, 3]))
    assert [r.task is not None for r in import_rows(array)] == [True, False]


def test_parquet_needs_pyarrow_or_reads(tmp_path: Path) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-not-found,unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from swe_curate._errors import MalformedRowError

        (tmp_path / "rows.parquet").write_bytes(b"PAR1")
        with pytest.raises(MalformedRowError, match="pyarrow"):
            list(import_rows(tmp_path / "rows.parquet"))
        return
    pq.write_table(pa.Table.from_pylist([SWEBENCH]), tmp_path / "rows.parquet")
    (row,) = import_rows(tmp_path / "rows.parquet")
    assert row.task is not None
