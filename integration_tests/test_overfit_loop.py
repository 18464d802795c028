"""The asynchronous RL loop end to end (ARCHITECTURE.md §4): real namespace sandboxes, the real tiny
Qwen3.5 policy in real torch engines, the real router, trainer, deck and metrics.

The policy here is random-initialised (a warm start takes minutes), so its episodes end at the
first turn with the gated reward; that exercises every stage and every metric. The sandbox-kill
test needs rollouts that reach the tools, so it drives the loop with the scripted expert behind
load-router's ``Engine`` protocol (the one test double here, documented below).
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch import nn

from arctic_swe.chat import IM_END, encode, special_id
from arctic_swe.config import RunConfig, apply_overrides, prepare_run_dir
from arctic_swe.deck import DeckTask, load_deck
from arctic_swe.engine import EngineConfig, RunEngine, TorchEngine
from arctic_swe.harness import harness_config, prompt_text
from arctic_swe.metrics import MetricsLog, UpdateMetrics
from arctic_swe.orchestrator import Inputs, random_init_inputs, run_training
from arctic_swe.trainer import latest_checkpoint
from arctic_swe.warmstart import expert_turns
from deck_evictor import Deck
from load_router import GenerateRequest, GenerateResult
from swe_sandbox import AsyncSandbox, SandboxPool, TaskSpec

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the namespace sandbox needs root and unshare",
)

BASE = [
    "run.updates=3",
    "run.seed=0",
    "deck.pool_size=6",
    "deck.groups_per_update=2",
    "deck.rollouts_per_group=2",
    "deck.replay_every=1",
    "engine.engines=2",
    "engine.capacity=8",
    "engine.max_resident=8",
    "engine.max_new_tokens=16",
    "harness.max_tokens=2048",
    "harness.sandboxes=4",
    "metrics.live=false",
    "trainer.micro_batch_rollouts=4",
    "metrics.kl_by_layer_every=0",  # the layer-type audit has its own test (its cost)
    "run.pool_eval_every=0",  # the measured pool evaluation has its own tests (its cost)
]


@dataclass(frozen=True)
class World:
    inputs: Inputs
    pool: tuple[DeckTask, ...]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """A six-task deck, its tokenizer, and a random-init tiny policy saved with it."""
    inputs = random_init_inputs(tmp_path_factory.mktemp("world"), 6)
    return World(inputs, load_deck(inputs.deck_dir).split("pool"))


def _config(*extra: str) -> RunConfig:
    return apply_overrides(RunConfig(), [*BASE, *extra])


def _assert_complete(records: Sequence[UpdateMetrics], steps: int) -> None:
    assert [r.step for r in records] == list(range(1, steps + 1))
    for record in records:
        for name, value in vars(record).items():
            if isinstance(value, float):
                assert math.isfinite(value), name
        assert record.rollouts >= 1
        assert record.trainable_tokens >= 1
        assert sum(record.terminations.values()) == record.rollouts
        assert 0.0 <= record.reward <= 1.0
        assert record.train_seconds > 0


def test_short_run_writes_every_metric_plots_and_checkpoints(world: World, tmp_path: Path) -> None:
    config = _config()
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, world.inputs)
    _assert_complete(result.records, 3)
    assert MetricsLog(run.metrics).read() == list(result.records)
    assert {p.name for p in result.plots} == {"curves.png", "reward.png", "numerics.png"}
    assert latest_checkpoint(run.checkpoints) == run.checkpoints / "step-3"
    assert result.summary is not None
    assert result.summary.updates == 3


def test_kill_and_resume_continues_with_identical_deck_state(world: World, tmp_path: Path) -> None:
    config = _config("run.updates=4")
    run = prepare_run_dir(tmp_path / "run", config, resume=False)

    class CrashError(Exception):
        pass

    def crash_after_two(record: UpdateMetrics) -> None:
        if record.step == 2:
            raise CrashError

    with pytest.raises(CrashError):
        run_training(config, run, world.inputs, on_update=crash_after_two)
    checkpoint = latest_checkpoint(run.checkpoints)
    assert checkpoint == run.checkpoints / "step-2"
    saved = Deck.load(checkpoint / "deck.state").state_dict()

    seen: list[dict[str, object]] = []
    original = run_training.__globals__["open_components"]

    def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        manager = original(*args, **kwargs)

        class Wrapped:
            async def __aenter__(self):  # type: ignore[no-untyped-def]
                parts = await manager.__aenter__()
                seen.append(parts.deck.state_dict())
                assert parts.trainer.steps == 2
                return parts

            async def __aexit__(self, *exc: object) -> None:
                await manager.__aexit__(*exc)

        return Wrapped()

    run_training.__globals__["open_components"] = spy
    try:
        result = run_training(config, run, world.inputs, resume=True)
    finally:
        run_training.__globals__["open_components"] = original
    assert seen == [saved]
    _assert_complete(result.records, 4)
    assert latest_checkpoint(run.checkpoints) == run.checkpoints / "step-4"


def test_resume_of_a_synchronous_run_is_token_identical(world: World, tmp_path: Path) -> None:
    """Group seeds travel with the checkpoint: with no look-ahead (every in-flight group was
    launched under the checkpointed weights) a crash-and-resume run samples exactly the tokens
    of an uninterrupted one, so every figure of the updates after the crash matches."""
    config = _config("run.updates=4", "run.lookahead_batches=0", "deck.replay_size=0")
    straight = run_training(config, prepare_run_dir(tmp_path / "a", config, resume=False),
                           world.inputs)  # fmt: skip

    class CrashError(Exception):
        pass

    def crash_after_two(record: UpdateMetrics) -> None:
        if record.step == 2:
            raise CrashError

    run = prepare_run_dir(tmp_path / "b", config, resume=False)
    with pytest.raises(CrashError):
        run_training(config, run, world.inputs, on_update=crash_after_two)
    resumed = run_training(config, run, world.inputs, resume=True)
    after = [r for r in resumed.records if r.step > 2]
    assert [r.step for r in after] == [3, 4]
    for a, b in zip(straight.records[2:], after, strict=True):
        assert (a.generated_tokens, a.trainable_tokens) == (b.generated_tokens, b.trainable_tokens)
        assert (a.terminations, a.per_task_reward) == (b.terminations, b.per_task_reward)
        assert a.loss == pytest.approx(b.loss, rel=1e-5, abs=1e-9)
        assert a.entropy == pytest.approx(b.entropy, rel=1e-5)


def test_fp32_numerics_off_shows_as_train_inference_mismatch(world: World, tmp_path: Path) -> None:
    """The ablation's engines compute in bf16 and round their stored recurrent state to bf16
    while the trainer stays FP32: the trainer's recomputed log-probs then disagree with the
    rollout's (paper §3.3)."""
    kls = {}
    for name, extra in (("recipe", ()), ("ablated", ("trainer.fp32_numerics=false",))):
        config = _config("run.updates=1", *extra)
        run = prepare_run_dir(tmp_path / name, config, resume=False)
        kls[name] = run_training(config, run, world.inputs).records[0].mismatch_kl
    assert kls["recipe"] < 1e-9, kls
    assert kls["ablated"] > 10 * max(kls["recipe"], 1e-14), kls  # ~70x measured


