"""The embedded deck: generate, write and load the three disjoint splits (ARCHITECTURE.md §4).

* ``pool`` — the overfitting stress-test pool (160 tasks by default, as in the paper's
  stress test, Arctic-SWE §3.1);
* ``heldout`` — more tasks of the same family, never trained on;
* ``warmstart`` — the scripted expert's split for the warm start (rejection-sampled
  fine-tuning before RL), disjoint from both, so the stress test starts from a policy that has never seen a
  pool task.

Task ``i`` of split ``s`` is drawn from its own ``random.Random(f"{seed}:{s}:{i}")`` stream
(string seeds hash with SHA-512, stable across runs and platforms), so a deck is a pure
function of ``(seed, sizes, issue_style)`` and adding tasks to one split never changes another.
The issue style (``line`` or ``behaviour``, see ``_issues``) changes only each task's issue
text: the same seed and sizes give the same repositories, tests and gold patches in both styles.

On disk::

    DIR/deck.json             manifest: config, splits, every task's fields (the config's
                              ``issue_style`` is written only when it is not ``line``, so a
                              default deck's bytes, and digest, predate the option)
    DIR/repos/ID/...          the buggy tree of each task (its base commit)
    DIR/audit.jsonl           Pipeline 1 records (written by :func:`validate_deck`)

An imported deck (``arctic-swe deck import``, :mod:`arctic_swe.deck._import`) uses the same
manifest with each task's full row under ``"task"`` and no ``repos/``; it has no scripted-expert
fields (``bug_path`` and the lines are empty), so it trains and evaluates but cannot warm-start.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arctic_swe._atomic import atomic_write_text, staged_dir
from arctic_swe._issue_styles import ISSUE_STYLES, LINE_STYLE
from arctic_swe.deck._errors import DeckConfigError, DeckFormatError
from arctic_swe.deck._repo import GeneratedTask, generate_task
from swe_sandbox import RepoSource, TaskSpec

SPLITS = ("pool", "heldout", "warmstart")
MANIFEST = "deck.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class DeckConfig:
    """Sizes, seed and issue style of an embedded deck (every field is part of the deck's
    identity). ``issue_style``: ``"line"`` (the issue quotes the wrong and the right line) or
    ``"behaviour"`` (inputs, actual vs expected output and the failing test, no line)."""

    seed: int = 0
    pool_size: int = 160
    heldout_size: int = 40
    warmstart_size: int = 200
    issue_style: str = LINE_STYLE

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise DeckConfigError(f"seed must be a non-negative int, got {self.seed!r}")
        for split in SPLITS:
            size = getattr(self, f"{split}_size")
            if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 100_000:
                raise DeckConfigError(f"{split}_size must be an int in [0, 100000], got {size!r}")
        if self.pool_size < 1:
            raise DeckConfigError("pool_size must be at least 1")
        if self.issue_style not in ISSUE_STYLES:
            raise DeckConfigError(
                f"issue_style must be one of {ISSUE_STYLES}, got {self.issue_style!r}"
            )

    def size(self, split: str) -> int:
        """Number of tasks in ``split``."""
        value: int = getattr(self, f"{split}_size")
        return value


@dataclass(frozen=True)
class DeckTask:
    """One deck task: the sandbox's ``TaskSpec`` plus the fields the expert and issue need."""

    spec: TaskSpec
    split: str
    bug_path: str
    old_line: str
    new_line: str

    @property
    def instance_id(self) -> str:
        """The task id (``SPLIT-NNNN``)."""
        return self.spec.instance_id


@dataclass(frozen=True)
class StoredDeck:
    """A loaded deck: tasks by split, in generation order."""

    root: Path
    config: DeckConfig
    splits: Mapping[str, tuple[DeckTask, ...]] = field(repr=False)
    dropped: tuple[str, ...] = ()

    def split(self, name: str) -> tuple[DeckTask, ...]:
        """The tasks of one split; :class:`DeckConfigError` for an unknown split name."""
        if name not in self.splits:
            raise DeckConfigError(f"unknown split {name!r}; expected one of {SPLITS}")
        return self.splits[name]

    def __iter__(self) -> Iterator[DeckTask]:
        for name in SPLITS:
            yield from self.splits.get(name, ())

    def task(self, instance_id: str) -> DeckTask:
        """Look a task up by id; ``KeyError`` if absent."""
        for task in self:
            if task.instance_id == instance_id:
                return task
        raise KeyError(instance_id)


def generate_tasks(config: DeckConfig) -> dict[str, list[GeneratedTask]]:
    """Every split's generated tasks (in memory; nothing written). Pure in ``config``."""
    seen: set[str] = set()
    out: dict[str, list[GeneratedTask]] = {}
    for split in SPLITS:
        tasks: list[GeneratedTask] = []
        for index in range(config.size(split)):
            rng = random.Random(f"arctic-swe-deck:{config.seed}:{split}:{index}")
            while True:  # redraw on the (rare) exact duplicate so splits stay disjoint
                task = generate_task(rng, f"{split}-{index:04d}", config.issue_style)
                fingerprint = _fingerprint(task)
                if fingerprint not in seen:
                    seen.add(fingerprint)
                    break
            tasks.append(task)
        out[split] = tasks
    return out


