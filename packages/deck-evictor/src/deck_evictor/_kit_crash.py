"""Crash-safety check for a user's persisted pool: SIGKILL a writer at random instants.

A writer process loads the pool from a file, then forever runs one deterministic step and
persists the pool, announcing ``begin N`` before and ``saved N`` after each save. The parent kills
it at random instants (aimed inside a save), reloads the file and requires it to hold exactly the
state after some prefix of the run — the last acknowledged save or the one after it (a save can
finish before its acknowledgement is printed) — never a torn mixture. The next writer resumes
from the file, so the final state also proves resumption continues the run exactly.

No hypothesis here: the writer process imports only this module and the user's target.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

import attrs

from deck_evictor._errors import InvalidConfigError

P = TypeVar("P")


@attrs.frozen
class PersistedPool(Generic[P]):
    """How to build, advance, persist and compare a pool, for :func:`check_crash_safety`.

    Attributes:
        build: a fresh pool (the start of every run; deterministic).
        step: ``step(pool, index)`` applies step ``index`` (0, 1, 2, … of the run) in place;
            deterministic given the pool and ``index``.
        save: ``save(pool, path)`` persists the pool — the code under test.
        load: ``load(path)`` reads it back; may raise on a damaged file (that fails the check).
        state: a comparable snapshot of everything that must survive (e.g. ``Deck.state_dict``).
    """

    build: Callable[[], P]
    step: Callable[[P, int], None]
    save: Callable[[P, Path], None]
    load: Callable[[Path], P]
    state: Callable[[P], object]


@attrs.frozen
class CrashReport:
    """What :func:`check_crash_safety` saw: kills, kills that landed between a save's
    ``begin`` and ``saved`` lines, and the step count the file held at the end."""

    kills: int
    inside_save: int
    final_step: int


class CrashSafetyError(AssertionError):
    """After a kill the file did not load, or held no prefix state of the run."""


_PARTS = ("build", "step", "save", "load", "state")


def _import(where: str) -> ModuleType:
    if not where.endswith(".py"):
        return importlib.import_module(where)
    spec = importlib.util.spec_from_file_location(Path(where).stem, where)
    if spec is None or spec.loader is None or not Path(where).is_file():
        raise InvalidConfigError(f"target file {where!r} does not exist")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_target(target: str) -> PersistedPool[Any]:
    """The pool persistence a target names.

    ``"module:NAME"`` / ``"/path/file.py:NAME"`` name a :class:`PersistedPool` (or any object
    with the same five callables); ``"module"`` / ``"/path/file.py"`` alone name a module whose
    top-level functions ``build``, ``step``, ``save``, ``load`` and ``state`` are the parts.
    """
    where, _, name = target.partition(":") if ":" in target else (target, "", "")
    if not where or (name and not name.isidentifier()):
        raise InvalidConfigError(
            f"target must be 'module[:NAME]' or 'file.py[:NAME]', got {target!r}"
        )
    module = _import(where)
    found: object = getattr(module, name, None) if name else module
    missing = [part for part in _PARTS if not callable(getattr(found, part, None))]
    if missing:
        raise InvalidConfigError(f"{target!r} ({found!r}) has no callable {', '.join(missing)}")
    if isinstance(found, PersistedPool):
        return found
    return PersistedPool(*(getattr(found, part) for part in _PARTS))


def run_writer(target: str, path: Path, first_step: int) -> None:
    """The writer process: resume from ``path`` and step + save forever (until killed)."""
    spec = resolve_target(target)
    pool = spec.load(path)
    index = first_step
    while True:
        spec.step(pool, index)
        index += 1
        print("begin", index, flush=True)
        spec.save(pool, path)
        print("saved", index, flush=True)


def _checked_args(kills: int, max_delay_s: float) -> None:
    if isinstance(kills, bool) or not isinstance(kills, int) or kills < 1:
        raise InvalidConfigError(f"kills must be a positive int, got {kills!r}")
    if not 0.0 <= max_delay_s <= 10.0:
        raise InvalidConfigError(f"max_delay_s must be in [0, 10], got {max_delay_s!r}")


class _Reference(Generic[P]):
    """The run replayed in this process, one step at a time, to compare the file against."""

    def __init__(self, spec: PersistedPool[P]) -> None:
        self.spec = spec
        self.pool = spec.build()
        self.steps = 0

    def state_after(self, steps: int) -> object:
        while self.steps < steps:
            self.spec.step(self.pool, self.steps)
            self.steps += 1
        return self.spec.state(self.pool)


def _kill_once(
    target: str, path: Path, start: int, rng: random.Random, max_delay_s: float
) -> tuple[int, bool]:
    """Start a writer at step ``start``, kill it inside a save; return (acknowledged, inside)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "deck_evictor._crash_child", target, str(path), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = start
    for _ in range(rng.randint(1, 3)):  # wait for the start of one of the next few saves
        line = child.stdout.readline().split()
        while line and line[0] == "saved":
            acknowledged = int(line[1])
            line = child.stdout.readline().split()
        if not line:
            child.kill()
            _, err = child.communicate()
            raise CrashSafetyError(f"the writer exited before it was killed:\n{err}")
    time.sleep(rng.uniform(0.0, max_delay_s))
    os.kill(child.pid, signal.SIGKILL)
    out, _ = child.communicate()
    last = "begin"
    for kind, number in (line.split() for line in out.splitlines()):
        last = kind
        if kind == "saved":
            acknowledged = int(number)
    return acknowledged, last == "begin"