def test_default_lookahead_trains_groups_more_than_one_version_old(
    world: World, tmp_path: Path
) -> None:
    """With the default look-ahead, groups launched ahead are trained two or more optimizer
    steps after their first token (lag > 1, as in the paper's runs: mean lag 2.0) when the cap
    lets them through (2 here; the default cap 1 drops them, the next test); every rollout
    gets a sandbox at once here, so those groups start under version 0."""
    config = _config(
        "run.updates=3", "harness.sandboxes=16", "deck.replay_size=0", "run.max_off_policy=2"
    )
    assert config.run.lookahead_batches == RunConfig().run.lookahead_batches >= 2
    records = run_training(config, prepare_run_dir(tmp_path / "run", config, resume=False),
                          world.inputs).records  # fmt: skip
    assert max(r.lag_max for r in records) >= 2, [r.lag_max for r in records]
    assert max(r.lag_token_mean for r in records) > 1.0


def test_the_off_policy_cap_drops_and_counts_groups_past_it(world: World, tmp_path: Path) -> None:
    """The same run with the default cap (1): the groups two versions old are dropped, counted
    in ``stale_dropped``, and no kept group is older than the cap."""
    config = _config("run.updates=3", "harness.sandboxes=16", "deck.replay_size=0")
    assert config.run.max_off_policy == RunConfig().run.max_off_policy == 1
    records = run_training(config, prepare_run_dir(tmp_path / "run", config, resume=False),
                          world.inputs).records  # fmt: skip
    assert sum(r.stale_dropped for r in records) >= 1, [r.stale_dropped for r in records]
    assert max(r.lag_max for r in records) <= 1


