"""Tests for ``arctic_swe.ablate._plan``: the manifest makes a rerun continue the same ablation
and refuses anything else; each variant's state follows its run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arctic_swe.ablate import (
    MANIFEST,
    AblateError,
    AblationPlan,
    VariantState,
    open_plan,
    variant_configs,
)
from arctic_swe.config import (
    EndReason,
    RunConfig,
    RunDir,
    RunEnd,
    apply_overrides,
    write_run_end,
)

from .conftest import write_run


def _plan(out: Path, variants: tuple[str, ...] = ("full", "clip"), *sets: str) -> AblationPlan:
    base = apply_overrides(RunConfig(), ["run.updates=3", *sets])
    return AblationPlan(out, variant_configs(base, variants), out / "deck", out / "policy")


def test_a_fresh_out_gets_a_manifest_and_the_same_plan_reopens_it(tmp_path: Path) -> None:
    plan = open_plan(_plan(tmp_path / "ab"))
    manifest = json.loads((tmp_path / "ab" / MANIFEST).read_text())
    assert manifest["variants"] == ["full", "clip"]
    assert manifest["configs"]["clip"]["trainer"]["ratio_control"] == "ppo_clip"
    assert open_plan(_plan(tmp_path / "ab")) == plan  # the same command continues it


@pytest.mark.parametrize(
    ("variants", "sets", "message"),
    [
        (("full", "lenient"), (), r"other variants \(full, clip\)"),
        (("full", "clip"), ("trainer.lr=1e-3",), "other settings"),
    ],
)
def test_an_out_holding_another_ablation_is_refused(
    tmp_path: Path, variants: tuple[str, ...], sets: tuple[str, ...], message: str
) -> None:
    open_plan(_plan(tmp_path / "ab"))
    with pytest.raises(AblateError, match=message):
        open_plan(_plan(tmp_path / "ab", variants, *sets))


def test_a_used_directory_or_a_file_is_refused(tmp_path: Path) -> None:
    used = tmp_path / "used"
    write_run(used / "run", RunConfig(), [0.5])
    with pytest.raises(AblateError, match=r"not empty and holds no ablation\.json"):
        open_plan(_plan(used))
    (tmp_path / "file").write_text("x")
    with pytest.raises(AblateError, match="not a directory"):
        open_plan(_plan(tmp_path / "file"))
    with pytest.raises(AblateError, match="cannot write"):
        open_plan(_plan(Path("/proc/arctic-ablate")))


def test_variant_state_follows_the_run_directory(tmp_path: Path) -> None:
    plan = open_plan(_plan(tmp_path / "ab"))
    assert plan.state("full") is VariantState.NEW
    write_run(plan.run_dir("full").root, plan.configs["full"], [])
    assert plan.state("full") is VariantState.PARTIAL  # started, no update yet
    write_run(plan.run_dir("full").root, plan.configs["full"], [0.1, 0.2])
    assert plan.state("full") is VariantState.PARTIAL
    write_run(plan.run_dir("full").root, plan.configs["full"], [0.3])
    assert plan.state("full") is VariantState.DONE
    assert plan.state("clip") is VariantState.NEW


def test_a_run_that_recorded_its_early_end_is_done(tmp_path: Path) -> None:
    """A variant that stopped on its own (every pool task retired) is finished, not resumed on
    every ``ablate``; a record that is not about the last metrics line does not count."""
    plan = open_plan(_plan(tmp_path / "ab"))
    run = plan.run_dir("full")
    write_run(run.root, plan.configs["full"], [0.1, 0.2])  # 2 of the plan's 3 updates
    updates = plan.configs["full"].run.updates
    write_run_end(run, RunEnd(EndReason.DECK_EXHAUSTED, 1, updates, 3, 3))  # stale: update 1
    assert plan.state("full") is VariantState.PARTIAL
    write_run_end(run, RunEnd(EndReason.DECK_EXHAUSTED, 2, updates, 3, 3))
    assert plan.state("full") is VariantState.DONE
    (run.root / "finished.json").write_text("{}")
    with pytest.raises(AblateError, match="not a run end record"):
        plan.state("full")


def test_a_run_directory_with_a_foreign_config_is_refused(tmp_path: Path) -> None:
    plan = open_plan(_plan(tmp_path / "ab"))
    write_run(plan.run_dir("clip").root, plan.configs["full"], [0.1])
    with pytest.raises(AblateError, match="not the config this ablation gives clip"):
        plan.state("clip")
    assert isinstance(plan.run_dir("clip"), RunDir)
