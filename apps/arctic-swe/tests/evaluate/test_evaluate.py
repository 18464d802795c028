"""Tests for ``arctic_swe.evaluate``: the Wilson interval against a slow reference, the tally,
and a real evaluation (tiny random policy, namespace sandboxes) through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe._cli import main
from arctic_swe.chat import save_tokenizer
from arctic_swe.deck import StoredDeck
from arctic_swe.evaluate import evaluate_policy, evaluation_table, tally_evaluation, wilson_interval
from arctic_swe.harness import Trajectory
from arctic_swe.model import policy_config, save_policy
from arctic_swe.trainer import build_fp32_policy
from swe_sandbox import NamespaceBackend


def _reference_wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The interval by its definition: every p0 with |p_hat - p0| <= z sqrt(p0 (1 - p0) / n),
    found by bisection on each side of p_hat (float64, slow, obviously right)."""
    p_hat = successes / n

    def inside(p0: float) -> bool:
        return abs(p_hat - p0) <= z * math.sqrt(p0 * (1 - p0) / n)

    def edge(lo: float, hi: float) -> float:  # lo is outside, hi inside (or the reverse)
        lo_inside = inside(lo)
        for _ in range(200):
            mid = (lo + hi) / 2
            if inside(mid) == lo_inside:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if inside(0.0) else edge(0.0, p_hat)
    high = 1.0 if inside(1.0) else edge(1.0, p_hat)
    return low, high


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_matches_its_definition(case: tuple[int, int]) -> None:
    successes, n = case
    low, high = wilson_interval(successes, n)
    ref_low, ref_high = _reference_wilson(successes, n)
    assert low == pytest.approx(ref_low, abs=1e-9)
    assert high == pytest.approx(ref_high, abs=1e-9)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    mirrored = wilson_interval(n - successes, n)  # symmetric under success <-> failure
    assert mirrored[0] == pytest.approx(1 - high, abs=1e-12)


def test_wilson_interval_known_values_and_bad_input() -> None:
    assert wilson_interval(0, 10)[1] == pytest.approx(1.96**2 / (10 + 1.96**2))
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for bad in ((3, 2), (-1, 4), (1, -1)):
        with pytest.raises(ValueError, match="successes <= n"):
            wilson_interval(*bad)


def _trajectory(task: str, reward: float, termination: str) -> Trajectory:
    return Trajectory(
        task_id=task,
        prompt_length=1,
        token_ids=(1, 2),
        loss_mask=(False, True),
        logprobs=(0.0, -0.5),
        versions=(-1, 0),
        turns=(),
        termination=termination,
        raw_reward=reward if termination == "submitted" else None,
        reward=reward,
    )


def test_tally_counts_per_task_and_endings() -> None:
    trajectories = [
        _trajectory("a", 1.0, "submitted"),
        _trajectory("a", 0.0, "invalid_format"),
        _trajectory("b", 0.0, "submitted"),
        _trajectory("b", 0.0, "turn_budget"),
    ]
    result = tally_evaluation("p", Path("p"), "pool", 2, trajectories)
    assert (result.solved, result.rollouts, result.tasks) == (1, 4, 2)
    assert result.per_task == {"a": 0.5, "b": 0.0}
    assert result.terminations == {"submitted": 2, "invalid_format": 1, "turn_budget": 1}
    assert result.rate == 0.25
    assert result.to_dict()["ci95"] == list(wilson_interval(1, 4))
    table = evaluation_table([result, result])
    assert table.row_count == 2


@pytest.fixture(scope="module")
def random_policy(
    tmp_path_factory: pytest.TempPathFactory, deck_tokenizer: PreTrainedTokenizerFast
) -> Path:
    tokenizer = deck_tokenizer
    model = build_fp32_policy(
        policy_config(len(tokenizer), pad_token_id=tokenizer.pad_token_id), seed=0
    )
    policy = save_policy(model, tmp_path_factory.mktemp("policy") / "policy")
    save_tokenizer(tokenizer, policy)
    return policy


def test_evaluate_policy_samples_every_task_n_times(
    random_policy: Path, small_deck: StoredDeck, backend: NamespaceBackend
) -> None:
    tasks = [task.spec for task in small_deck.split("pool")[:2]]
    seen: list[str] = []
    result = evaluate_policy(
        random_policy, tasks, samples=3, seed=1, workers=2, backend=backend,
        on_done=lambda t: seen.append(t.task_id),
    )  # fmt: skip
    assert result.rollouts == 6 == len(seen)
    assert sorted(result.per_task) == sorted(t.instance_id for t in tasks)
    assert sum(result.terminations.values()) == 6
    assert result.path == random_policy
    with pytest.raises(ValueError, match="samples"):
        evaluate_policy(random_policy, tasks, samples=0, backend=backend)


