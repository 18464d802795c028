"""A seeded, deterministic discrete-event simulator of asynchronous agent RL (paper §3.3).

It drives the real :class:`Router` (``try_acquire`` / ``release`` with the real placement
policies) and the real :class:`PolicyClock`; only the engines, rollouts and trainer are
simulated. Same config and seed → the same event order and the same figures, bit for bit: no
wall clock, no unordered iteration, ties broken by insertion sequence.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from typing import cast

from load_router._engine import PlacementOnlyEngine
from load_router._policies import LeastLoaded, PlacementPolicy, RoundRobin, SessionHash
from load_router._router import Router
from load_router._sim_config import SimConfig, SimResult
from load_router._sim_parts import SimEngine, SimGroup, SimRollout, SimTrainer

_EPS = 1e-9


def _policy(name: str) -> PlacementPolicy:
    if name == "least-loaded":
        return LeastLoaded()
    if name == "session-hash":
        return SessionHash()
    return RoundRobin()


class _Simulation:
    def __init__(self, config: SimConfig) -> None:
        self.cfg = config
        self.rng = random.Random(config.seed)
        self.now = 0.0
        self.events: list[tuple[float, int, str, object]] = []
        self._event_seq = 0
        capacity = config.max_resident_per_engine or 1 << 30
        handles = [PlacementOnlyEngine(f"engine-{i}", capacity) for i in range(config.engines)]
        self.router = Router(handles, policy=_policy(config.policy))
        self.engines = {h.engine_id: SimEngine(h.engine_id, config) for h in handles}
        self.pending: deque[SimGroup] = deque()
        self.trainer = SimTrainer(config)
        self.outstanding = 0
        self.next_group = 0
        self.peak_rollouts = 0
        self.window_start = (0.0, 0.0)  # (time, tokens decoded) when measurement starts
        self.task_factors = [
            self.rng.lognormvariate(0.0, config.task_length_sigma) for _ in range(config.tasks)
        ]

    # ------------------------------------------------------------ scheduling
    def at(self, when: float, kind: str, payload: object) -> None:
        heapq.heappush(self.events, (when, self._event_seq, kind, payload))
        self._event_seq += 1

    def _new_group(self) -> SimGroup:
        cfg, rng = self.cfg, self.rng
        task = rng.randrange(cfg.tasks)
        turns_mu = math.log(cfg.turns_median * self.task_factors[task])
        rollouts = []
        for _ in range(cfg.group_size):
            turns = min(cfg.max_turns, max(1, round(rng.lognormvariate(turns_mu, cfg.turns_sigma))))
            plan = [
                (
                    min(
                        cfg.max_tokens_per_turn,
                        max(
                            1,
                            round(
                                rng.lognormvariate(math.log(cfg.tokens_median), cfg.tokens_sigma)
                            ),
                        ),
                    ),
                    rng.lognormvariate(math.log(cfg.tool_median_s), cfg.tool_sigma)
                    if cfg.tool_median_s > 0
                    else 0.0,
                )
                for _ in range(turns)
            ]
            rollouts.append(SimRollout(plan, cfg.prompt_tokens))
        group = SimGroup(f"group-{self.next_group}", f"task-{task}", rollouts)
        self.next_group += 1
        return group

    def top_up(self) -> None:
        """Keep ``max_outstanding_groups`` groups queued, running or buffered."""
        while self.outstanding < self.cfg.max_outstanding_groups:
            self.pending.append(self._new_group())
            self.outstanding += 1
        self.start_pending()

    def start_pending(self) -> None:
        while self.pending:
            group = self.pending[0]
            lease = self.router.try_acquire(group.session_key, len(group.rollouts))
            if lease is None:
                return  # FIFO: the head waits, nobody overtakes it
            self.pending.popleft()
            group.lease = lease
            engine = self.engines[lease.engine_id]
            engine.advance(self.now)
            for rollout in group.rollouts:
                rollout.group = group
                engine.admit(rollout)
            engine.recompute_rate()
            self.peak_rollouts = max(self.peak_rollouts, engine.active)

    # ------------------------------------------------------------ handlers
    def on_turn_end(self, engine: SimEngine, rollout: SimRollout) -> None:
        engine.finish_turn(rollout)
        if rollout.turns_left():
            self.at(self.now + rollout.tool_s(), "tool", rollout)
            return
        engine.active -= 1
        group = rollout.group
        assert group is not None
        assert group.lease is not None
        group.remaining -= 1
        if group.remaining == 0:
            self.router.release(group.lease)
            self.trainer.buffer.append(group)
            self.start_pending()
            self.trainer_poll()

    def on_tool_done(self, rollout: SimRollout) -> None:
        engine = self.engines[rollout.engine_id]
        engine.advance(self.now)
        engine.start_turn(rollout)
        engine.recompute_rate()

    def trainer_poll(self) -> None:
        pulled = self.trainer.pull()
        self.outstanding -= pulled
        if pulled:
            self.top_up()
        if self.trainer.batch_ready():
            self.at(self.now + self.trainer.start_training(self.now), "trained", None)

    def on_trained(self) -> None:
        version = self.trainer.finish_training(self.now)
        if version == self.cfg.warmup_updates:
            self.window_start = (self.now, self._tokens_decoded())
        for engine in self.engines.values():
            done_at = engine.begin_refresh(self.now, version)
            self.at(done_at, "refreshed", (engine, version))
        self.trainer_poll()

    def _tokens_decoded(self) -> float:
        for engine in self.engines.values():
            engine.advance(self.now)
        return sum(e.tokens_total for e in self.engines.values())

    def on_refreshed(self, engine: SimEngine, version: int) -> None:
        engine.end_refresh(self.now, version)

    # ------------------------------------------------------------ main loop
    def run(self) -> SimResult:
        self.top_up()
        engines = list(self.engines.values())
        while self.trainer.clock.version < self.cfg.updates:
            soonest = min(engines, key=lambda e: e.next_completion())
            engine_time = soonest.next_completion()
            event_time = self.events[0][0] if self.events else math.inf
            if math.isinf(engine_time) and math.isinf(event_time):
                raise RuntimeError("simulation deadlocked: nothing is running or scheduled")
            if engine_time <= event_time:
                self.now = engine_time
                soonest.advance(self.now)
                for rollout in soonest.pop_finished(_EPS):
                    self.on_turn_end(soonest, rollout)
                soonest.recompute_rate()
                continue
            when, _, kind, payload = heapq.heappop(self.events)
            self.now = when
            if kind == "tool":
                assert isinstance(payload, SimRollout)
                self.on_tool_done(payload)
            elif kind == "trained":
                self.on_trained()
            else:
                engine, version = cast(tuple[SimEngine, int], payload)
                self.on_refreshed(engine, version)
        return self.result()

    def result(self) -> SimResult:
        cfg, trainer = self.cfg, self.trainer
        measured = trainer.records[cfg.warmup_updates :]
        kept = sum(u.kept for u in measured)
        offered = max(1, sum(u.kept + u.dropped for u in measured))
        start_time, start_tokens = self.window_start
        window = self.now - start_time
        tokens = self._tokens_decoded() - start_tokens
        lag_stats = self.trainer.clock.history[cfg.warmup_updates :]
        token_lag = sum(s.mean_token_lag for s in lag_stats) / len(lag_stats)
        return SimResult(
            config=cfg,
            updates=tuple(measured),
            stale_drops_per_update=sum(u.dropped for u in measured) / len(measured),
            mean_lag=sum(u.mean_offered_lag * (u.kept + u.dropped) for u in measured) / offered,
            mean_kept_lag=sum(u.mean_lag * u.kept for u in measured) / kept if kept else 0.0,
            max_lag=max(u.max_lag for u in measured),
            mean_token_lag=token_lag,
            update_s=sum(u.update_s for u in measured) / len(measured),
            waiting_s=sum(u.waiting_s for u in measured) / len(measured),
            training_s=sum(u.training_s for u in measured) / len(measured),
            tokens_per_s=tokens / window if window > 0 else 0.0,
            stale_cache_tokens=sum(e.stale_cache_tokens for e in self.engines.values()),
            refresh_pause_s=sum(e.pause_total for e in self.engines.values())
            / max(1, cfg.engines * cfg.updates),
            peak_engine_rollouts=self.peak_rollouts,
            simulated_s=self.now,
        )


def simulate(config: SimConfig | None = None) -> SimResult:
    """Run one seeded discrete-event simulation and return its measured figures.

    See :class:`SimConfig` for the model. Deterministic: equal configs give equal results.
    """
    return _Simulation(config or SimConfig()).run()
