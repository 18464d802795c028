"""The public property-testing kit: passes the real deck, catches broken pools for the stated
reason, catches a persistence that tears under SIGKILL, refuses bad arguments, and stays out of
``import deck_evictor``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from deck_evictor import (
    Deck,
    Draw,
    EvictionRules,
    InvalidConfigError,
    MakePool,
    ReplayOutcome,
    ReplayPolicy,
    Retirement,
    TaskPool,
    TaskStats,
)
from deck_evictor.testing import (
    CrashSafetyError,
    DeckContractViolationError,
    check_crash_safety,
    deck_contract,
)

QUICK = settings(max_examples=40, stateful_step_count=30, deadline=None, database=None)
# Hunting a known bug: generate only (no shrinking), so a catch costs a fraction of a second.
HUNT = settings(
    max_examples=300,
    stateful_step_count=30,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)


def json_round_trip(deck: Deck) -> Deck:
    return Deck.from_state_dict(json.loads(json.dumps(deck.state_dict())))


class AuditedPool:
    """A third-party pool: wraps a Deck (no subclassing) and logs every training group."""

    def __init__(
        self, task_ids: Sequence[str], *, rules: EvictionRules, replay: ReplayPolicy, seed: int
    ) -> None:
        self.deck = Deck(task_ids, rules=rules, replay=replay, seed=seed)
        self.log: list[tuple[str, int, int]] = []

    @property
    def task_ids(self) -> tuple[str, ...]:
        return self.deck.task_ids

    @property
    def active_ids(self) -> tuple[str, ...]:
        return self.deck.active_ids

    @property
    def active_count(self) -> int:
        return self.deck.active_count

    @property
    def retired(self) -> Mapping[str, Retirement]:
        return self.deck.retired

    @property
    def update(self) -> int:
        return self.deck.update

    @property
    def pass_index(self) -> int:
        return self.deck.pass_index

    @property
    def replay_policy(self) -> ReplayPolicy:
        return self.deck.replay_policy

    def advance(self, to: int | None = None) -> int:
        return self.deck.advance(to)

    def sample(self, k: int) -> Draw:
        return self.deck.sample(k)

    def record(self, task_id: str, successes: int, n: int) -> Retirement | None:
        self.log.append((task_id, successes, n))
        return self.deck.record(task_id, successes, n)

    def replay_schedule(self, update: int | None = None) -> tuple[str, ...]:
        return self.deck.replay_schedule(update)

    def record_replay(self, task_id: str, successes: int, n: int) -> ReplayOutcome:
        return self.deck.record_replay(task_id, successes, n)

    def stats(self, task_id: str) -> TaskStats:
        return self.deck.stats(task_id)


class LeakyReplayPool(AuditedPool):
    """Broken: replay probes are also recorded as training groups."""

    def record_replay(self, task_id: str, successes: int, n: int) -> ReplayOutcome:
        self.deck.record(task_id, successes, n)
        return super().record_replay(task_id, successes, n)


def paper_rules_only(
    task_ids: Sequence[str], *, rules: EvictionRules, replay: ReplayPolicy, seed: int
) -> TaskPool:
    """Broken: ignores the configured eviction rules and always uses the paper's."""
    return Deck(task_ids, rules=EvictionRules(), replay=replay, seed=seed)


def streak_blind(
    task_ids: Sequence[str], *, rules: EvictionRules, replay: ReplayPolicy, seed: int
) -> TaskPool:
    """Broken: treats "mastered" as the first all-correct group, whatever the streak asked."""
    if rules.easy == "mastered":
        rules = EvictionRules(
            hard_consecutive_zero=rules.hard_consecutive_zero, min_group_size=rules.min_group_size
        )
    return Deck(task_ids, rules=rules, replay=replay, seed=seed)


class EagerReactivationPool(AuditedPool):
    """Broken: any probe of a retired task puts it back, whatever it scored."""

    def record_replay(self, task_id: str, successes: int, n: int) -> ReplayOutcome:
        outcome = super().record_replay(task_id, successes, n)
        if not outcome.reactivated:
            self.deck.reactivate(task_id)
        return outcome


def forgetful_reload(deck: Deck) -> Deck:
    """Broken persistence: stores everything but which tasks were retired."""
    loaded = json_round_trip(deck)
    for task_id in loaded.retired:
        loaded.reactivate(task_id)
    return loaded


def violation(machine: type[RuleBasedStateMachine]) -> str:
    with pytest.raises(DeckContractViolationError) as caught:
        run_state_machine_as_test(machine, settings=HUNT)
    return str(caught.value)


# ---------------------------------------------------------------- the real thing passes
def test_a_third_party_pool_over_the_protocol_passes_the_contract() -> None:
    pool: TaskPool = AuditedPool(["a"], rules=EvictionRules(), replay=ReplayPolicy(), seed=0)
    assert pool.sample(1).task_ids == ("a",)
    make: MakePool = Deck  # mypy: the Deck class is a pool factory and a Deck a TaskPool
    assert make(["a"], rules=EvictionRules(), replay=ReplayPolicy(), seed=0).active_count == 1
    run_state_machine_as_test(deck_contract(AuditedPool), settings=QUICK)


# ---------------------------------------------------------------- broken ones are caught
def test_a_reload_that_forgets_retired_tasks_is_caught() -> None:
    machine = deck_contract(Deck, reload=forgetful_reload)
    assert "reload changed the retired tasks" in violation(machine)


def test_a_pool_that_ignores_the_configured_rules_is_caught() -> None:
    # caught as a wrong retirement, or (configured "mastered") as one short of its streak
    message = violation(deck_contract(paper_rules_only))
    assert "the rules say" in message or "retired as mastered after" in message


