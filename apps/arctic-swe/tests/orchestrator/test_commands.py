"""Tests for ``arctic-swe overfit`` / ``compare`` argument handling and bad input (no model runs:
every case here must fail or finish before any work starts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe._wilson import wilson_interval
from arctic_swe.ablate import ABLATION_FLAGS
from arctic_swe.cli._overfit import ablation_overrides, resolve_config
from arctic_swe.metrics import EvalRecord, EvaluationLog, MetricsLog, UpdateMetrics


def _parse(*argv: str):  # type: ignore[no-untyped-def]
    from arctic_swe._cli import build_parser

    return build_parser().parse_args(["overfit", *argv])


def test_every_ablation_flag_maps_to_one_config_change() -> None:
    for flag, variant in ABLATION_FLAGS.items():
        args = _parse(flag)
        assert ablation_overrides(args) == [variant.setting]
    config = resolve_config(
        _parse("--session-hash", "--clip", "--set", "trainer.lr=1e-3", "--set", "engine.engines=2")
    )
    assert config.engine.routing == "session_hash"
    assert config.trainer.ratio_control == "ppo_clip"
    assert config.trainer.lr == 1e-3


def test_harness_and_engine_ablations_reach_the_parts_that_run_them() -> None:
    from arctic_swe.harness import harness_config

    ablated = resolve_config(_parse("--no-gated-reward", "--lenient-format", "--no-fp32-numerics"))
    harness = harness_config(ablated)
    assert (harness.gated_reward, harness.strict_format) == (False, False)
    assert not ablated.trainer.fp32_numerics
    recipe = harness_config(resolve_config(_parse()))
    assert (recipe.gated_reward, recipe.strict_format) == (True, True)
    assert recipe.mask_durations  # the embedded run: one seed, one run
    assert not harness_config(resolve_config(_parse("--preset", "paper"))).mask_durations
    verbatim = resolve_config(_parse("--set", "harness.mask_durations=false"))
    assert not harness_config(verbatim).mask_durations


def test_set_wins_over_flags_and_presets() -> None:
    config = resolve_config(_parse("--preset", "paper", "--set", "deck.pool_size=40"))
    assert config.deck.pool_size == 40
    assert config.deck.groups_per_update == 32


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "trainer.nope=1"], "trainer.nope: unknown key"),
        (["--set", "run.updates=ten"], "run.updates: must be int"),
        (["--set", "deck.groups_per_update=99"], "cannot be drawn from 16 tasks"),
        (["--preset", "galactic"], "unknown preset"),
        (["--set", "harness.gated_reward=1"], "harness.gated_reward"),
        (["--resume"], "nothing to resume"),
    ],
)
def test_bad_input_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    run_dir, deck = tmp_path / "run", tmp_path / "deck"
    code = main(["overfit", "--run-dir", str(run_dir), "--deck", str(deck), *argv])
    assert code == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not deck.exists()  # nothing was built
    assert not (run_dir / "metrics.jsonl").exists()


def test_unwritable_run_dir_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["overfit", "--run-dir", "/proc/arctic-run", "--deck", str(tmp_path / "d")])
    assert code == 2
    assert "run directory" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_missing_policy_checkpoint_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deck = tmp_path / "deck"
    deck.mkdir()
    (deck / "deck.json").write_text("{}")  # reused as is: the loader must reject it
    (deck / "tokenizer").mkdir()
    (deck / "tokenizer" / "tokenizer.json").write_text("{}")
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "config.json").write_text("{}")
    code = main(
        ["overfit", "--run-dir", str(tmp_path / "r"), "--deck", str(deck), "--policy", str(policy)]
    )
    assert code == 2
    assert "error:" in capsys.readouterr().err


def _write_run(root: Path, rewards: list[float], *, measured: bool = True) -> None:
    """A run whose eviction-adjusted and batch rewards, and (``measured``) measured pool
    success on every update (16 tasks x 2 samples, the first rollouts solved; update 0 at the
    first reward), all follow ``rewards``."""
    root.mkdir()
    if measured:
        evaluations = EvaluationLog(root / "evaluations.jsonl")
        for step, reward in enumerate([rewards[0], *rewards]):
            flat = "1" * round(32 * reward) + "0" * (32 - round(32 * reward))
            cells = {f"task-{k:02d}": flat[2 * k : 2 * k + 2] for k in range(16)}
            evaluations.append(EvalRecord("pool", step, step, "pool", 0, cells))
    log = MetricsLog(root / "metrics.jsonl")
    for step, reward in enumerate(rewards, 1):
        fields = dict.fromkeys(UpdateMetrics.__dataclass_fields__, 0)
        fields.update(
            step=step,
            reward=reward,
            adjusted_reward=reward,
            replay_reward=-1.0,
            terminations={},
            per_task_reward={},
        )
        if measured:  # every update evaluated: 32 rollouts, solved share = reward
            solved = round(32 * reward)
            low, high = wilson_interval(solved, 32)
            fields.update(pool_success=solved / 32, pool_success_low=low, pool_success_high=high,
                          pool_eval_step=step, pool_eval_solved=solved, pool_eval_rollouts=32)  # fmt: skip
        log.append(UpdateMetrics(**fields))


def test_compare_plots_runs_and_prints_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_run(tmp_path / "full", [0.2, 0.5, 0.8, 0.9, 0.9])
    _write_run(tmp_path / "broken", [0.2, 0.6, 0.7, 0.3, 0.1])
    _write_run(tmp_path / "old", [0.2, 0.6, 0.7, 0.3, 0.1], measured=False)
    out = tmp_path / "cmp"
    runs = [str(tmp_path / name) for name in ("full", "broken", "old")]
    code = main(["compare", *runs, "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "full" in text
    assert "broken" in text
    assert "climbed" in text  # full: update 0 → final, paired per task
    assert "fell" in text  # broken: the final window below the reference window
    assert "not measured" in text  # a log from before the measured pool success still loads
    assert (out / "compare_reward.png").stat().st_size > 0


def test_compare_prints_training_health_and_blocks_of_updates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per table row: no cell wraps
    _write_run(tmp_path / "full", [0.2, 0.5, 0.8, 0.9, 0.9])  # grad_norm 0 on every update
    code = main(["compare", str(tmp_path / "full"), "--out", str(tmp_path / "cmp"),
                 "--windows", "2"])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "training health" in text
    assert "5 (from update 1)" in text  # the longest zero-gradient streak
    assert "full: blocks of 2" in text
    for block in ("1-2", "3-4", "5-5"):
        assert block in text
    # the final window (the last third of 5 updates): updates 4 and 5, 29 + 29 solved of 2 x 32
    assert "58 / 64 (updates 4-5, 2 evaluations)" in text


def test_compare_says_whether_the_runs_share_their_inputs(tmp_path: Path) -> None:
    from arctic_swe.cli._compare import inputs_line
    from arctic_swe.config import RunDir, RunInputs, write_run_inputs

    runs = [tmp_path / name for name in ("full", "clip", "old")]
    for run in runs:
        run.mkdir()
    same = RunInputs("runs/deck", "a" * 64, "runs/warmstart", "b" * 64)
    for run in runs[:2]:
        write_run_inputs(RunDir(run), same)
    assert inputs_line(runs[:2]) == (
        f"inputs: every run started from the same content ({same.short()})"
    )
    assert (
        inputs_line(runs) == f"inputs: not recorded for {runs[2]} (runs started before inputs.json)"
    )
    # the same paths with other content on another machine: the digests tell them apart
    write_run_inputs(RunDir(runs[1]), RunInputs("runs/deck", "a" * 64, "runs/warmstart", "c" * 64))
    line = inputs_line(runs[:2])
    assert line.startswith("inputs DIFFER: ")
    assert f"{runs[1]}: deck {'a' * 12}, warm start {'c' * 12}" in line


def test_compare_refuses_a_directory_without_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(tmp_path)]) == 2
    assert "no metrics.jsonl" in " ".join(capsys.readouterr().err.split())
