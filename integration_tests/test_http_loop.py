"""The RL loop with its engines as ``arctic-swe serve`` processes over real HTTP on 127.0.0.1
(Arctic-SWE §3.3, engines as services): the same loop as in-process, two real servers, real
namespace sandboxes, the real tiny policy. Nothing is mocked: a server is killed with SIGKILL.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.metrics import UpdateMetrics
from arctic_swe.orchestrator import Inputs, random_init_inputs, run_training

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the namespace sandbox needs root and unshare",
)

BASE = [
    "run.seed=0",
    "deck.pool_size=4",
    "deck.groups_per_update=2",
    "deck.rollouts_per_group=2",
    "deck.replay_size=0",
    "engine.capacity=8",
    "engine.max_resident=8",
    "engine.max_new_tokens=16",
    "engine.timeout_s=60",
    "engine.startup_timeout_s=300",
    "harness.max_tokens=2048",
    "harness.sandboxes=4",
    "metrics.live=false",
    "metrics.plots=false",
    "trainer.micro_batch_rollouts=4",
    "run.pool_eval_every=0",  # the measured pool evaluation has its own tests (its cost)
    "metrics.kl_by_layer_every=0",
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    """A four-task deck, its tokenizer, and a random-init tiny policy saved with it."""
    return random_init_inputs(tmp_path_factory.mktemp("world"), 4)


def _config(*extra: str) -> RunConfig:
    return apply_overrides(RunConfig(), [*BASE, *extra])


def _serving(policy_dir: Path) -> list[int]:
    """Pids of live ``serve`` processes of this policy (orphan check)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(") ")[-1][0]
        except OSError:
            continue
        if b"serve" in argv and str(policy_dir).encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def _assert_complete(records: tuple[UpdateMetrics, ...], steps: int) -> None:
    assert [r.step for r in records] == list(range(1, steps + 1))
    for record in records:
        assert record.rollouts >= 1
        assert record.trainable_tokens >= 1
        assert sum(record.terminations.values()) == record.rollouts


def test_two_launched_servers_serve_the_loop_and_a_killed_one_is_survived(
    inputs: Inputs, tmp_path: Path
) -> None:
    """``engine.launch = 2``: the run starts two ``arctic-swe serve`` processes and the loop
    spreads groups over both. Right after update 1 — when the next batch has just been launched,
    one group on each server — one server is SIGKILLed: its group fails, is counted as lost,
    re-leased onto the other server and rerun; the run finishes in bounded time and leaves no
    server behind.

    Synchronous batches (``lookahead_batches = 0``) make the count deterministic: update 2 needs
    the killed server's group, so the loop must see its failure. With a look-ahead batch, a quiet
    machine can finish updates 2 and 3 from groups already done on the survivor before the
    failure is read, and the run ends with it uncounted (seen on an idle 2-core machine)."""
    config = _config(
        "run.updates=3", "run.lookahead_batches=0", "engine.kind=http", "engine.launch=2"
    )
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    killed: list[int] = []

    def kill_one_after_first(record: UpdateMetrics) -> None:
        if record.step == 1:
            servers = sorted(_serving(inputs.policy_dir))
            assert len(servers) == 2, servers
            os.kill(servers[0], signal.SIGKILL)
            killed.append(servers[0])

    began = time.monotonic()
    result = run_training(config, run, inputs, on_update=kill_one_after_first)
    elapsed = time.monotonic() - began
    _assert_complete(result.records, 3)
    first, *after = result.records
    # both engines served update 1 (least-loaded puts the batch's two groups on different ones)
    assert set(first.engine_groups) == {"http-0", "http-1"}, first.engine_groups
    assert first.engines_up == 2
    assert first.lost_rollouts == first.released_rollouts == 0
    # the kill: every rollout in flight on the dead server was lost and re-leased, none given up
    assert killed
    lost = sum(r.lost_rollouts for r in after)
    assert lost >= 2, [r.lost_rollouts for r in after]  # at least one whole group of 2
    assert sum(r.released_rollouts for r in after) == lost
    assert result.records[-1].engines_up == 1
    assert len(result.records[-1].engine_groups) == 1  # only the survivor serves
    assert elapsed < 600, elapsed  # bounded (start-up of two servers dominates)
    assert sorted(p.name for p in (run.root / "engines").iterdir()) == ["http-0.log", "http-1.log"]
    assert _serving(inputs.policy_dir) == []  # the survivor was stopped with the run