def test_a_pool_that_retires_short_of_the_mastery_streak_is_caught() -> None:
    assert "retired as mastered after" in violation(deck_contract(streak_blind))


def test_a_pool_that_reactivates_after_a_passed_probe_is_caught() -> None:
    assert "brought back" in violation(deck_contract(EagerReactivationPool))


def test_replay_probes_leaking_into_training_statistics_are_caught() -> None:
    assert "replay probes must not count" in violation(deck_contract(LeakyReplayPool))


BROKEN_WRITER = '''
"""Broken persistence: rewrites the live file in place (slow storage: one chunk per ms)."""
import json
import time

from deck_evictor import Deck


def build():
    return Deck([f"t{i}" for i in range(300)], seed=3)


def step(deck, index):
    deck.advance(index + 1)
    for task_id in deck.sample(8).task_ids:
        deck.record(task_id, index % 3, 2)


def save(deck, path):
    data = json.dumps(deck.state_dict())
    with open(path, "w") as handle:  # truncates the only copy first
        for start in range(0, len(data), len(data) // 40 + 1):
            handle.write(data[start : start + len(data) // 40 + 1])
            handle.flush()
            time.sleep(0.001)


def load(path):
    with open(path) as handle:
        return Deck.from_state_dict(json.load(handle))


def state(deck):
    return deck.state_dict()
'''


def test_a_save_that_rewrites_the_file_in_place_is_caught_by_the_crash_check(
    tmp_path: Path,
) -> None:
    target = tmp_path / "broken_writer.py"
    target.write_text(BROKEN_WRITER)
    with pytest.raises(CrashSafetyError, match=r"does not load|not a prefix"):
        check_crash_safety(str(target), tmp_path, kills=4, seed=1)


# ---------------------------------------------------------------- bad arguments
def test_bad_contract_arguments_are_config_errors() -> None:
    with pytest.raises(InvalidConfigError, match="make_pool must be a callable"):
        deck_contract(Deck(["a"]))  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError, match="reload must be a callable"):
        deck_contract(Deck, reload="deck.state")  # type: ignore[arg-type]


def test_bad_crash_check_arguments_are_config_errors(tmp_path: Path) -> None:
    spec = tmp_path / "half.py"
    spec.write_text("def build():\n    return 1\n\nsave = 3\n")
    for target, message in (
        (str(spec), "has no callable step, save, load, state"),
        (f"{spec}:POOL", "has no callable build"),
        (str(tmp_path / "absent.py"), "does not exist"),
        (f"{spec}:not an identifier", "must be 'module"),
    ):
        with pytest.raises(InvalidConfigError, match=message):
            check_crash_safety(target, tmp_path, kills=1)
    with pytest.raises(InvalidConfigError, match="kills must be a positive int"):
        check_crash_safety(str(spec), tmp_path, kills=0)
    with pytest.raises(InvalidConfigError, match="max_delay_s"):
        check_crash_safety(str(spec), tmp_path, max_delay_s=-1.0)


# ---------------------------------------------------------------- import hygiene
def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_importing_deck_evictor_does_not_import_hypothesis() -> None:
    done = run_python("import sys, deck_evictor; print('hypothesis' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_kit_without_hypothesis_names_the_extra() -> None:
    done = run_python("import sys; sys.modules['hypothesis'] = None; import deck_evictor.testing")
    assert done.returncode != 0
    assert "ImportError" in done.stderr
    assert "pip install 'deck-evictor[testing]'" in done.stderr


# ---------------------------------------------------------------- from outside the repository
USER_POOL = '''
"""A user's own persistence for a Deck: JSON files written atomically (crash-check target)."""
import json
import os

from deck_evictor import Deck


def build():
    return Deck([f"t{i}" for i in range(200)], seed=5)


def step(deck, index):
    deck.advance(index + 1)
    for task_id in deck.sample(6).task_ids:
        deck.record(task_id, index % 3, 2)


def save(deck, path):
    temp = f"{path}.tmp"
    with open(temp, "w") as handle:
        json.dump(deck.state_dict(), handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def load(path):
    with open(path) as handle:
        return Deck.from_state_dict(json.load(handle))


def state(deck):
    return deck.state_dict()
'''

USER_TESTS = '''
"""A user's own test module: their pool persistence under the deck contract and the crash check."""
import pathlib

import pytest
from hypothesis import settings

import my_pool
from deck_evictor import Deck
from deck_evictor.testing import check_crash_safety, deck_contract


def reload_through_my_files(deck, directory=pathlib.Path(__file__).parent):
    my_pool.save(deck, directory / "contract.state")
    return my_pool.load(directory / "contract.state")


TestMyPool = deck_contract(Deck, reload=reload_through_my_files).TestCase
TestMyPool.settings = settings(max_examples=15, stateful_step_count=20, deadline=None, database=None)


def test_my_persistence_survives_sigkill(tmp_path):
    report = check_crash_safety(str(pathlib.Path(my_pool.__file__)), tmp_path, kills=2)
    assert report.final_step >= 1
'''


def test_the_kit_runs_from_a_test_module_outside_the_repository(tmp_path: Path) -> None:
    """``python -I`` in a temporary directory: only the installed packages are importable."""
    # the user's own project configuration: without one, pytest would look upwards for one and
    # could adopt a repository's (with its import mode) when the temporary directory lies inside it
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "my_pool.py").write_text(USER_POOL)
    (tmp_path / "test_my_pool.py").write_text(USER_TESTS)
    done = subprocess.run(
        [sys.executable, "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_pool.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
