"""The deck contract as a hypothesis state machine over a user's :class:`TaskPool`.

The machine drives the pool with draws, training groups, replay probes, clock advances and
(when a ``reload`` is given) persistence round trips, against a deliberately simple model: each
task's status, zero-run and counts. Checked after every step: a retired task is never sampled;
the easy/hard rules fire exactly when due and never otherwise; training counts are conserved
(every recorded rollout counted once, replay rollouts never leak in); active + retired = all
tasks; no task is both retired and active; the mastery rule never retires a task short of its
streak of all-correct groups; a retired task comes back only through a replay probe whose rate
the policy calls a failure (and it is then counted as reactivated); within a pass no task
repeats and a finished pass covered every task that stayed active through it; a reload changes
nothing observable and continues the same draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deck_evictor._config import EvictionRules, ReplayPolicy, RetireReason
from deck_evictor._errors import InvalidConfigError
from deck_evictor._pool import MakePool, TaskPool
from deck_evictor._records import Draw

TASKS = tuple(f"t{i}" for i in range(9))

#: Persists a pool and loads it back (through your real storage), returning the loaded pool.
Reload = Callable[[Any], Any]


class DeckContractViolationError(AssertionError):
    """A pool broke the deck contract; the message says which clause and where."""


def check(condition: bool, message: str) -> None:
    """Raise :class:`DeckContractViolationError` unless ``condition`` (unlike ``assert``, survives ``-O``)."""
    if not condition:
        raise DeckContractViolationError(message)


def _observe(pool: TaskPool) -> tuple[object, ...]:
    """Everything the contract lets a caller see of a pool, for before/after comparisons."""
    return (
        pool.task_ids,
        dict(pool.retired),
        pool.active_ids,
        pool.active_count,
        pool.update,
        pool.pass_index,
        pool.replay_policy,
        [pool.stats(t) for t in pool.task_ids],
        pool.replay_schedule(),
    )


class DeckContractMachine(RuleBasedStateMachine):
    """Base machine; build concrete ones with :func:`deck_contract`."""

    make_pool: MakePool
    reload: Reload | None = None

    def __init__(self) -> None:
        super().__init__()
        self.pool: TaskPool | None = None
        self.eviction = EvictionRules()
        self.status: dict[str, RetireReason | None] = {}
        self.zero_run: dict[str, int] = {}
        self.correct_run: dict[str, int] = {}
        self.reactivated: dict[str, int] = {}
        self.attempts: dict[str, int] = {}
        self.successes: dict[str, int] = {}
        self.pass_members: dict[int, set[str]] = {}
        self.pass_expected: dict[int, set[str]] = {}

    @property
    def deck(self) -> TaskPool:
        assert self.pool is not None  # set by the @initialize rule
        return self.pool

    @initialize(
        easy=st.sampled_from(["first_all_correct", "mastered", None]),
        hard=st.sampled_from([None, 1, 2, 3]),
        min_group=st.integers(1, 3),
        mastered_groups=st.integers(1, 3),
        reactivate_below=st.sampled_from([None, 0.5]),
        reactivate_hard=st.sampled_from([None, 0.5]),
        seed=st.integers(0, 2**32),
    )
    def build(
        self,
        easy: Any,
        hard: int | None,
        min_group: int,
        mastered_groups: int,
        reactivate_below: float | None,
        reactivate_hard: float | None,
        seed: int,
    ) -> None:
        self.eviction = EvictionRules(
            easy=easy,
            hard_consecutive_zero=hard,
            min_group_size=min_group,
            mastered_groups=mastered_groups,
        )
        replay = ReplayPolicy(
            every=1,
            size=3,
            min_age=0,
            reactivate_below=reactivate_below,
            reactivate_hard_at_or_above=reactivate_hard,
        )
        self.pool = type(self).make_pool(TASKS, rules=self.eviction, replay=replay, seed=seed)
        check(tuple(self.deck.task_ids) == TASKS, f"pool holds {self.deck.task_ids}, not {TASKS}")
        self.status = dict.fromkeys(TASKS)
        self.zero_run = dict.fromkeys(TASKS, 0)
        self.correct_run = dict.fromkeys(TASKS, 0)
        self.reactivated = dict.fromkeys(TASKS, 0)
        self.attempts = dict.fromkeys(TASKS, 0)
        self.successes = dict.fromkeys(TASKS, 0)

    def active(self) -> set[str]:
        return {t for t, s in self.status.items() if s is None}

    def due(self, task_id: str, wins: int, n: int) -> RetireReason | None:
        if self.status[task_id] is not None or n < self.eviction.min_group_size:
            return None
        if self.eviction.easy is not None and self.correct_run[task_id] >= self.streak_needed():
            return RetireReason.EASY
        hard = self.eviction.hard_consecutive_zero
        if hard is not None and self.zero_run[task_id] >= hard:
            return RetireReason.HARD
        return None

    def streak_needed(self) -> int:
        """All-correct groups in a row the mastery rule asks for (the rule spelled out)."""
        return self.eviction.mastered_groups if self.eviction.easy == "mastered" else 1

    def reactivates(self, task_id: str, rate: float) -> bool:
        policy = self.deck.replay_policy
        reason = self.status[task_id]
        if reason is RetireReason.EASY and policy.reactivate_below is not None:
            return rate < policy.reactivate_below
        if reason is RetireReason.HARD and policy.reactivate_hard_at_or_above is not None:
            return rate >= policy.reactivate_hard_at_or_above
        return False

    # ---------------------------------------------------------------- rules
    @rule(k=st.integers(0, 12))
    def sample(self, k: int) -> None:
        self.check_draw(self.deck.pass_index, self.deck.sample(k), k)

    def check_draw(self, pass_before: int, draw: Draw, k: int) -> None:
        active = self.active()
        drawn = set(draw.task_ids)
        check(drawn <= active, f"sample({k}) handed out retired task(s) {sorted(drawn - active)}")
        check(len(drawn) == len(draw.task_ids), f"sample({k}) repeated a task: {draw.task_ids}")
        check(
            len(draw.task_ids) == min(k, len(active)),
            f"sample({k}) gave {len(draw.task_ids)} tasks with {len(active)} active",
        )
        check(draw.exhausted == (len(active) < k), f"sample({k}) misreported exhaustion")
        split = len(draw.task_ids) if draw.new_pass_at is None else draw.new_pass_at
        members = self.pass_members.setdefault(pass_before, set())
        for task_id in draw.task_ids[:split]:
            check(task_id not in members, f"{task_id} repeated within pass {pass_before}")
            members.add(task_id)
        if draw.new_pass_at is not None:
            skipped = self.pass_expected.get(pass_before, set()) - members
            check(not skipped, f"pass {pass_before} skipped active task(s) {sorted(skipped)}")
            self.pass_expected[draw.pass_index] = set(active)
            self.pass_members[draw.pass_index] = set(draw.task_ids[split:])

    @rule(task_id=st.sampled_from(TASKS), n=st.integers(1, 4), data=st.data())
    def record(self, task_id: str, n: int, data: st.DataObject) -> None:
        wins = data.draw(st.integers(0, n))
        self.attempts[task_id] += n
        self.successes[task_id] += wins
        self.zero_run[task_id] = self.zero_run[task_id] + 1 if wins == 0 else 0
        self.correct_run[task_id] = self.correct_run[task_id] + 1 if wins == n else 0
        expected = self.due(task_id, wins, n)
        retired_before = set(self.deck.retired)
        retirement = self.deck.record(task_id, wins, n)
        check(
            not retired_before - set(self.deck.retired),
            f"record({task_id!r}, ...) brought back {sorted(retired_before - set(self.deck.retired))}"
            " (only a failed replay probe may re-activate a task)",
        )
        got = None if retirement is None else retirement.reason
        if got is RetireReason.EASY and self.eviction.easy is not None:
            check(
                self.correct_run[task_id] >= self.streak_needed(),
                f"{task_id} retired as mastered after {self.correct_run[task_id]} all-correct "
                f"group(s) in a row; {self.eviction} needs {self.streak_needed()}",
            )
        check(
            got is expected,
            f"record({task_id!r}, {wins}, {n}) retired it as {got}, the rules say {expected} "
            f"({self.eviction})",
        )
        if expected is not None:
            self.status[task_id] = expected
            for members in self.pass_expected.values():
                members.discard(task_id)

    @precondition(lambda self: any(s is not None for s in self.status.values()))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        due = self.deck.replay_schedule()
        retired = {t for t, s in self.status.items() if s is not None}
        check(set(due) <= retired, f"replay_schedule() lists active task(s) {set(due) - retired}")
        if not due:
            return
        task_id = data.draw(st.sampled_from(due))
        n = data.draw(st.integers(1, 4))
        wins = data.draw(st.integers(0, n))
        retired_before = set(self.deck.retired)
        outcome = self.deck.record_replay(task_id, wins, n)
        expect_back = self.reactivates(task_id, wins / n)
        back = retired_before - set(self.deck.retired)
        check(
            back == ({task_id} if expect_back else set()),
            f"probe {wins}/{n} of {task_id} brought back {sorted(back)}",
        )
        check(
            outcome.reactivated == expect_back,
            f"probe {wins}/{n} of {self.status[task_id]} task {task_id}: reactivated="
            f"{outcome.reactivated}, the replay policy says {expect_back}",
        )
        if expect_back:
            self.status[task_id] = None
            self.zero_run[task_id] = 0
            self.correct_run[task_id] = 0
            self.reactivated[task_id] += 1

    @rule()
    def advance(self) -> None:
        before = self.deck.update
        check(self.deck.advance() == before + 1, "advance() did not move the clock by one")

    @precondition(lambda self: type(self).reload is not None)
    @rule(k=st.integers(0, 5))
    def reload_and_continue(self, k: int) -> None:
        reload = type(self).reload
        assert reload is not None
        before = _observe(self.deck)
        reloaded: TaskPool = reload(self.deck)
        after = _observe(reloaded)
        names = (
            "task ids",
            "retired tasks",
            "active ids",
            "active count",
            "update clock",
            "pass index",
            "replay policy",
            "task statistics",
            "replay schedule",
        )
        for name, old, new in zip(names, before, after, strict=True):
            check(old == new, f"reload changed the {name}: {old!r} -> {new!r}")
        pass_before = reloaded.pass_index
        original, resumed = self.deck.sample(k), reloaded.sample(k)
        check(original == resumed, f"after reload sample({k}) drew {resumed}, not {original}")
        self.pool = reloaded
        self.check_draw(pass_before, resumed, k)

    # ---------------------------------------------------------------- invariants
    @invariant()
    def counts_are_conserved(self) -> None:
        if self.pool is None:
            return
        stats = [self.deck.stats(t) for t in TASKS]
        attempts = sum(s.attempts for s in stats)
        check(
            attempts == sum(self.attempts.values()),
            f"training stats count {attempts} rollouts, {sum(self.attempts.values())} were "
            "recorded (replay probes must not count)",
        )
        check(
            sum(s.successes for s in stats) == sum(self.successes.values()),
            "training successes differ from those recorded",
        )
        check(
            self.deck.active_count + len(self.deck.retired) == len(TASKS),
            "active + retired != all tasks",
        )

    @invariant()
    def statuses_match_the_model(self) -> None:
        if self.pool is None:
            return
        active = set(self.deck.active_ids)
        both = active & set(self.deck.retired)
        check(not both, f"task(s) {sorted(both)} are both active and retired")
        for task_id in TASKS:
            stats = self.deck.stats(task_id)
            check(
                stats.times_reactivated == self.reactivated[task_id],
                f"{task_id} counts {stats.times_reactivated} reactivations, "
                f"{self.reactivated[task_id]} failed probes brought it back",
            )
            check(
                stats.consecutive_all_correct == self.correct_run[task_id],
                f"{task_id}'s all-correct streak is {stats.consecutive_all_correct}, "
                f"the groups recorded give {self.correct_run[task_id]}",
            )
        check(active == self.active(), f"active tasks {sorted(active)} != {sorted(self.active())}")
        retired = {t: r.reason for t, r in self.deck.retired.items()}
        expected = {t: s for t, s in self.status.items() if s is not None}
        check(retired == expected, f"retired tasks {retired} != {expected}")


def deck_contract(
    make_pool: MakePool, *, reload: Reload | None = None
) -> type[DeckContractMachine]:
    """A hypothesis state machine checking ``make_pool``'s pools against the deck contract.

    ``make_pool(task_ids, rules=..., replay=..., seed=...)`` builds a fresh pool per run (the
    :class:`~deck_evictor.Deck` class is one). ``reload(pool)`` persists the pool through your
    real storage and returns the loaded one; with it the machine also checks that a reload
    changes nothing observable and continues the same draws. Run the result with
    ``TestMine = deck_contract(...).TestCase`` or
    :func:`hypothesis.stateful.run_state_machine_as_test`. A broken clause raises
    :class:`DeckContractViolationError` naming it. Raises :class:`~deck_evictor.InvalidConfigError`
    when ``make_pool`` or ``reload`` is not callable.
    """
    if not callable(make_pool):
        raise InvalidConfigError(f"make_pool must be a callable building a pool, got {make_pool!r}")
    if reload is not None and not callable(reload):
        raise InvalidConfigError(f"reload must be a callable or None, got {reload!r}")
    name = getattr(make_pool, "__name__", "pool").strip("<>")
    return type(
        f"DeckContract_{name}",
        (DeckContractMachine,),
        {"make_pool": staticmethod(make_pool), "reload": staticmethod(reload) if reload else None},
    )
