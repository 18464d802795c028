"""The loop's replay feedback (Arctic-SWE §3.3 eviction, "Scale Findings" forgetting): a probe
of a retired task that finds it forgotten puts it back in the pool, the loop trains on it
again — even when every task had retired and nothing was left to train — the metrics count
each probe and return, and the checkpointed deck keeps the count.

Real parts as in ``test_run_end.py``: a three-task procedural deck, a random-init tiny policy
that fails every rollout, namespace sandboxes, the real loop and trainer. The run starts from
the state of a run that has mastered all three tasks (each retired after its streak of
all-correct groups), so every probe is a failure and every task must come back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from arctic_swe.config import (
    EndReason,
    RunConfig,
    RunDir,
    apply_overrides,
    prepare_run_dir,
    read_run_end,
)
from arctic_swe.metrics import UpdateMetrics
from arctic_swe.orchestrator import Inputs, RLLoop, open_components
from arctic_swe.trainer import latest_checkpoint
from deck_evictor import Deck, RetireReason

from .conftest import REAL_LOOP_MARKS, TINY_LOOP

pytestmark = REAL_LOOP_MARKS

FEEDBACK = [
    *TINY_LOOP,
    "run.seed=7",
    "run.updates=3",
    "run.lookahead_batches=0",
    "run.pool_eval_every=0",
    "deck.replay_every=1",
    "deck.replay_size=3",  # every retired task is probed at the first probe update
]


def _run_from_a_mastered_deck(
    config: RunConfig, inputs: Inputs, run: RunDir
) -> tuple[list[UpdateMetrics], Deck]:

    async def main() -> tuple[list[UpdateMetrics], Deck]:
        async with open_components(config, run, inputs, resume=False) as parts:
            for task_id in parts.tasks:  # mastered: its streak of all-correct groups
                for _ in range(config.deck.mastered_groups):
                    parts.deck.record(task_id, 2, 2)
            assert parts.deck.exhausted
            return await RLLoop(parts).run(), parts.deck

    return asyncio.run(main())


def test_forgotten_retired_tasks_return_to_the_pool_and_are_trained_again(
    inputs: Inputs, tmp_path: Path
) -> None:
    config = apply_overrides(RunConfig(), FEEDBACK)
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    records, deck = _run_from_a_mastered_deck(config, inputs, run)
    tasks = set(deck.task_ids)
    # every probe failed (0/2 < 0.75), so every task came back and the run trained to the end
    assert sum(r.replay_probes for r in records) == 3
    assert sum(r.reactivated for r in records) == 3
    assert [r.step for r in records] == [1, 2, 3]
    end = read_run_end(run)
    assert end is not None
    assert end.reason is EndReason.UPDATES
    assert deck.active_count == 3
    assert deck.retired == {}
    assert {t for r in records for t in r.per_task_reward} <= tasks
    assert len({t for r in records for t in r.per_task_reward}) >= 2  # trained on again
    for task_id in tasks:
        stats = deck.stats(task_id)
        assert (stats.times_retired, stats.times_reactivated) == (1, 1)
        assert stats.consecutive_all_correct == 0  # the streak must be earned again
    assert records[-1].retired == 0
    assert records[-1].active_tasks == 3
    checkpoint = latest_checkpoint(run.checkpoints)
    assert checkpoint is not None
    assert Deck.load(checkpoint / "deck.state").reactivations == 3


def test_without_feedback_a_mastered_deck_stays_retired_and_the_run_stops(
    inputs: Inputs, tmp_path: Path
) -> None:
    config = apply_overrides(RunConfig(), [*FEEDBACK, "deck.reactivate_below=0"])
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    records, deck = _run_from_a_mastered_deck(config, inputs, run)
    assert records == []  # nothing to train: the probes only measured
    assert {r.reason for r in deck.retired.values()} == {RetireReason.EASY}
    assert deck.reactivations == 0
    assert deck.forgetting()
    assert all(s.replay_rate == 0.0 for s in deck.forgetting().values())
    end = read_run_end(run)
    assert end is not None
    assert end.reason is EndReason.DECK_EXHAUSTED