def _evaluate_json(
    policies: list[Path], deck: StoredDeck, scratch: Path, *extra: str
) -> list[dict[str, Any]]:
    """Run ``arctic-swe evaluate`` (one sample per task) and return its JSON lines."""
    out = scratch / "eval.jsonl"
    argv = [str(policy) for policy in policies] + ["--deck", str(deck.root), "--samples", "1"]
    assert main(["evaluate", *argv, "--out", str(out), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_evaluate_command_compares_policies_and_writes_json(
    random_policy: Path,
    small_deck: StoredDeck,
    backend: NamespaceBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _evaluate_json([random_policy, random_policy], small_deck, tmp_path, "--tasks", "2")
    assert [line["rollouts"] for line in lines] == [2, 2]
    # the same seed and the same weights: the same rollouts, so the same outcome
    assert lines[0]["per_task"] == lines[1]["per_task"]
    assert "Δ first" in capsys.readouterr().out


def test_evaluate_command_rejects_a_directory_without_a_policy(
    small_deck: StoredDeck, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", str(tmp_path), "--deck", str(small_deck.root), "--tasks", "1"]
    assert main(argv) == 2
    assert "tokenizer" in capsys.readouterr().err


def _run_directory(root: Path, policy: Path, pool_size: int) -> Path:
    """A real run directory (config + one completed checkpoint) holding ``policy``'s weights."""
    from arctic_swe.chat import load_tokenizer
    from arctic_swe.config import TrainerSection, apply_overrides, prepare_run_dir, preset
    from arctic_swe.model import load_policy
    from arctic_swe.trainer import Trainer, save_checkpoint
    from deck_evictor import Deck as EvictionDeck

    sizes = [f"deck.pool_size={pool_size}", "deck.groups_per_update=1", "deck.replay_size=1"]
    config = apply_overrides(preset("tiny"), sizes)
    run = prepare_run_dir(root, config, resume=False)
    trainer = Trainer(load_policy(policy), TrainerSection())
    save_checkpoint(
        run.checkpoints, trainer, EvictionDeck(["a"], seed=0), version=0, metrics_lines=0,
        tokenizer=load_tokenizer(policy),
    )  # fmt: skip
    return root


def test_run_pool_size_reads_the_first_run_directory(random_policy: Path, tmp_path: Path) -> None:
    from arctic_swe.config import RunConfigError
    from arctic_swe.evaluate import run_pool_size

    run = _run_directory(tmp_path / "run", random_policy, pool_size=3)
    assert run_pool_size([random_policy]) is None  # a policy directory has no pool
    assert run_pool_size([random_policy, run]) == 3
    (run / "config.toml").write_text("[deck]\npool_size = 'many'\n")
    with pytest.raises(RunConfigError, match="pool_size"):
        run_pool_size([run])


def test_evaluate_command_defaults_to_the_runs_stress_pool(
    random_policy: Path,
    small_deck: StoredDeck,
    backend: NamespaceBackend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _run_directory(tmp_path / "run", random_policy, pool_size=2)
    lines = _evaluate_json([random_policy, run], small_deck, tmp_path)
    assert "first 2 pool tasks" in capsys.readouterr().err
    assert [line["tasks"] for line in lines] == [2, 2]
    # the checkpoint holds the same weights: the same seed gives the same outcome
    assert lines[0]["per_task"] == lines[1]["per_task"]


def test_the_same_weights_and_seed_give_the_same_rollouts_whatever_the_scheduling(
    random_policy: Path, small_deck: StoredDeck, backend: NamespaceBackend
) -> None:
    """Every turn samples from a stream fixed by (seed, task, sample, turn), so one sandbox at
    a time and two at once sample the same tokens (equal digests); another seed does not."""
    from dataclasses import replace

    from arctic_swe.harness import TINY_HARNESS

    tasks = [task.spec for task in small_deck.split("pool")[:1]]
    short = replace(TINY_HARNESS, max_new_tokens=24)  # one 24-token turn per rollout
    options = {"samples": 2, "backend": backend, "harness": short}
    runs = [
        evaluate_policy(random_policy, tasks, seed=seed, workers=n, **options)  # type: ignore[arg-type]
        for seed, n in ((4, 1), (4, 2), (5, 2))
    ]
    assert runs[0].digest == runs[1].digest
    assert runs[0].digest != runs[2].digest
    assert (runs[0].solved, runs[0].per_task) == (runs[1].solved, runs[1].per_task)
