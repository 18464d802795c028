"""The simulated parts driven by :mod:`load_router._simulate`: engines, rollouts, trainer."""

from __future__ import annotations

import heapq
import math
from collections import deque

from load_router._lease import Lease
from load_router._sim_config import SimConfig, UpdateRecord
from load_router._versions import GroupRecord, PolicyClock, TokenVersions


class SimRollout:
    """One multi-turn rollout: a plan of ``(tokens, tool seconds)`` per turn."""

    def __init__(self, plan: list[tuple[int, float]], prompt_tokens: int) -> None:
        self.plan = plan
        self.turn = 0
        self.versions = TokenVersions()
        self.context = prompt_tokens  # tokens an engine must re-prefill after invalidation
        self.engine_id = ""
        self.group: SimGroup | None = None
        self.start_service = 0.0  # engine service counter when the current turn began
        self.turn_flushed = 0  # tokens of the current turn already recorded
        self.stale_cache = False  # cache holds state computed under older weights

    @property
    def turn_tokens(self) -> int:
        return self.plan[self.turn][0]

    def tool_s(self) -> float:
        """Tool latency after the turn that just finished."""
        return self.plan[self.turn - 1][1]

    def turns_left(self) -> bool:
        return self.turn < len(self.plan)


class SimGroup:
    """n rollouts of one task, leased together; done when the last rollout ends."""

    def __init__(self, group_id: str, session_key: str, rollouts: list[SimRollout]) -> None:
        self.group_id = group_id
        self.session_key = session_key
        self.rollouts = rollouts
        self.remaining = len(rollouts)
        self.lease: Lease | None = None

    def record(self) -> GroupRecord:
        return GroupRecord(self.group_id, tuple(r.versions for r in self.rollouts))

    @property
    def tokens(self) -> int:
        return sum(r.versions.num_tokens for r in self.rollouts)


class SimEngine:
    """A processor-sharing engine whose per-sequence speed drops with concurrency.

    ``service`` is the number of tokens every decoding sequence has received since the engine
    started (all decoding sequences advance at the same rate), so a turn of L tokens started at
    service s ends when service reaches s + L: a heap of those targets gives the next completion
    in O(log n) without touching every sequence on every event.
    """

    def __init__(self, engine_id: str, config: SimConfig) -> None:
        self.engine_id = engine_id
        self.cfg = config
        self.service = 0.0
        self.t_last = 0.0
        self.rate = 0.0
        self.version = 0
        self.paused = False
        self.paused_until = 0.0
        self.pause_total = 0.0
        self.tokens_total = 0.0
        self.stale_cache_tokens = 0
        self.active = 0
        self.resident: dict[int, SimRollout] = {}
        self._heap: list[tuple[float, int, SimRollout]] = []
        self._seq = 0

    def advance(self, now: float) -> None:
        elapsed = now - self.t_last
        self.service += self.rate * elapsed
        self.tokens_total += self.rate * elapsed * len(self._heap)
        self.t_last = now

    def recompute_rate(self) -> None:
        if self.paused or not self._heap:
            self.rate = 0.0
            return
        cfg = self.cfg
        rate = cfg.peak_tokens_per_s / (len(self._heap) + cfg.knee)
        if self.active > cfg.kv_slots:  # KV cache over-subscribed: preemption and recompute
            rate *= (cfg.kv_slots / self.active) ** cfg.thrash_exponent
        self.rate = rate

    def next_completion(self) -> float:
        if not self._heap or self.rate == 0.0:
            return math.inf
        return self.t_last + max(0.0, self._heap[0][0] - self.service) / self.rate

    def admit(self, rollout: SimRollout) -> None:
        rollout.engine_id = self.engine_id
        self.active += 1
        self.resident[id(rollout)] = rollout
        self.start_turn(rollout)

    def start_turn(self, rollout: SimRollout) -> None:
        rollout.start_service = self.service
        rollout.turn_flushed = 0
        heapq.heappush(self._heap, (self.service + rollout.turn_tokens, self._seq, rollout))
        self._seq += 1

    def pop_finished(self, eps: float) -> list[SimRollout]:
        done = []
        while self._heap and self._heap[0][0] - self.service <= eps * max(1.0, self.service):
            done.append(heapq.heappop(self._heap)[2])
        return done

    def _record(self, rollout: SimRollout, tokens: int) -> None:
        rollout.versions.append(self.version, tokens)
        if rollout.stale_cache:
            self.stale_cache_tokens += tokens

    def finish_turn(self, rollout: SimRollout) -> None:
        self._record(rollout, rollout.turn_tokens - rollout.turn_flushed)
        rollout.context += rollout.turn_tokens + self.cfg.observation_tokens
        rollout.turn += 1
        if not rollout.turns_left():
            del self.resident[id(rollout)]

    def begin_refresh(self, now: float, version: int) -> float:
        """Pause for a refresh to ``version``; return when the engine resumes."""
        self.advance(now)
        for _, _, rollout in self._heap:  # tokens so far belong to the old weights
            done = min(rollout.turn_tokens, math.floor(self.service - rollout.start_service))
            self._record(rollout, done - rollout.turn_flushed)
            rollout.turn_flushed = done
        duration = self.cfg.weight_load_s
        for rollout in self.resident.values():
            if self.cfg.invalidate_caches:
                rollout.stale_cache = False
                duration += rollout.context / self.cfg.prefill_tokens_per_s
            else:
                rollout.stale_cache = True
        self.paused = True
        self.paused_until = max(now, self.paused_until) + duration
        self.pause_total += duration
        self.recompute_rate()
        return self.paused_until

    def end_refresh(self, now: float, version: int) -> None:
        self.version = max(self.version, version)
        if now >= self.paused_until - 1e-9:
            self.advance(now)
            self.paused = False
            self.recompute_rate()


class SimTrainer:
    """Consumes ``groups_per_update`` fresh groups per update, dropping stale ones on the way."""

    def __init__(self, config: SimConfig) -> None:
        self.cfg = config
        self.clock = PolicyClock(max_off_policy=config.max_off_policy)
        self.buffer: deque[SimGroup] = deque()
        self.batch: list[GroupRecord] = []
        self.training = False
        self.wait_start = 0.0
        self.waiting_s = 0.0
        self.training_s = 0.0
        self.records: list[UpdateRecord] = []

    def pull(self) -> int:
        """Screen buffered groups into the batch until it is full; return how many left."""
        if self.training:
            return 0
        pulled = 0
        while self.buffer and len(self.batch) < self.cfg.groups_per_update:
            group = self.buffer.popleft()
            pulled += 1
            self.batch.extend(self.clock.screen([group.record()]).kept)
        return pulled

    def batch_ready(self) -> bool:
        return not self.training and len(self.batch) >= self.cfg.groups_per_update

    def start_training(self, now: float) -> float:
        self.training = True
        self.waiting_s = now - self.wait_start
        tokens = sum(g.num_tokens for g in self.batch)
        self.training_s = self.cfg.train_fixed_s + self.cfg.train_s_per_token * tokens
        return self.training_s

    def finish_training(self, now: float) -> int:
        version = self.clock.advance()
        stats = self.clock.history[-1]
        self.records.append(
            UpdateRecord(
                version=stats.version,
                kept=stats.kept,
                dropped=stats.dropped,
                mean_lag=stats.mean_lag,
                max_lag=stats.max_lag,
                mean_offered_lag=stats.mean_offered_lag,
                waiting_s=self.waiting_s,
                training_s=self.training_s,
            )
        )
        self.training = False
        self.batch = []
        self.wait_start = now
        return version
