"""Pooled scoring: worker threads draw sandboxes from one swe-sandbox pool, bounded by its size,
and every sandbox is closed when the runner closes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from curate_tasks import make_task

from swe_curate._pooled import PoolRunner
from swe_sandbox import Limits, NamespaceBackend


def test_two_workers_grade_in_parallel_on_a_pool_of_two(
    tmp_path: Path, namespace_backend: NamespaceBackend
) -> None:
    tasks = [make_task(tmp_path / str(i), kind) for i, kind in enumerate(["good", "loose"])]
    rewards: dict[str, list[int]] = {}
    peak = [0]
    with PoolRunner(namespace_backend, Limits(), workers=2) as runner:

        def work(index: int) -> None:
            task = tasks[index]
            with runner.scorer() as scorer:
                got = [scorer.grade(task, ""), scorer.grade(task, task.gold_patch)]
                peak[0] = max(peak[0], runner.pool.live_count)
            rewards[task.instance_id] = [g.reward for g in got]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert runner.pool.live_count <= 2
    assert rewards == {"geom-good": [0, 1], "geom-loose": [0, 1]}
    assert 1 <= peak[0] <= 2
    assert runner.pool.live_count == 0  # closed with the runner


def test_a_pool_needs_a_worker(namespace_backend: NamespaceBackend) -> None:
    with pytest.raises(ValueError, match="workers must be >= 1"):
        PoolRunner(namespace_backend, Limits(), workers=0)
