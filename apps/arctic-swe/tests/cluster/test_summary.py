"""Tests for ``arctic_swe.cluster._summary``: the table ``cluster up`` ends with, read from a
run directory written by the app's own metrics log and plot writer (no cluster is started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from arctic_swe._wilson import wilson_interval
from arctic_swe.cli._cluster import _print_summary
from arctic_swe.cluster import UpOutcome, cluster_summary, cluster_summary_table
from arctic_swe.config import RunDir, apply_overrides, prepare_run_dir, preset
from arctic_swe.metrics import EvalRecord, EvaluationLog, MetricsLog, UpdateMetrics, plot_run

ROLLOUTS = 32


def _record(step: int, solved: int | None) -> UpdateMetrics:
    """One update; ``solved`` of 32 pool rollouts when the update was evaluated."""
    fields: dict[str, object] = dict.fromkeys(UpdateMetrics.__dataclass_fields__, 0)
    fields.update(
        step=step, version=step, reward=0.5, adjusted_reward=0.5, replay_reward=-1.0,
        terminations={}, per_task_reward={}, wall_seconds=12.0,
    )  # fmt: skip
    if solved is not None:
        low, high = wilson_interval(solved, ROLLOUTS)
        fields.update(pool_success=solved / ROLLOUTS, pool_success_low=low, pool_success_high=high,
                      pool_eval_step=step, pool_eval_solved=solved, pool_eval_rollouts=ROLLOUTS)  # fmt: skip
    return UpdateMetrics(**fields)  # type: ignore[arg-type]


def _write_run(root: Path, solved: list[int | None], *, plots: bool) -> Path:
    log = MetricsLog(root / "metrics.jsonl")
    records = [_record(step, s) for step, s in enumerate(solved, 1)]
    for record in records:
        log.append(record)
    if plots:
        plot_run(records, root / "plots")
    return root


def _evaluation(step: int, solved: int) -> EvalRecord:
    """16 tasks x 2 samples, the first ``solved`` rollouts solved."""
    flat = "1" * solved + "0" * (ROLLOUTS - solved)
    return EvalRecord("pool", step, step, "pool", 0,
                      {f"task-{k}": flat[2 * k : 2 * k + 2] for k in range(16)})  # fmt: skip


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three of five updates done, pool evaluated at updates 1 and 3 (16 then 24 of 32)."""
    return _write_run(tmp_path_factory.mktemp("run"), [16, None, 24], plots=True)


def test_the_verdict_follows_the_run_s_declared_rule(tmp_path: Path) -> None:
    """Updates 0 (8 of 32 solved), 3 (24) and 6 (24) of a 6-update run evaluated every 3:
    the config's rule judges it, over its evaluations."""
    config = apply_overrides(preset("tiny"), ["run.updates=6", "run.pool_eval_every=3"])
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    log = EvaluationLog(RunDir(run.root).evaluations)
    for step, solved in ((0, 8), (3, 24), (6, 24)):
        log.append(_evaluation(step, solved))
    _write_run(run.root, [None] * 6, plots=False)
    summary = cluster_summary(run.root, outcome="done", wall_seconds=1.0, planned=6)
    assert summary.verdict.rule.every == 3
    assert summary.verdict.label == "climbed and held"  # reference (2, 4]: update 3, 24 of 32
    text = _text(run.root, outcome="done", wall_seconds=1.0, planned=6)
    assert "pool success, final window │ 24 / 32 (update 6)" in text
    assert "pool success, update 0 → final │ 0.250 → 0.750: +0.500 [" in text


def _text(summary_root: Path, **kwargs: object) -> str:
    summary = cluster_summary(summary_root, **kwargs)  # type: ignore[arg-type]
    console = Console(width=400, record=True)
    console.print(cluster_summary_table(summary))
    return " ".join(console.export_text().split())


def test_the_summary_reads_the_run_directory(evaluated_run: Path) -> None:
    summary = cluster_summary(evaluated_run, outcome="done", wall_seconds=3725.4, planned=5)
    assert summary.updates == 3
    assert summary.verdict.label == "not measured"  # no evaluations.jsonl in this run
    assert [p.name for p in summary.plots] == ["curves.png", "numerics.png", "reward.png"]


def test_the_table_names_wall_time_updates_pool_and_paths(evaluated_run: Path) -> None:
    text = _text(evaluated_run, outcome="done: the loop finished", wall_seconds=3725.4, planned=5)
    assert "result │ done: the loop finished" in text
    assert "wall time │ 1 h 02 min 05 s" in text
    assert "updates completed │ 3 of 5" in text
    assert "verdict (declared before the run) │ not measured (no pool evaluation" in text
    assert f"metrics │ {evaluated_run / 'metrics.jsonl'}" in text
    for name in ("curves.png", "numerics.png", "reward.png"):
        assert str(evaluated_run / "plots" / name) in text
    assert f"logs │ {evaluated_run / 'logs'}" in text


def test_a_run_without_evaluations_or_plots_says_so(tmp_path: Path) -> None:
    _write_run(tmp_path, [None, None], plots=False)
    text = _text(tmp_path, outcome="done", wall_seconds=42.0, planned=2)
    assert "wall time │ 42 s" in text
    assert "updates completed │ 2 of 2" in text
    assert "pool success, final window │ not measured" in text
    assert "plots │ none written" in text


def test_a_run_that_failed_before_any_update(tmp_path: Path) -> None:
    text = _text(tmp_path, outcome="failed: engine", wall_seconds=75.0, planned=10)
    assert "result │ failed: engine" in text
    assert "wall time │ 1 min 15 s" in text
    assert "updates completed │ 0 of 10" in text
    assert "metrics │ none written" in text


def test_an_unreadable_metrics_log_still_gives_a_table(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text("garbage\n")
    text = _text(tmp_path, outcome="done", wall_seconds=1.0, planned=1)
    assert "updates completed │ 0 of 1" in text
    assert "(unreadable: " in text


def test_cluster_up_prints_the_table_on_stdout(
    evaluated_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # a long temporary path stays on one line
    _print_summary(evaluated_run, UpOutcome(1, "trainer exited with code 1", "trainer"), 9.0, 5)
    out, err = capsys.readouterr()
    assert err == ""
    text = " ".join(out.split())
    assert "arctic-swe cluster up" in text
    assert "result │ failed: trainer" in text
    assert "updates completed │ 3 of 5" in text
