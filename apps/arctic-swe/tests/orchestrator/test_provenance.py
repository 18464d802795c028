"""Tests for ``arctic_swe.orchestrator._provenance``: a new run records its inputs; a resumed
run is refused on a deck with other content and only told about a changed warm start."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from rich.console import Console

from arctic_swe.config import RunConfig, RunDir, apply_overrides, read_run_inputs
from arctic_swe.orchestrator import Inputs, InputsChangedError, SetupError, record_inputs


def _inputs(root: Path) -> Inputs:
    (root / "deck").mkdir(parents=True)
    (root / "deck" / "deck.json").write_text('{"tasks": 3}')
    (root / "policy").mkdir()
    (root / "policy" / "model.safetensors").write_bytes(b"weights")
    return Inputs(root / "deck", root / "policy")


def _console() -> Console:
    return Console(record=True, width=300)


def test_a_new_run_records_its_inputs_and_a_resume_keeps_them(tmp_path: Path) -> None:
    inputs, run = _inputs(tmp_path), RunDir(tmp_path / "run")
    run.root.mkdir()
    console = _console()
    first = record_inputs(run, RunConfig(), inputs, resume=False, console=console)
    assert read_run_inputs(run) == first
    assert first.short() in console.export_text()
    assert record_inputs(run, RunConfig(), inputs, resume=True, console=_console()) == first


def test_a_resume_on_another_deck_is_refused(tmp_path: Path) -> None:
    inputs, run = _inputs(tmp_path), RunDir(tmp_path / "run")
    run.root.mkdir()
    first = record_inputs(run, RunConfig(), inputs, resume=False, console=_console())
    (inputs.deck_dir / "deck.json").write_text('{"tasks": 4}')  # rebuilt with other content
    with pytest.raises(InputsChangedError, match="resume it with the deck it started from"):
        record_inputs(run, RunConfig(), inputs, resume=True, console=_console())
    assert issubclass(InputsChangedError, SetupError)  # the CLI's one-line error
    assert read_run_inputs(run) == first  # the record is not overwritten


def test_a_resume_with_another_warm_start_is_reported_and_keeps_the_record(
    tmp_path: Path,
) -> None:
    inputs, run = _inputs(tmp_path), RunDir(tmp_path / "run")
    run.root.mkdir()
    first = record_inputs(run, RunConfig(), inputs, resume=False, console=_console())
    (inputs.policy_dir / "model.safetensors").write_bytes(b"other weights")
    console = _console()
    assert record_inputs(run, RunConfig(), inputs, resume=True, console=console) == first
    assert "not the warm start this run started from" in console.export_text()
    assert read_run_inputs(run) == first


def test_a_resumed_run_without_a_record_gets_one(tmp_path: Path) -> None:
    inputs, run = _inputs(tmp_path), RunDir(tmp_path / "run")
    run.root.mkdir()
    made = record_inputs(run, RunConfig(), inputs, resume=True, console=_console())
    assert read_run_inputs(run) == made


def test_a_pool_from_a_file_of_task_rows_is_fingerprinted_by_that_file(tmp_path: Path) -> None:
    """``deck.source`` names the pool; the deck directory then need not exist."""
    inputs, run = _inputs(tmp_path), RunDir(tmp_path / "run")
    run.root.mkdir()
    rows = tmp_path / "tasks.jsonl"
    rows.write_text('{"instance_id": "a"}\n')
    config = apply_overrides(RunConfig(), [f"deck.source={rows}"])
    missing = Inputs(tmp_path / "no-deck", inputs.policy_dir)
    first = record_inputs(run, config, missing, resume=False, console=_console())
    assert first.deck == str(rows)
    assert first.deck_sha256 == hashlib.sha256(rows.read_bytes()).hexdigest()
    rows.write_text('{"instance_id": "b"}\n')
    with pytest.raises(InputsChangedError, match=r"tasks\.jsonl holds other content"):
        record_inputs(run, config, missing, resume=True, console=_console())
