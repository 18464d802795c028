"""``arctic-swe deck import``: SWE-bench rows on local checkouts become a deck the loop reads;
each bad row (no base commit, no checkout, not JSON) is its own verdict, the rest unaffected;
``deck.source`` and ``sandbox.backend`` are validated config fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.config import RunConfigError, apply_overrides, from_mapping
from arctic_swe.deck import (
    IMPORT_FILE,
    TASKS_FILE,
    ImportOptions,
    StoredDeckError,
    import_deck,
    load_deck,
    load_task_rows,
)
from arctic_swe.orchestrator import SetupError
from arctic_swe.orchestrator._setup import pool_tasks
from swe_sandbox import NamespaceBackend, RepoKind


def _write_rows(path: Path, rows: list[dict[str, object]], garbage: bool = False) -> Path:
    lines = [json.dumps(row) for row in rows]
    if garbage:
        lines.insert(2, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_audits_each_row_and_keeps_the_batch_going(
    swebench_checkouts: tuple[Path, list[dict[str, object]]],
    backend: NamespaceBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    checkouts, rows = swebench_checkouts
    no_commit = {**rows[0], "instance_id": "arctic__gone-1", "base_commit": "ab" * 20}
    no_repo = {**rows[0], "instance_id": "arctic__elsewhere-1", "repo": "arctic/elsewhere"}
    source = _write_rows(tmp_path / "rows.jsonl", [rows[0], no_commit, rows[1], no_repo], True)
    out = tmp_path / "deck"
    argv = ["deck", "import", str(source), "--out", str(out), "--repo-dir", str(checkouts)]
    assert main([*argv, "--validate", "audit", "--reruns", "1"]) == 1  # not every row passed
    printed = capsys.readouterr().out
    assert "2 of 5 row(s) admitted" in printed
    records = {
        r["instance_id"]: r for r in map(json.loads, (out / IMPORT_FILE).read_text().splitlines())
    }
    verdicts = {name: r["verdict"] for name, r in records.items()}
    ids = [str(row["instance_id"]) for row in rows]
    assert verdicts == {
        ids[0]: "admitted",
        ids[1]: "admitted",
        "arctic__gone-1": "missing_base_commit",
        "arctic__elsewhere-1": "missing_repo",
        "row-2": "malformed_row",
    }
    assert "base commit abab" in records["arctic__gone-1"]["reason"]
    assert records[ids[0]]["reason"].startswith("Pipeline 1:")

    pool = load_deck(out).split("pool")
    assert [task.instance_id for task in pool] == ids
    spec = pool[0].spec
    assert spec.repo.kind is RepoKind.DIRECTORY
    assert spec.repo.location == str((checkouts / ids[0]).resolve())
    assert spec.base_commit == rows[0]["base_commit"]
    assert spec.fail_to_pass == tuple(json.loads(str(rows[0]["FAIL_TO_PASS"])))
    # The same tasks, read back as deck.source rows.
    assert load_task_rows(out / TASKS_FILE) == {task.instance_id: task.spec for task in pool}


def test_a_batch_with_no_good_row_writes_only_the_records(tmp_path: Path) -> None:
    source = _write_rows(tmp_path / "rows.jsonl", [{"instance_id": "x-1", "patch": ""}])
    with pytest.raises(StoredDeckError, match="no row became a task"):
        import_deck(source, tmp_path / "deck", ImportOptions(validate="none"))
    (record,) = map(json.loads, (tmp_path / "deck" / IMPORT_FILE).read_text().splitlines())
    assert record["verdict"] == "malformed_row"
    assert not (tmp_path / "deck" / "deck.json").exists()


def test_deck_source_picks_the_pool_and_bad_sources_are_one_line_errors(
    swebench_checkouts: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    checkouts, rows = swebench_checkouts
    out = tmp_path / "deck"
    import_deck(
        _write_rows(tmp_path / "rows.jsonl", rows),
        out,
        ImportOptions(repo_dir=checkouts, validate="prepare"),
    )
    config = apply_overrides(
        from_mapping({"deck": {"source": str(out / TASKS_FILE), "pool_size": 2}}),
        ["sandbox.backend=docker", "deck.groups_per_update=1"],
    )
    assert config.sandbox.backend == "docker"
    assert list(pool_tasks(config, tmp_path / "unused")) == [row["instance_id"] for row in rows]
    too_many = apply_overrides(config, ["deck.pool_size=3"])
    with pytest.raises(SetupError, match=r"has 2 pool tasks, the config needs 3"):
        pool_tasks(too_many, tmp_path / "unused")
    missing = apply_overrides(config, [f"deck.source={tmp_path / 'none.jsonl'}"])
    with pytest.raises(StoredDeckError, match="no such file"):
        pool_tasks(missing, tmp_path / "unused")
    bad = _write_rows(tmp_path / "bad.jsonl", [rows[0], {"instance_id": "broken"}])
    with pytest.raises(StoredDeckError, match=r"row 2 \(broken\) is not a task"):
        pool_tasks(apply_overrides(config, [f"deck.source={bad}"]), tmp_path / "unused")


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("sandbox.backend=podman", "sandbox.backend: must be one of ('namespace', 'docker')"),
        ("deck.source=rows.csv", 'deck.source: must be "procedural" or the path of a .jsonl'),
    ],
)
def test_sandbox_and_source_fields_are_validated(assignment: str, message: str) -> None:
    with pytest.raises(RunConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        apply_overrides(from_mapping({}), [assignment])


def _imported(rows: list[dict[str, object]], checkouts: Path, tmp_path: Path) -> Path:
    out = tmp_path / "deck"
    options = ImportOptions(repo_dir=checkouts, validate="prepare")
    import_deck(_write_rows(tmp_path / "rows.jsonl", rows), out, options)
    return out


def test_rollout_and_overfit_run_on_an_imported_deck(
    swebench_checkouts: tuple[Path, list[dict[str, object]]],
    backend: NamespaceBackend,
    random_policy: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    checkouts, rows = swebench_checkouts
    deck = _imported(rows, checkouts, tmp_path)
    common = ["--deck", str(deck), "--policy", str(random_policy), "--backend", "namespace"]
    argv = ["rollout", *common, "--tasks", "2", "--workers", "2", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rollouts"] == 2

    settings = [
        "run.updates=1",
        "deck.pool_size=2",
        "deck.groups_per_update=1",
        "deck.rollouts_per_group=2",
        "harness.max_turns=2",
        "metrics.plots=false",
        "metrics.live=false",
        f"deck.source={deck / TASKS_FILE}",
    ]
    run_dir = tmp_path / "run"
    argv = ["overfit", "--run-dir", str(run_dir), "--deck", str(tmp_path / "no-deck")]
    argv += ["--policy", str(random_policy)]
    assert main([*argv, *(f"--set={s}" for s in settings)]) == 0
    (record,) = map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
    assert record["step"] == 1
    assert not (tmp_path / "no-deck").exists()  # the pool came from deck.source


def test_a_missing_rows_file_is_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["deck", "import", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "d")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"arctic-swe: error: ROWS {tmp_path / 'nope.jsonl'}: no such file"]
    assert not (tmp_path / "d").exists()
