"""A hypothesis state machine drives a Deck against a deliberately simple model.

Checked after every step: a retired task is never sampled; the easy/hard rules fire exactly when
due and never otherwise; training counts are conserved (every recorded rollout is counted once,
replay rollouts never leak in); active + retired = all tasks; within a pass no task repeats and a
finished pass covered every task that stayed active through it; and a save/load round trip (run
mid-sequence) changes nothing the machine can observe.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deck_evictor import Deck, EvictionRules, ReplayPolicy, RetireReason
from deck_evictor._persist import decode, encode

TASKS = [f"t{i}" for i in range(9)]


class DeckMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.deck = Deck(TASKS, seed=0)
        self.rules = EvictionRules()
        self.status: dict[str, RetireReason | None] = {}
        self.zero_run: dict[str, int] = {}
        self.attempts: dict[str, int] = {}
        self.successes: dict[str, int] = {}
        self.pass_members: dict[int, set[str]] = {}
        self.pass_expected: dict[int, set[str]] = {}

    @initialize(
        easy=st.sampled_from(["first_all_correct", None]),
        hard=st.sampled_from([None, 1, 2, 3]),
        min_group=st.integers(1, 3),
        reactivate_below=st.sampled_from([None, 0.5]),
        seed=st.integers(0, 2**32),
    )
    def build(
        self,
        easy: str | None,
        hard: int | None,
        min_group: int,
        reactivate_below: float | None,
        seed: int,
    ) -> None:
        self.rules = EvictionRules(easy=easy, hard_consecutive_zero=hard, min_group_size=min_group)  # type: ignore[arg-type]
        replay = ReplayPolicy(every=1, size=3, min_age=0, reactivate_below=reactivate_below)
        self.deck = Deck(TASKS, rules=self.rules, replay=replay, seed=seed)
        self.status = dict.fromkeys(TASKS)
        self.zero_run = dict.fromkeys(TASKS, 0)
        self.attempts = dict.fromkeys(TASKS, 0)
        self.successes = dict.fromkeys(TASKS, 0)

    def active(self) -> set[str]:
        return {t for t, s in self.status.items() if s is None}

    def due(self, task_id: str, wins: int, n: int) -> RetireReason | None:
        if self.status[task_id] is not None or n < self.rules.min_group_size:
            return None
        if self.rules.easy is not None and wins == n:
            return RetireReason.EASY
        hard = self.rules.hard_consecutive_zero
        if hard is not None and self.zero_run[task_id] >= hard:
            return RetireReason.HARD
        return None

    @rule(k=st.integers(0, 12))
    def sample(self, k: int) -> None:
        pass_before = self.deck.pass_index
        draw = self.deck.sample(k)
        active = self.active()
        assert set(draw.task_ids) <= active, "a retired task was sampled"
        assert len(set(draw.task_ids)) == len(draw.task_ids)
        assert len(draw.task_ids) == min(k, len(active))
        assert draw.exhausted == (len(active) < k)
        split = len(draw.task_ids) if draw.new_pass_at is None else draw.new_pass_at
        self.pass_members.setdefault(pass_before, set())
        for task_id in draw.task_ids[:split]:
            assert task_id not in self.pass_members[pass_before], "repeat within a pass"
            self.pass_members[pass_before].add(task_id)
        if draw.new_pass_at is not None:
            finished = self.pass_expected.get(pass_before, set())
            assert finished <= self.pass_members[pass_before], "a pass skipped an active task"
            self.pass_expected[draw.pass_index] = set(active)
            self.pass_members[draw.pass_index] = set(draw.task_ids[split:])

    @rule(task_id=st.sampled_from(TASKS), n=st.integers(1, 4), data=st.data())
    def record(self, task_id: str, n: int, data: st.DataObject) -> None:
        wins = data.draw(st.integers(0, n))
        self.attempts[task_id] += n
        self.successes[task_id] += wins
        self.zero_run[task_id] = self.zero_run[task_id] + 1 if wins == 0 else 0
        expected = self.due(task_id, wins, n)
        retirement = self.deck.record(task_id, wins, n)
        assert (None if retirement is None else retirement.reason) is expected
        if expected is not None:
            self.status[task_id] = expected
            for members in self.pass_expected.values():
                members.discard(task_id)

    @precondition(lambda self: any(s is not None for s in self.status.values()))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        due = self.deck.replay_schedule()
        retired = {t for t, s in self.status.items() if s is not None}
        assert set(due) <= retired
        if not due:
            return
        task_id = data.draw(st.sampled_from(due))
        n = data.draw(st.integers(1, 4))
        wins = data.draw(st.integers(0, n))
        outcome = self.deck.record_replay(task_id, wins, n)
        threshold = self.deck.replay_policy.reactivate_below
        expect_back = (
            self.status[task_id] is RetireReason.EASY
            and threshold is not None
            and wins / n < threshold
        )
        assert outcome.reactivated == expect_back
        if expect_back:
            self.status[task_id] = None
            self.zero_run[task_id] = 0

    @rule()
    def advance(self) -> None:
        self.deck.advance()

    @rule()
    def save_and_reload(self) -> None:
        before = self.deck.state_dict()
        self.deck = Deck.from_state_dict(decode(encode(before)))
        assert self.deck.state_dict() == before

    @invariant()
    def counts_are_conserved(self) -> None:
        stats = [self.deck.stats(t) for t in TASKS]
        assert sum(s.attempts for s in stats) == sum(self.attempts.values())
        assert sum(s.successes for s in stats) == sum(self.successes.values())
        assert self.deck.active_count + len(self.deck.retired) == len(TASKS)

    @invariant()
    def statuses_match_the_model(self) -> None:
        assert set(self.deck.active_ids) == self.active()
        assert {t: r.reason for t, r in self.deck.retired.items()} == {
            t: s for t, s in self.status.items() if s is not None
        }


TestDeckMachine = DeckMachine.TestCase
