"""Tests for ``arctic_swe.metrics._run_verdict``: the rule a run's configuration declares, over
the planned length or the update an early stop ended at."""

from __future__ import annotations

from pathlib import Path

from arctic_swe.config import (
    EndReason,
    RunEnd,
    apply_overrides,
    prepare_run_dir,
    preset,
    write_run_end,
)
from arctic_swe.metrics import VerdictRule, read_verdict_rule, verdict_rule


def test_the_rule_is_the_config_s_verdict_section_over_the_run_s_length() -> None:
    config = apply_overrides(preset("long"), ["verdict.margin=0.05", "verdict.final_start=0.75"])
    rule = verdict_rule(config)
    assert rule == VerdictRule(updates=360, every=9, reference=(1 / 3, 2 / 3), final_start=0.75,
                               confidence=0.95, margin=0.05)  # fmt: skip
    stopped = RunEnd(EndReason.DECK_EXHAUSTED, step=110, updates=360, retired=16, pool_size=16)
    assert verdict_rule(config, stopped).updates == 110  # the declared stopping rule ended it
    finished = RunEnd(EndReason.UPDATES, step=360, updates=360, retired=3, pool_size=16)
    assert verdict_rule(config, finished).updates == 360


def test_a_run_directory_s_rule_and_one_without_a_config(tmp_path: Path) -> None:
    assert read_verdict_rule(tmp_path) is None
    run = prepare_run_dir(tmp_path / "run", preset("tiny"), resume=False)
    assert read_verdict_rule(run.root) == VerdictRule(updates=36, every=9)
    write_run_end(run, RunEnd(EndReason.STALLED, step=20, updates=36, retired=0, pool_size=16))
    rule = read_verdict_rule(run.root)
    assert rule is not None
    assert rule.updates == 20
