"""``swe-curate run``: every stage for a batch on the sandbox pool, kept and dropped rows, typed
input-error verdicts, resumption, ``--force``, and the per-stage rates the benchmark reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from curate_cases import make_task

from swe_curate._cli import main
from swe_curate._importers import task_from_native_row, task_to_row
from swe_curate._records import RecordStore
from swe_curate._run import PipelineConfig, stage_rates
from swe_curate._verdicts import Verdict


def _rows(tmp_path: Path) -> Path:
    good = task_to_row(make_task(tmp_path, "good_literal"))
    loose = task_to_row(make_task(tmp_path, "edge_unchecked"))
    no_repo = {**good, "instance_id": "no-repo"}
    no_repo["repo"] = {**good["repo"], "location": str(tmp_path / "nowhere")}
    no_tool = {**good, "instance_id": "no-tool", "test_command": "tox -q"}
    lines = [json.dumps(r) for r in (good, loose, no_repo, no_tool)]
    lines += ["{oops", json.dumps({"instance_id": "no-fields"})]
    lines.append(json.dumps(_swerebench_blank_command(good)))
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _swerebench_blank_command(native: dict[str, object]) -> dict[str, object]:
    """A SWE-rebench row whose ``install_config.test_cmd`` is blank."""
    return {
        "instance_id": "swebench-blank",
        "repo": "demo/durations",
        "base_commit": "0" * 40,
        "patch": native["gold_patch"],
        "test_patch": native["test_patch"],
        "problem_statement": "p",
        "FAIL_TO_PASS": '["tests/test_hours.py::test_hours"]',
        "PASS_TO_PASS": "[]",
        "install_config": {"test_cmd": "   "},
    }


def test_run_keeps_drops_resumes_and_forces(
    tmp_path: Path, namespace_backend: object, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, out = _rows(tmp_path), tmp_path / "out"
    argv = ["run", str(rows), "--out", str(out), "--workers", "2", "--reruns", "1"]
    assert main([*argv, "--no-binding"]) == 0
    first = capsys.readouterr().out
    assert "0 task(s) already finished, 7 to go" in first
    finals = RecordStore(out / "records.jsonl").latest("run")
    verdicts = {iid: rec.verdict.value for iid, rec in finals.items()}
    assert verdicts == {
        "durations-good-literal": "accepted",
        "durations-edge-unchecked": "strengthened",
        "no-repo": "missing_repo",
        "no-tool": "missing_test_command",
        "row-4": "malformed_row",
        "no-fields": "malformed_row",
        "swebench-blank": "missing_test_command",
    }
    kept = [json.loads(line) for line in (out / "kept.jsonl").read_text().splitlines()]
    assert [row["instance_id"] for row in kept] == [
        "durations-good-literal",
        "durations-edge-unchecked",
    ]
    repaired = task_from_native_row(kept[1])
    assert any("test_swe_curate_strengthened.py" in t for t in repaired.fail_to_pass)
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert {d["instance_id"]: d["stage"] for d in dropped}["no-repo"] == "audit"
    skipped = RecordStore(out / "records.jsonl").latest("strengthen")["durations-good-literal"]
    assert skipped.verdict is Verdict.SKIPPED
    assert "accepted" in skipped.reason

    size = len(RecordStore(out / "records.jsonl").records())
    assert main([*argv, "--no-binding"]) == 0  # resumed: nothing left to do
    assert "7 task(s) already finished, 0 to go" in capsys.readouterr().out
    assert len(RecordStore(out / "records.jsonl").records()) == size

    assert main([*argv, "--no-binding", "--force", "no-repo", "row-4"]) == 0
    assert "5 task(s) already finished, 2 to go" in capsys.readouterr().out
    records = RecordStore(out / "records.jsonl").records("run")
    assert [r.instance_id for r in records].count("no-repo") == 2
    assert len((out / "kept.jsonl").read_text().splitlines()) == 2

    rates = stage_rates(RecordStore(out / "records.jsonl"))
    assert rates["judge"]["tasks"] == 2
    assert rates["strengthen"]["tasks"] == 1
    assert rates["judge"]["tasks_per_hour"] > 0


def test_run_config_rejects_zero_workers() -> None:
    with pytest.raises(ValueError, match="workers"):
        PipelineConfig(workers=0)
