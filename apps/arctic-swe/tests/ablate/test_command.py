"""``arctic-swe ablate`` end to end: bad input fails before any work, finished variants are
only compared, and a real tiny ablation (two variants, the real loop) leaves two run
directories, the manifest, the table and the plots, then skips both when run again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.ablate import MANIFEST
from arctic_swe.config import RunConfig, RunDir, apply_overrides
from arctic_swe.metrics import EVALUATIONS, EvaluationLog

from ..metrics.conftest import evaluation
from .conftest import write_run


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "ablate",
        "--out",
        str(tmp_path / "ab"),
        "--deck",
        str(tmp_path / "deck"),
        "--policy",
        str(tmp_path / "policy"),
        *extra,
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--variants", "full,nope"], "unknown variant 'nope'"),
        (["--variants", "clip,clip"], "'clip' is given twice"),
        (["--set", "trainer.nope=1"], "trainer.nope: unknown key"),
        (["--preset", "galactic"], "unknown preset"),
        (
            ["--variants", "full,session-hash", "--set", "engine.engines=1"],
            "session_hash routing",
        ),
        (["--variants", "full,clip", "--set", "trainer.ratio_control=ppo_clip"], "same config"),
    ],
)
def test_bad_input_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(_argv(tmp_path, *extra)) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "ab").exists()
    assert not (tmp_path / "deck").exists()


def test_a_used_out_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path / "ab" / "some-run", RunConfig(), [0.5])
    assert main(_argv(tmp_path)) == 2
    assert "holds no ablation.json" in capsys.readouterr().err
    assert not (tmp_path / "deck").exists()


def _inputs_on_disk(tmp_path: Path) -> None:
    """A deck and a policy that ``prepare_inputs`` reuses as they are (never loaded here)."""
    (tmp_path / "deck" / "tokenizer").mkdir(parents=True)
    (tmp_path / "deck" / "deck.json").write_text("{}")
    (tmp_path / "deck" / "tokenizer" / "tokenizer.json").write_text("{}")
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "config.json").write_text("{}")


def test_finished_variants_are_compared_without_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _inputs_on_disk(tmp_path)
    argv = _argv(tmp_path, "--variants", "full,clip", "--set", "run.updates=4")
    assert main([*argv, "--variants", "nope"]) == 2  # nothing written yet
    base = apply_overrides(RunConfig(), ["run.updates=4"])
    (tmp_path / "ab").mkdir()
    from arctic_swe.ablate import AblationPlan, open_plan, variant_configs

    configs = variant_configs(base, ("full", "clip"))
    open_plan(AblationPlan(tmp_path / "ab", configs, tmp_path / "deck", tmp_path / "policy"))
    write_run(tmp_path / "ab" / "full", configs["full"], [0.2, 0.4, 0.6, 0.7])
    write_run(tmp_path / "ab" / "clip", configs["clip"], [0.2, 0.6, 0.3, 0.1])
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "variant full: finished" in captured.err
    assert "variant clip: finished" in captured.err
    comparison, health, paired, mechanisms, reading = (
        (tmp_path / "ab" / "comparison.md").read_text().split("\n\n")
    )
    rows = {line.split(" | ")[0]: line for line in comparison.splitlines()}
    # no pool evaluation in these runs: the measured columns say so; the imputed ones follow
    for label, imputed in (("full", "| 0.200 → 0.700 |"), ("clip", "| 0.200 → 0.100 |")):
        assert rows[f"| {label}"].startswith(f"| {label} | 4 | " + "not measured | " * 2)
        assert imputed in rows[f"| {label}"]
    # the training-health table follows: write_run's records have grad_norm 0, so all four
    # updates count as zero-gradient, one streak from the first
    health_rows = {line.split(" | ")[0]: line for line in health.splitlines()}
    assert health_rows["| full"].split(" | ")[3:5] == ["4 / 4", "4 (from update 1)"]
    # one run per variant: paired at the base seed, with no interval; no pool evaluation
    assert "| clip | 1 | base: not measured |" in paired
    # write_run's records mask nothing: clip has no channel at this scale
    assert mechanisms.splitlines()[3].startswith("| clip | 1 | IcePop mask")
    assert mechanisms.splitlines()[3].endswith("| no channel at this scale |")
    # and the reading says why clip is not separated: nothing was measured to pair
    assert reading.splitlines()[2] == (
        "| clip | not measured | not measured | no channel at this scale "
        "| no seed measured both runs' final windows |"
    )
    assert "full" in captured.out
    assert "training health" in captured.out
    assert "what each ablation can act through" in captured.out
    assert (tmp_path / "ab" / "compare_reward.png").stat().st_size > 0


def test_seeded_variants_are_compared_per_seed_and_across_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _inputs_on_disk(tmp_path)
    argv = _argv(tmp_path, "--variants", "full,clip", "--seeds", "0,1", "--set", "run.updates=4")
    base = apply_overrides(RunConfig(), ["run.updates=4"])
    (tmp_path / "ab").mkdir()
    from arctic_swe.ablate import AblationPlan, open_plan, seeded_configs, variant_configs

    configs = seeded_configs(variant_configs(base, ("full", "clip")), (0, 1))
    open_plan(AblationPlan(tmp_path / "ab", configs, tmp_path / "deck", tmp_path / "policy"))
    for key, rewards in (("full/seed-0", [0.2, 0.4, 0.6, 0.7]), ("full/seed-1", [0.2, 0.5, 0.6, 0.6]),
                         ("clip/seed-0", [0.2, 0.6, 0.3, 0.1]), ("clip/seed-1", [0.3, 0.6, 0.2, 0.1])):  # fmt: skip
        write_run(tmp_path / "ab" / key, configs[key], rewards)
    # pool evaluations at the warm start and at update 4 (the final third of 4 updates), 16
    # rollouts each; clip ends 4 and 6 of 16 below full on its two seeds
    for key, final in (("full/seed-0", 12), ("full/seed-1", 14), ("clip/seed-0", 8),
                       ("clip/seed-1", 8)):  # fmt: skip
        log = EvaluationLog(tmp_path / "ab" / key / EVALUATIONS)
        for step, solved in ((0, 6), (4, final)):
            log.append(evaluation("pool", step, solved))
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err.count(": finished") == 4  # each seed of each variant, in its own directory
    comparison, _health, paired, mechanisms, reading = (
        (tmp_path / "ab" / "comparison.md").read_text().split("\n\n")
    )
    assert {line.split(" | ")[0] for line in comparison.splitlines()[2:]} == {
        "| full/seed-0", "| full/seed-1", "| clip/seed-0", "| clip/seed-1"}  # fmt: skip
    rows = {line.split(" | ")[0]: line.split(" | ") for line in paired.splitlines()[2:]}
    assert rows["| full"][1:3] == ["2", "0: 0.750, 1: 0.875"]
    assert rows["| clip"][4:8] == [
        "0: -0.250, 1: -0.375",
        "-0.312 [-1.107, +0.482]",  # two seeds: t = 12.7 over their spread
        "2 of 2 below full",
        "not separated",
    ]
    assert rows["| clip"][-1] == "same on 2 of 2 |"  # one warm start, one stream
    assert [line.split(" | ")[0] for line in mechanisms.splitlines()[2:]] == ["| full", "| clip"]
    # clip masks nothing here: not separated, and the reading names the missing channel
    assert reading.splitlines()[2].startswith(
        "| clip | not separated | not measured | no channel at this scale "
        "| not separated: no channel at this scale (masked 0.00 % < 0.50 %, larger of the two); "
        "Δ -0.312 [-1.107, +0.482], 2 of 2 below full |"
    )
    assert "paired with full, seed by seed" in captured.out


def test_a_bad_seed_list_fails_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(tmp_path, "--seeds", "0,0")) == 2
    assert "seed 0 is given twice" in capsys.readouterr().err
    assert not (tmp_path / "ab").exists()


SMOKE = [
    "run.updates=1",
    "deck.pool_size=4",
    "deck.groups_per_update=1",
    "deck.rollouts_per_group=2",
    "engine.capacity=4",
    "engine.max_resident=4",
    "engine.max_new_tokens=8",
    "harness.max_tokens=1024",
    "harness.sandboxes=2",
    "metrics.live=false",
    "metrics.plots=false",
    "trainer.micro_batch_rollouts=2",
]


@pytest.mark.slow  # 57 s on the 2-core VM at load 8 (the brief's bar is ~40 s)
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the namespace sandbox needs root and unshare",
)
def test_a_real_tiny_ablation_runs_two_variants_then_skips_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A random-init policy on a 4-task deck: its episodes end at the first turn with the
    gated reward, which is enough to run every stage of both variants once."""
    from arctic_swe.orchestrator import random_init_inputs

    random_init_inputs(tmp_path, 4)
    argv = _argv(tmp_path, "--variants", "full,lenient", *[a for s in SMOKE for a in ("--set", s)])
    assert main(argv) == 0
    out = tmp_path / "ab"
    assert (out / MANIFEST).is_file()
    for variant in ("full", "lenient"):
        assert len((out / variant / "metrics.jsonl").read_text().splitlines()) == 1
        assert (out / variant / "checkpoints" / "LATEST").is_file()
    assert "strict_format = false" in (out / "lenient" / "config.toml").read_text()
    # two tables (header, rule, a row per variant), one blank line between them
    assert (out / "comparison.md").read_text().count("\n") == 4 + 1 + 4
    capsys.readouterr()
    assert main(argv) == 0  # the same command again: both finished, only compared
    assert capsys.readouterr().err.count(": finished") == 2


