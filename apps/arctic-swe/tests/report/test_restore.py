"""Restoring collected runs as run directories: what comes back reads as what was collected,
and a run this ablation would not have run the same way (config, inputs, unfinished) is refused
with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe.ablate import VariantState, variant_configs, variant_state
from arctic_swe.config import EndReason, RunConfig, RunDir, RunInputs, apply_overrides
from arctic_swe.metrics import EVALUATIONS, EvaluationLog, MetricsLog
from arctic_swe.report import DATA, ReportError, collect, collected_labels, restore_runs

from .conftest import write_run

SAME = RunInputs("deck", "a" * 64, "policy", "b" * 64)  # the digests write_run records
CONFIGS = variant_configs(apply_overrides(RunConfig(), ["run.updates=6"]), ("full", "clip"))


def _results(tmp_path: Path, clip_updates: int = 6) -> Path:
    """A results folder that collected ``full`` and ``clip`` (as run directories)."""
    inputs = (tmp_path / "deck", tmp_path / "policy")
    runs = tmp_path / "runs"
    write_run(runs / "full", [0.2, 0.4, 0.6, 0.6, 0.7, 0.7], [2, 4, 6, 6],
              config=CONFIGS["full"], end=EndReason.UPDATES, inputs=inputs)  # fmt: skip
    write_run(runs / "clip", [0.2, 0.3, 0.2, 0.1, 0.1, 0.1][:clip_updates], [2, 3, 1, 1],
              config=CONFIGS["clip"], inputs=inputs)  # fmt: skip
    collect([runs / "full", runs / "clip"], tmp_path / "res", labels=["full", "clip"])
    return tmp_path / "res"


def test_restored_runs_read_back_as_collected_and_count_as_finished(tmp_path: Path) -> None:
    results = _results(tmp_path)
    out = tmp_path / "ab"
    assert restore_runs(results, out, CONFIGS, SAME) == ["full", "clip"]
    for label in ("full", "clip"):
        original, restored = tmp_path / "runs" / label, out / label
        assert MetricsLog(restored / "metrics.jsonl").read() == (
            MetricsLog(original / "metrics.jsonl").read()
        )
        assert EvaluationLog(restored / EVALUATIONS).read() == (
            EvaluationLog(original / EVALUATIONS).read()
        )
        assert variant_state(RunDir(restored), CONFIGS[label]) is VariantState.DONE
        assert not (restored / "checkpoints").exists()  # never collected, never restored
    assert sorted(p.name for p in out.iterdir()) == ["clip", "full"]
    assert not list(tmp_path.glob(".restore-*"))  # each run unpacked once, no scratch left


def test_a_run_already_there_or_not_collected_is_left_alone(tmp_path: Path) -> None:
    results = _results(tmp_path)
    out = tmp_path / "ab"
    (out / "full").mkdir(parents=True)
    configs = {**CONFIGS, "no-eviction": CONFIGS["full"]}  # a label nothing collected
    assert restore_runs(results, out, configs, SAME) == ["clip"]
    assert list((out / "full").iterdir()) == []
    assert not (out / "no-eviction").exists()
    assert collected_labels(results) == ["full", "clip"]


@pytest.mark.parametrize(
    ("inputs", "configs", "message"),
    [
        (RunInputs("deck", "c" * 64, "policy", "b" * 64), CONFIGS, "this ablation trains from"),
        (SAME, {**CONFIGS, "clip": CONFIGS["full"]}, "has another config"),
    ],
)
def test_a_run_of_other_inputs_or_config_is_refused_with_nothing_written(
    tmp_path: Path, inputs: RunInputs, configs: dict[str, RunConfig], message: str
) -> None:
    results = _results(tmp_path)
    with pytest.raises(ReportError, match=message):
        restore_runs(results, tmp_path / "ab", configs, inputs)
    assert not (tmp_path / "ab").exists()
    assert not list(tmp_path.glob(".restore-*"))


def test_an_unfinished_run_is_refused_it_could_not_resume(tmp_path: Path) -> None:
    results = _results(tmp_path, clip_updates=4)  # clip stopped at 4 of 6 updates
    with pytest.raises(ReportError, match=r"clip .* did not finish"):
        restore_runs(results, tmp_path / "ab", CONFIGS, SAME)
    assert not (tmp_path / "ab").exists()


def test_a_corrupt_collected_log_is_a_report_error(tmp_path: Path) -> None:
    results = _results(tmp_path)
    (results / DATA / "clip" / "metrics.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(ReportError, match="collected run clip"):
        restore_runs(results, tmp_path / "ab", CONFIGS, SAME)
    assert not (tmp_path / "ab").exists()


def test_the_committed_acceptance_runs_restore_under_the_plan_ablate_makes_today(
    tmp_path: Path,
) -> None:
    """Against real loop output: the acceptance measurement's collected runs of seeds 1-3 come
    back under the configs `arctic-swe ablate` gives those labels now, and seed 0's runs,
    started from another warm start, are refused."""
    from arctic_swe.ablate import parse_variant_seeds, seeded_configs
    from arctic_swe.config import preset, read_run_inputs

    results = Path(__file__).resolve().parents[2] / "results" / "acceptance"
    variants = ("full", "ungated", "no-eviction", "bf16-state")
    own = parse_variant_seeds(["ungated=1", "bf16-state=1,2"], variants, (1, 2, 3))
    configs = seeded_configs(variant_configs(preset("tiny"), variants), (1, 2, 3), own)
    inputs = read_run_inputs(RunDir(results / DATA / "full" / "seed-1"))
    assert inputs is not None
    restored = restore_runs(results, tmp_path / "ab", configs, inputs)
    assert restored == list(configs)  # all 9 runs of seeds 1-3
    for label in restored:
        assert variant_state(RunDir(tmp_path / "ab" / label), configs[label]) is VariantState.DONE
    seed_0 = seeded_configs(variant_configs(preset("tiny"), variants), (0,))
    with pytest.raises(ReportError, match="this ablation trains from"):
        restore_runs(results, tmp_path / "ab0", seed_0, inputs)