def _fingerprint(task: GeneratedTask) -> str:
    digest = hashlib.sha256()
    for path in sorted(task.files):
        digest.update(path.encode() + b"\0" + task.files[path].encode() + b"\0")
    digest.update(task.gold_patch.encode())
    return digest.hexdigest()


def manifest_config(config: DeckConfig) -> dict[str, Any]:
    """``config`` as the manifest stores it: the default issue style is left out, so decks
    written before the option existed read back as line-style and keep their bytes."""
    record = asdict(config)
    if record["issue_style"] == LINE_STYLE:
        del record["issue_style"]
    return record


def _task_record(task: GeneratedTask, split: str) -> dict[str, Any]:
    return {
        "instance_id": task.instance_id,
        "split": split,
        "problem_statement": task.issue,
        "gold_patch": task.gold_patch,
        "graded_files": [task.graded_file],
        "fail_to_pass": list(task.fail_to_pass),
        "pass_to_pass": list(task.pass_to_pass),
        "bug_path": task.bug_path,
        "old_line": task.old_line,
        "new_line": task.new_line,
    }


def write_deck(root: str | os.PathLike[str], config: DeckConfig = DeckConfig()) -> StoredDeck:
    """Generate the deck for ``config`` and write it under ``root`` (replacing what is there).

    Written to a sibling staging directory and renamed into place, so a crash never leaves a
    half-written deck at ``root``. Returns the loaded deck.
    """
    target = Path(root)
    with staged_dir(target.parent, target.name) as staging:
        records: list[dict[str, Any]] = []
        for split, tasks in generate_tasks(config).items():
            for task in tasks:
                for path, text in task.files.items():
                    file = staging / "repos" / task.instance_id / path
                    file.parent.mkdir(parents=True, exist_ok=True)
                    file.write_text(text)
                records.append(_task_record(task, split))
        manifest = {"format": FORMAT_VERSION, "config": manifest_config(config), "tasks": records}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return load_deck(target)


def load_deck(root: str | os.PathLike[str]) -> StoredDeck:
    """Read a deck written by :func:`write_deck` (tasks rejected by validation excluded).

    Raises :class:`DeckFormatError` when the manifest or a task repository is missing or the
    manifest is malformed.
    """
    directory = Path(root)
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except FileNotFoundError as exc:
        raise DeckFormatError(f"no deck at {directory} (missing {MANIFEST})") from exc
    except (OSError, ValueError) as exc:
        raise DeckFormatError(f"unreadable deck manifest {directory / MANIFEST}: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise DeckFormatError(f"{directory / MANIFEST} is not a format-{FORMAT_VERSION} deck")
    try:
        config = DeckConfig(**manifest["config"])
        dropped = tuple(manifest.get("dropped", ()))
        splits: dict[str, list[DeckTask]] = {split: [] for split in SPLITS}
        for record in manifest["tasks"]:
            if record["instance_id"] in dropped:
                continue
            splits[record["split"]].append(_deck_task(directory, record))
    except (KeyError, TypeError) as exc:
        raise DeckFormatError(f"malformed deck manifest {directory / MANIFEST}: {exc!r}") from exc
    frozen = {split: tuple(tasks) for split, tasks in splits.items()}
    return StoredDeck(root=directory, config=config, splits=frozen, dropped=dropped)


def _deck_task(directory: Path, record: Mapping[str, Any]) -> DeckTask:
    if "task" in record:  # an imported deck (`arctic-swe deck import`): a native task row
        from arctic_swe.deck._import import task_of_row

        return DeckTask(task_of_row(record["task"]), record["split"], "", "", "")
    repo = directory / "repos" / record["instance_id"]
    if not repo.is_dir():
        raise DeckFormatError(f"task repository missing: {repo}")
    spec = TaskSpec(
        instance_id=record["instance_id"],
        repo=RepoSource.directory(repo),
        problem_statement=record["problem_statement"],
        gold_patch=record["gold_patch"],
        graded_files=tuple(record["graded_files"]),
        fail_to_pass=tuple(record["fail_to_pass"]),
        pass_to_pass=tuple(record["pass_to_pass"]),
    )
    return DeckTask(
        spec=spec,
        split=record["split"],
        bug_path=record["bug_path"],
        old_line=record["old_line"],
        new_line=record["new_line"],
    )


def mark_dropped(root: str | os.PathLike[str], instance_ids: set[str]) -> None:
    """Record ``instance_ids`` as rejected in the manifest (atomic rewrite; data kept)."""
    path = Path(root) / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["dropped"] = sorted(set(manifest.get("dropped", ())) | instance_ids)
    atomic_write_text(path, json.dumps(manifest, indent=1) + "\n")
