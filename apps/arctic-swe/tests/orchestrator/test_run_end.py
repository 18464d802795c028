"""Tests for how the loop ends (``RUN/finished.json``): a run whose deck runs out of tasks
before ``run.updates`` stops, checkpoints its last update, records why, counts as finished for
``arctic-swe ablate``, and resumes to the same end; so does a run stopped by its stall limit
(``run.stop_after_zero_gradient``).

Real parts as in ``test_pool_eval.py``: a three-task procedural deck, a random-init tiny policy
(every group fails), namespace sandboxes, the real loop and trainer. ``deck.hard_consecutive_zero
= 1`` retires a task at its first all-zero group, so the deck is exhausted within a few updates.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.ablate._plan import VariantState, variant_state
from arctic_swe.config import (
    EndReason,
    RunConfig,
    RunDir,
    RunEnd,
    apply_overrides,
    fingerprint_inputs,
    prepare_run_dir,
    read_run_end,
    read_run_inputs,
)
from arctic_swe.metrics import MetricsLog
from arctic_swe.orchestrator import Inputs, run_training
from arctic_swe.trainer import latest_checkpoint

from .conftest import TINY_LOOP

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="the namespace sandbox needs root and unshare",
    ),
    pytest.mark.usefixtures("one_thread"),
]

EXHAUSTING = [
    *TINY_LOOP,
    "run.seed=5",
    "run.updates=20",
    "run.checkpoint_every=50",  # never due: only the end of the run can checkpoint
    "run.pool_eval_every=50",  # only the final weights are evaluated
    "run.pool_eval_samples=1",
    "deck.hard_consecutive_zero=1",
]


def _config() -> RunConfig:
    return apply_overrides(RunConfig(), EXHAUSTING)


def test_an_exhausted_deck_ends_the_run_with_a_checkpoint_and_a_record(
    inputs: Inputs, tmp_path: Path
) -> None:
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, inputs)
    steps = [r.step for r in result.records]
    last = steps[-1]
    assert steps == list(range(1, last + 1))
    assert last < config.run.updates  # stopped early, on its own
    assert result.records[-1].retired == 3  # every pool task retired (hard: all-zero groups)
    assert result.end == RunEnd(EndReason.DECK_EXHAUSTED, last, 20, 3, 3)
    assert read_run_end(run) == result.end
    assert "every pool task retired" in result.end.describe()
    # The final weights are checkpointed (checkpoint_every is never due) and were evaluated.
    assert latest_checkpoint(run.checkpoints) == run.checkpoints / f"step-{last}"
    assert result.records[-1].pool_eval_step == last
    assert variant_state(run, config) is VariantState.DONE  # ablate: finished, not interrupted

    # what it trained from is recorded, and the run left its deck as it found it (the resume
    # below would refuse a deck whose content changed)
    recorded = read_run_inputs(run)
    assert recorded == fingerprint_inputs(inputs.deck_dir, inputs.policy_dir)

    again = run_training(config, run, inputs, resume=True)
    assert [r.step for r in again.records] == steps  # nothing left to train: no new update
    assert read_run_inputs(run) == recorded
    assert again.end == result.end
    assert [r.pool_success for r in MetricsLog(run.metrics).read()] == [
        r.pool_success for r in result.records
    ]


def test_a_run_that_reaches_its_updates_records_that_end(inputs: Inputs, tmp_path: Path) -> None:
    config = apply_overrides(
        _config(), ["run.updates=1", "deck.hard_consecutive_zero=0", "run.pool_eval_every=0"]
    )
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, inputs)
    assert [r.step for r in result.records] == [1]
    assert result.end == RunEnd(EndReason.UPDATES, 1, 1, 0, 3)
    assert result.end is not None
    assert not result.end.early


def test_a_stalled_run_stops_after_its_zero_gradient_streak_and_resumes_to_the_same_end(
    inputs: Inputs, tmp_path: Path
) -> None:
    """The random-init policy fails every group, so every update has zero advantages: with no
    hard retirement the deck never runs out, and only the stall limit ends the run."""
    config = apply_overrides(
        _config(),
        ["deck.hard_consecutive_zero=0", "run.stop_after_zero_gradient=2", "run.pool_eval_every=0"],
    )
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, inputs)
    assert [r.grad_norm for r in result.records] == [0.0, 0.0]
    assert result.end == RunEnd(EndReason.STALLED, 2, 20, 0, 3)
    assert "stalled" in result.end.describe()
    assert latest_checkpoint(run.checkpoints) == run.checkpoints / "step-2"
    assert variant_state(run, config) is VariantState.DONE
    # the streak is read back from the log: the resumed run is still stalled and ends at once
    again = run_training(config, run, inputs, resume=True)
    assert [r.step for r in again.records] == [1, 2]
    assert again.end == result.end


def test_overfit_says_why_the_run_stopped(
    inputs: Inputs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    argv = ["overfit", "--run-dir", str(run_dir), "--deck", str(inputs.deck_dir),
            "--policy", str(inputs.policy_dir)]  # fmt: skip
    for assignment in EXHAUSTING:
        argv += ["--set", assignment]
    assert main(argv) == 0
    end = read_run_end(RunDir(run_dir))
    assert end is not None
    assert end.reason is EndReason.DECK_EXHAUSTED
    printed = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert f"stopped at update {end.step} of 20: every pool task retired" in printed