def check_crash_safety(
    target: str,
    directory: str | os.PathLike[str],
    *,
    kills: int = 12,
    seed: int = 0,
    max_delay_s: float = 0.05,
) -> CrashReport:
    """SIGKILL a writer of ``target``'s pool ``kills`` times and check every reload is a prefix.

    ``target`` names the pool's persistence (see :func:`resolve_target`): a module-level
    :class:`PersistedPool` as ``"package.module:NAME"`` or ``"/path/to/file.py:NAME"``, or a
    module of top-level ``build``/``step``/``save``/``load``/``state`` functions as
    ``"package.module"`` or ``"/path/to/file.py"``. The writer runs in a fresh
    ``sys.executable`` process that imports only ``deck_evictor`` and the target, so the target
    must be importable there (a module target that avoids importing this kit also avoids
    importing hypothesis at every writer start). The state file is ``directory/pool.state``. Each kill waits for
    one of the writer's next 1 to 3 saves to begin, then up to ``max_delay_s`` seconds.

    Raises :class:`CrashSafetyError` when the file fails to load after a kill or holds a state
    that is neither the last acknowledged one nor the next, and
    :class:`~deck_evictor.InvalidConfigError` for a bad target or argument.
    """
    _checked_args(kills, max_delay_s)
    spec = resolve_target(target)
    path = Path(directory) / "pool.state"
    spec.save(spec.build(), path)
    reference = _Reference(spec)
    rng = random.Random(seed)
    on_file = inside = 0
    for kill in range(1, kills + 1):
        acknowledged, landed_inside = _kill_once(target, path, on_file, rng, max_delay_s)
        inside += landed_inside
        try:
            state = spec.state(spec.load(path))
        except Exception as exc:
            raise CrashSafetyError(f"after kill {kill} the file does not load: {exc!r}") from exc
        if state == reference.state_after(acknowledged):
            on_file = acknowledged
        elif state == reference.state_after(acknowledged + 1):
            on_file = acknowledged + 1
        else:
            raise CrashSafetyError(
                f"after kill {kill} the file holds neither the state after step {acknowledged} "
                f"(last acknowledged save) nor after step {acknowledged + 1}: not a prefix"
            )
    return CrashReport(kills=kills, inside_save=inside, final_step=on_file)
