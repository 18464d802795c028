"""Tests for ``arctic_swe.orchestrator._pool_eval``: the measured pool success of a real run
equals an independent ``arctic-swe evaluate``-path evaluation of the same weights with the same
seeds; the evaluator pins the version it was given; a pending evaluation survives a crash.

Real parts: a three-task procedural deck, a random-init tiny policy (its episodes end at the first
turn, so each rollout is one 16-token turn), namespace sandboxes, the real loop and trainer.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.deck import load_deck
from arctic_swe.evaluate import evaluate_policy, recipe_harness
from arctic_swe.metrics import EvaluationLog, MetricsLog, UpdateMetrics, of_split
from arctic_swe.orchestrator import Inputs, run_training
from arctic_swe.orchestrator._pool_eval import PoolEvalJob, PoolEvaluator
from arctic_swe.trainer import latest_checkpoint
from swe_sandbox import NamespaceBackend

from .conftest import TINY_LOOP

pytestmark = [
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="the namespace sandbox needs root and unshare",
    ),
    pytest.mark.usefixtures("one_thread"),
]

BASE = [
    *TINY_LOOP,
    "run.seed=7",
    "run.updates=2",
    "run.pool_eval_every=1",
    "run.pool_eval_samples=2",
]


def _config(*extra: str) -> RunConfig:
    return apply_overrides(RunConfig(), [*BASE, *extra])


def _independent(inputs: Inputs, config: RunConfig, policy: Path) -> tuple[float, str]:
    """``arctic-swe evaluate``'s function on ``policy`` with the run's seed and sizes."""
    tasks = [t.spec for t in load_deck(inputs.deck_dir).split("pool")[: config.deck.pool_size]]
    result = evaluate_policy(
        policy, tasks, samples=config.run.pool_eval_samples, seed=config.run.seed,
        workers=config.run.pool_eval_workers, harness=recipe_harness(config), stream="pool",
    )  # fmt: skip
    return result.rate, result.digest


def _evaluated(run_metrics: Path) -> list[UpdateMetrics]:
    return [r for r in MetricsLog(run_metrics).read() if r.pool_eval_rollouts > 0]


def test_pool_success_equals_an_independent_evaluation(inputs: Inputs, tmp_path: Path) -> None:
    """The final evaluation of a real run equals ``arctic-swe evaluate RUN`` (its latest
    checkpoint: the same weights) with the run's seed, samples and workers."""
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, inputs)
    measured = _evaluated(run.metrics)
    evaluated = [(r.step, r.pool_eval_step, r.pool_eval_version) for r in measured]
    assert evaluated == [(1, 1, 1), (2, 2, 2)]
    assert all(r.pool_eval_rollouts == 3 * 2 for r in measured)
    assert all(r.pool_success_low <= r.pool_success <= r.pool_success_high for r in measured)
    assert all(r.replay_adjusted >= 0 for r in result.records)
    final = json.loads((run.root / "pool_eval" / "step-2.json").read_text())
    assert not list((run.root / "pool_eval").glob("*.safetensors"))  # links removed once recorded
    assert latest_checkpoint(run.checkpoints) == run.checkpoints / "step-2"
    out = tmp_path / "eval.jsonl"
    argv = ["evaluate", str(run.root), "--deck", str(inputs.deck_dir), "--seed", "7",
            "--samples", "2", "--workers", "2", "--threads", "1", "--out", str(out)]  # fmt: skip
    assert main([*argv, "--stream", "pool"]) == 0
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert (line["rollouts"], line["rate"]) == (6, measured[-1].pool_success)
    assert line["digest"] == final["digest"]  # the very same rollouts, token for token
    assert line["per_task"] == final["per_task"]
    assert main(argv) == 0  # the default: the check streams, disjoint from the run's
    (check,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert check["stream"] == "check"
    assert check["digest"] != final["digest"]
    assert result.summary is not None


def test_every_evaluation_is_kept_rollout_by_rollout(inputs: Inputs, tmp_path: Path) -> None:
    """evaluations.jsonl holds the warm start (update 0) and every evaluated update, for the
    pool and the held-out split, each equal to an independent evaluation of those weights on
    its own streams."""
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    run_training(config, run, inputs)
    records = EvaluationLog(run.evaluations).read()
    assert [(r.split, r.step, r.version) for r in records] == [
        ("heldout", 0, 0), ("heldout", 1, 1), ("heldout", 2, 2),
        ("pool", 0, 0), ("pool", 1, 1), ("pool", 2, 2),
    ]  # fmt: skip
    assert all(r.seed == 7 for r in records)
    assert {r.split: r.stream for r in records} == {"pool": "pool", "heldout": "heldout"}
    pool = {r.step: r for r in of_split(records, "pool")}
    heldout = {r.step: r for r in of_split(records, "heldout")}
    assert {r.rollouts for r in pool.values()} == {6}
    assert {r.rollouts for r in heldout.values()} == {2}  # run.heldout_eval_samples = 1
    lines = {r.step: r for r in _evaluated(run.metrics)}
    assert [pool[s].rate for s in (1, 2)] == [lines[s].pool_success for s in (1, 2)]
    deck = load_deck(inputs.deck_dir)
    warm = evaluate_policy(
        inputs.policy_dir, [t.spec for t in deck.split("pool")[:3]], samples=2, seed=7,
        workers=config.run.pool_eval_workers, harness=recipe_harness(config), stream="pool",
    )  # fmt: skip
    assert (warm.outcomes, warm.digest) == (dict(pool[0].outcomes), pool[0].digest)
    held = evaluate_policy(
        inputs.policy_dir, [t.spec for t in deck.split("heldout")], split="heldout", samples=1,
        seed=7, workers=config.run.pool_eval_workers, harness=recipe_harness(config),
        stream="heldout",
    )  # fmt: skip
    assert held.digest == heldout[0].digest


def test_the_evaluator_pins_the_version_it_was_given(inputs: Inputs, tmp_path: Path) -> None:
    """Two different weight files, evaluated in the background while another is queued:
    each result is that file's own independent evaluation (not the newest weights')."""
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    log = MetricsLog(run.metrics)
    for step in (1, 2):
        log.append(_blank(step))
    tasks = [t.spec for t in load_deck(inputs.deck_dir).split("pool")[:3]]
    evaluator = PoolEvaluator(config, run, tasks, inputs.policy_dir, recipe_harness(config), log,
                              NamespaceBackend())  # fmt: skip
    files = [inputs.policy_dir.parent / f"policy-{s}" / "model.safetensors" for s in (0, 1)]

    async def both() -> None:
        evaluator.launch(PoolEvalJob(1, 1, files[0]))
        evaluator.launch(PoolEvalJob(2, 2, files[1]))
        assert evaluator.pending() == [[1, 1], [2, 2]]
        await evaluator.finish()

    asyncio.run(both())
    lines = _evaluated(run.metrics)
    digests = [
        json.loads((run.root / "pool_eval" / f"step-{s}.json").read_text())["digest"]
        for s in (1, 2)
    ]
    assert digests[0] != digests[1]
    for line, digest, seed in zip(lines, digests, (0, 1), strict=True):
        policy = inputs.policy_dir.parent / f"policy-{seed}"
        assert _independent(inputs, config, policy) == (line.pool_success, digest)


@pytest.mark.slow
def test_a_pending_evaluation_is_redone_after_a_crash(inputs: Inputs, tmp_path: Path) -> None:
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)

    class CrashError(Exception):
        pass

    def crash(record: UpdateMetrics) -> None:
        raise CrashError  # right after update 1's checkpoint, its evaluation still running

    with pytest.raises(CrashError):
        run_training(config, run, inputs, on_update=crash)
    state = json.loads((run.checkpoints / "step-1" / "state.json").read_text())
    assert state["extras"]["pool_eval_pending"] == [[1, 1]]
    assert not _evaluated(run.metrics)
    run_training(config, run, inputs, resume=True)
    measured = _evaluated(run.metrics)
    assert [r.step for r in measured] == [1, 2]
    assert [r.step for r in MetricsLog(run.metrics).read()] == [1, 2]
    straight = prepare_run_dir(tmp_path / "straight", config, resume=False)
    run_training(config, straight, inputs)
    assert [r.pool_success for r in measured] == [
        r.pool_success for r in _evaluated(straight.metrics)
    ]
    resumed, whole = (EvaluationLog(r.evaluations).read() for r in (run, straight))
    assert [(r.split, r.step, r.digest) for r in resumed] == [
        (r.split, r.step, r.digest) for r in whole
    ]  # the warm start's evaluation once, no evaluation of a voided update


_INTS = ("lag_max", "stale_dropped", "dropped_rollouts", "requeued_groups", "groups",
         "rollouts", "trainable_tokens", "generated_tokens", "retired", "active_tasks")  # fmt: skip


def _blank(step: int) -> UpdateMetrics:
    """A metrics line with every figure zero (the evaluator only amends it)."""
    names = {f.name for f in fields(UpdateMetrics) if f.default is MISSING} - {"step", "version"}
    values = {name: 0 if name in _INTS else 0.0 for name in names}
    return UpdateMetrics(step=step, version=step, **values)