def test_restored_runs_are_skipped_as_finished_and_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A measurement resumed on a machine that kept no run directories: the finished runs a
    results folder collected come back (same config, same input digests) and nothing runs."""
    from arctic_swe.ablate import variant_configs
    from arctic_swe.config import fingerprint_inputs, write_run_inputs

    _inputs_on_disk(tmp_path)
    configs = variant_configs(apply_overrides(RunConfig(), ["run.updates=4"]), ("full", "clip"))
    digests = fingerprint_inputs(tmp_path / "deck", tmp_path / "policy")
    for label, rewards in (("full", [0.2, 0.4, 0.6, 0.7]), ("clip", [0.2, 0.6, 0.3, 0.1])):
        write_run(tmp_path / "elsewhere" / label, configs[label], rewards)
        write_run_inputs(RunDir(tmp_path / "elsewhere" / label), digests)
    sources = [str(tmp_path / "elsewhere" / label) for label in ("full", "clip")]
    assert main(["report", str(tmp_path / "res"), "--collect", sources[0], "--label", "full",
                 "--collect", sources[1], "--label", "clip"]) == 0  # fmt: skip
    argv = _argv(tmp_path, "--variants", "full,clip", "--set", "run.updates=4")
    capsys.readouterr()
    assert main([*argv, "--restore", str(tmp_path / "res")]) == 0
    captured = capsys.readouterr()
    assert "restored full from" in captured.err
    assert "variant clip: finished" in captured.err
    assert "full" in (tmp_path / "ab" / "comparison.md").read_text()
    # again: both are there now, nothing is restored twice
    assert main([*argv, "--restore", str(tmp_path / "res")]) == 0
    assert "nothing to restore" in capsys.readouterr().err
    # other warm-start content: refused before anything runs, as a usage error
    (tmp_path / "policy" / "config.json").write_text('{"other": 1}')
    shutil.rmtree(tmp_path / "ab")
    assert main([*argv, "--restore", str(tmp_path / "res")]) == 2
    assert "this ablation trains from" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "ab" / "full").exists()