class FailingEngine(TorchEngine):
    """A real torch engine whose first ``generate`` raises (a crashed inference server)."""

    failures = 0

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if FailingEngine.failures == 0:
            FailingEngine.failures += 1
            raise RuntimeError("injected engine crash")
        return await super().generate(request)


def test_an_engine_that_raises_has_its_group_re_leased(world: World, tmp_path: Path) -> None:
    config = _config("run.updates=2")
    run = prepare_run_dir(tmp_path / "run", config, resume=False)

    def factory(index: int, model: nn.Module, cfg: EngineConfig, version: int) -> RunEngine:
        kind = FailingEngine if index == 0 else TorchEngine
        return kind(model, cfg, version=version)

    FailingEngine.failures = 0
    result = run_training(config, run, world.inputs, engine_factory=factory)
    assert FailingEngine.failures == 1
    _assert_complete(result.records, 2)
    # the router fails every lease on the crashed engine; each of those groups is re-leased
    # onto the healthy engine and rerun whole, so no rollout is lost
    assert sum(r.requeued_groups for r in result.records) >= 1
    assert sum(r.dropped_rollouts for r in result.records) == 0
    lost = sum(r.lost_rollouts for r in result.records)
    assert lost >= 2  # the crashed turn's whole group of 2: its work was lost ...
    assert sum(r.released_rollouts for r in result.records) == lost  # ... and re-leased
    assert all(r.rollouts == 2 * 2 for r in result.records)


def test_a_stale_group_beyond_the_cap_is_dropped_and_counted(world: World, tmp_path: Path) -> None:
    # Cap 0: any group sampled before the latest step is stale. The look-ahead batch is
    # generated under version 0 while step 1 trains, so it reaches the trainer at version 1.
    config = _config("run.max_off_policy=0", "run.updates=2")
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    result = run_training(config, run, world.inputs)
    _assert_complete(result.records, 2)
    assert result.records[0].stale_dropped == 0
    assert result.records[1].stale_dropped >= 1
    assert all(r.lag_max == 0 for r in result.records)


class ExpertEngine:
    """A ``RunEngine`` that answers with the scripted expert's turns for the task whose
    prompt it recognises. A random policy ends every episode at its first (invalid) turn and
    never touches the sandbox; the expert reaches the tools, which is what a sandbox failure
    needs. It speaks the same protocol as the torch engine (tokens in, tokens + log-probs out,
    the policy version)."""

    def __init__(self, engine_id: str, tasks: Sequence[DeckTask], tokenizer: object) -> None:
        self.engine_id, self.capacity, self.in_flight, self.version = engine_id, 8, 0, 0
        self.tokenizer = tokenizer
        self.stop = special_id(tokenizer, IM_END)  # type: ignore[arg-type]
        harness = harness_config(_config())
        self.scripts = {
            tuple(encode(tokenizer, prompt_text(t.spec, harness))): expert_turns(t)  # type: ignore[arg-type]
            for t in tasks
        }

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        await asyncio.sleep(0)
        for prompt, turns in self.scripts.items():
            if request.prompt_ids[: len(prompt)] == prompt:
                # each earlier turn left two <|im_end|>: its stop token and its observation's
                turn = sum(1 for t in request.prompt_ids[len(prompt) :] if t == self.stop) // 2
                ids = (*encode(self.tokenizer, turns[turn]), self.stop)  # type: ignore[arg-type]
                return GenerateResult(
                    token_ids=ids, logprobs=(-0.5,) * len(ids), policy_version=self.version
                )
        raise AssertionError("unknown prompt")

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        self.version = version

    async def close(self) -> None:
        """Nothing to release (the ``RunEngine`` lifecycle)."""


class KillingPool(SandboxPool):
    """The real pool; the first ``kills`` sandboxes it hands out are killed (closed: process
    group killed, namespace torn down) right after the rollout's first tool call starts."""

    def __init__(self, *args: object, kills: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.kills = kills
        self.killed = 0

    async def acquire(self, task: TaskSpec) -> AsyncSandbox:
        handle = await super().acquire(task)
        if self.killed < self.kills:
            self.killed += 1
            run_tool = handle.execute_bash

            async def killed_during_call(command: str, timeout: float | None = None):  # type: ignore[no-untyped-def]
                call = asyncio.ensure_future(run_tool("sleep 5", timeout))
                await asyncio.sleep(0.2)
                await handle.close()
                return await call

            handle.execute_bash = killed_during_call  # type: ignore[method-assign]
        return handle


def test_a_sandbox_killed_mid_rollout_drops_that_rollout(world: World, tmp_path: Path) -> None:
    config = _config("run.updates=2")
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    from arctic_swe.chat import load_tokenizer

    tokenizer = load_tokenizer(world.inputs.policy_dir)

    def factory(index: int, model: nn.Module, cfg: EngineConfig, version: int) -> RunEngine:
        return ExpertEngine(cfg.engine_id, world.pool, tokenizer)

    pools: list[KillingPool] = []
    original = run_training.__globals__["open_components"].__wrapped__.__globals__

    def make_pool(backend: object, **kwargs: object) -> KillingPool:
        pool = KillingPool(backend, kills=1, **kwargs)
        pools.append(pool)
        return pool

    saved = original["SandboxPool"]
    original["SandboxPool"] = make_pool
    try:
        result = run_training(config, run, world.inputs, engine_factory=factory)
    finally:
        original["SandboxPool"] = saved
    assert pools[0].killed == 1
    _assert_complete(result.records, 2)
    assert sum(r.dropped_rollouts for r in result.records) == 1
    assert sum(r.rollouts for r in result.records) == 2 * 2 * 2 - 1
    assert max(r.reward for r in result.records) == 1.0  # the surviving expert rollouts solve


def test_the_logged_layer_type_kl_is_a_direct_mismatch_audit(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each update's kl_* figures equal hybrid-numerics' mismatch_audit on the trainer's model
    as it was audited and the first trained rollout's window; ω quantiles are logged too."""
    import copy

    from arctic_swe.trainer import audit_layer_types, audit_window
    from hybrid_numerics import mismatch_audit

    seen: list[tuple[object, object, int]] = []
    audit = audit_layer_types

    def spy(model, sample, tokens):  # type: ignore[no-untyped-def]
        seen.append((copy.deepcopy(model), sample, tokens))
        return audit(model, sample, tokens)

    # the in-process trainer handle is what calls the audit
    monkeypatch.setattr("arctic_swe.trainer._handle.audit_layer_types", spy)
    config = _config(
        "run.updates=2", "metrics.kl_by_layer_every=1", "metrics.kl_by_layer_tokens=16"
    )
    run = prepare_run_dir(tmp_path / "run", config, resume=False)
    records = run_training(config, run, world.inputs).records
    assert len(seen) == len(records) == 2
    for record, (model, sample, tokens) in zip(records, seen, strict=True):
        ids, prompt_len = audit_window(sample, tokens)  # type: ignore[arg-type]
        direct = mismatch_audit(model, ids, prompt_len=prompt_len, compare_bf16_state=False)  # type: ignore[arg-type]
        # Exact: the trainer's model owns aligned storage (load_policy), as its copy does.
        assert record.kl_audit_overall == direct.overall
        assert record.kl_linear_attention == direct.by_layer_type["linear_attention"]
        assert record.kl_full_attention == direct.by_layer_type["full_attention"]
        assert record.kl_audit_tokens == ids.shape[1] - prompt_len
        assert 0 < record.omega_min <= record.omega_p1 <= record.omega_p50 <= record.omega_max
    assert MetricsLog(run.metrics).read() == list(records)
