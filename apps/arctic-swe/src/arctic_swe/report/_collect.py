"""``arctic-swe report RESULTS --collect SOURCE``: copy the compact raw data of finished runs
into a results folder, so every figure of its page can be derived again from committed files
(Arctic-SWE §3.1: the stress test's curves and verdicts).

Per run only what the tables and plots are computed from, and what says how it was run: the
config, the per-update metrics and every evaluation (gzip-compressed, byte-identical when the
same data is collected again), how it ended and the digests of its inputs. Never a checkpoint,
weights or plots. Paths of the machine are redacted; nothing is written unless every source
reads cleanly.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import attrs

from arctic_swe.ablate import MANIFEST
from arctic_swe.config import (
    CONFIG_FILE,
    FINISHED_FILE,
    INPUTS_FILE,
    RunConfigError,
    RunDir,
    RunDirError,
    read_run_end,
    read_run_inputs,
    read_toml,
    sections_to_toml,
)
from arctic_swe.metrics import (
    EVALUATIONS,
    EvaluationLog,
    MetricsError,
    MetricsLog,
    run_labels,
)
from arctic_swe.report._errors import ReportError
from arctic_swe.report._layout import (
    DATA,
    EVALUATIONS_GZ,
    METRICS_GZ,
    SOURCE_FILE,
    check_label,
    gzip_bytes,
    redact,
    redact_path,
    redact_words,
)

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Collected:
    """What a collection wrote: ``runs`` (label -> bytes of its files, in table order) and
    ``total`` bytes under ``RESULTS/data`` (the runs, the manifest and ``SOURCE.json``)."""

    data: Path
    runs: dict[str, int]
    total: int


@dataclass(frozen=True)
class _Sources:
    kind: str  # "ablation" or "runs"
    runs: dict[str, Path]  # label -> run directory, in table order
    manifest: dict[str, Any] | None


def collect(
    sources: Sequence[Path],
    results: Path,
    *,
    labels: Sequence[str] = (),
    command: str = "",
    note: str = "",
    today: date | None = None,
    add: bool = False,
) -> Collected:
    """Replace ``results/data`` with the compact data of ``sources``: one ablation directory
    (``ablation.json``; its runs in the manifest's order, labelled as ``ablate`` labels them),
    or run directories (labelled by ``labels``, else by their shortest distinct path suffix).
    With ``add``, keep what ``results/data`` holds and add the runs after its own (a
    measurement collected sitting by sitting); a label it holds already is refused.

    ``command`` (what produced the runs) and ``note`` (machine, load) go into ``SOURCE.json``
    with the date, one record per collection. Raises :class:`ReportError`, having written
    nothing, for a source that is not a run or ablation directory, a run without updates, data
    that cannot be read, or (``add``) a run collected already.
    """
    found = _sources(sources, labels)
    files = {label: _run_files(label, root) for label, root in found.runs.items()}
    data = results / DATA
    kept = _Kept.read(data) if add else _Kept()
    clash = [label for label in found.runs if label in kept.labels]
    if clash:
        raise ReportError(
            f"run {clash[0]} is in {data} already: add only new runs, or collect without "
            "--add to replace the data"
        )
    record = _source_record(sources, found, command, note, today)
    extra = dict(kept.files)
    if found.manifest is not None:
        name = MANIFEST if MANIFEST not in extra else f"ablation-{len(kept.collections) + 1}.json"
        record["manifest"] = name
        extra[name] = (json.dumps(redact(found.manifest), indent=2, sort_keys=True) + "\n").encode()
    source = {"runs": [*kept.labels, *found.runs], "collections": [*kept.collections, record]}
    extra[SOURCE_FILE] = (json.dumps(source, indent=2, sort_keys=True) + "\n").encode()
    _replace(data, files, extra)
    sizes = {label: sum(len(b) for b in run.values()) for label, run in files.items()}
    total = sum(sizes.values()) + sum(len(content) for content in extra.values())
    return Collected(data, sizes, total)


@dataclass(frozen=True)
class _Kept:
    """What ``--add`` keeps of a results folder's data: its labels in table order, its
    collection records and every file but ``SOURCE.json`` (relative path -> bytes)."""

    labels: tuple[str, ...] = ()
    collections: tuple[dict[str, Any], ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def read(cls, data: Path) -> _Kept:
        if not data.exists():
            return cls()
        source = data / SOURCE_FILE
        try:
            record = json.loads(source.read_text())
            labels = tuple(str(label) for label in record["runs"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReportError(f"{source} cannot be read, so nothing can be added: {exc}") from exc
        # a folder collected before collections were listed holds one flat record
        earlier = record.get("collections", [record])
        if not isinstance(earlier, list) or not all(isinstance(c, dict) for c in earlier):
            raise ReportError(f"{source}: collections is not a list of records")
        files = {
            path.relative_to(data).as_posix(): path.read_bytes()
            for path in sorted(data.rglob("*"))
            if path.is_file() and path != source
        }
        return cls(labels, tuple(earlier), files)


def _sources(sources: Sequence[Path], labels: Sequence[str]) -> _Sources:
    if not sources:
        raise ReportError("nothing to collect: give an ablation directory or run directories")
    for source in sources:
        if not source.is_dir():
            state = "is not a directory" if source.exists() else "does not exist"
            raise ReportError(f"source {source} {state}")
    ablations = [source for source in sources if (source / MANIFEST).is_file()]
    if ablations:
        if len(sources) > 1 or labels:
            raise ReportError(
                f"{ablations[0]} is an ablation directory: collect it alone, without --label"
            )
        return _ablation(ablations[0])
    for source in sources:
        if (source / CONFIG_FILE).is_file() and not (source / "metrics.jsonl").is_file():
            raise ReportError(f"run {source} has no metrics.jsonl: it has no updates yet")
        if not (source / CONFIG_FILE).is_file() or not (source / "metrics.jsonl").is_file():
            raise ReportError(
                f"{source} is neither an ablation directory ({MANIFEST}) nor a run directory "
                f"({CONFIG_FILE} and metrics.jsonl)"
            )
    try:
        names = run_labels(list(sources), labels)
    except MetricsError as exc:
        raise ReportError(str(exc)) from exc
    return _Sources("runs", dict(zip(names, sources, strict=True)), None)


def _ablation(root: Path) -> _Sources:
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{root / MANIFEST} cannot be read: {exc}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("configs"), dict):
        raise ReportError(f"{root / MANIFEST} is not an ablation manifest (no configs)")
    runs = {label: root / label for label in _manifest_order(manifest)}
    for label, run in runs.items():
        if not (run / "metrics.jsonl").is_file():
            raise ReportError(
                f"{run} has no metrics.jsonl: variant {label} has not run; finish the ablation "
                "or collect its runs as run directories"
            )
    return _Sources("ablation", runs, manifest)


def _manifest_order(manifest: dict[str, Any]) -> list[str]:
    """The manifest's runs in ``ablate``'s run order (its ``variants``, which name the run
    directories); its configs alone are sorted by name."""
    keys = [str(key) for key in manifest["configs"]]
    listed = manifest.get("variants")
    if isinstance(listed, list) and sorted(map(str, listed)) == sorted(keys):
        return [str(key) for key in listed]
    return sorted(keys)


def _run_files(label: str, root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of one run's compact data (read and checked, none written)."""
    check_label(label)
    run = RunDir(root)
    try:
        records = MetricsLog(run.metrics).read()
        evaluations = EvaluationLog(root / EVALUATIONS).read()
        config = sections_to_toml(redact(read_toml(run.config)))
        end = read_run_end(run)
        inputs = read_run_inputs(run)
    except (MetricsError, RunConfigError, RunDirError) as exc:
        raise ReportError(f"run {label} ({root}): {exc}") from exc
    if not records:
        raise ReportError(f"run {label} ({root}) has no updates yet")
    files = {
        CONFIG_FILE: config.encode(),
        METRICS_GZ: gzip_bytes("".join(r.to_json() + "\n" for r in records).encode()),
    }
    if (root / EVALUATIONS).is_file():
        files[EVALUATIONS_GZ] = gzip_bytes(
            "".join(r.to_json() + "\n" for r in evaluations).encode()
        )
    if end is not None:
        files[FINISHED_FILE] = (root / FINISHED_FILE).read_bytes()
    if inputs is not None:
        kept = attrs.evolve(
            inputs, deck=redact_path(inputs.deck), policy=redact_path(inputs.policy)
        )
        files[INPUTS_FILE] = (json.dumps(attrs.asdict(kept), sort_keys=True) + "\n").encode()
    return {f"{label}/{name}": content for name, content in files.items()}


def _source_record(
    sources: Sequence[Path], found: _Sources, command: str, note: str, today: date | None
) -> dict[str, Any]:
    """One collection: when, what command produced its runs, under what conditions, from
    where, which runs."""
    return {
        "collected": (today or datetime.now(UTC).date()).isoformat(),
        "command": redact_words(command) if command else NOT_RECORDED,
        "note": redact_words(note),
        "source": found.kind,
        "from": [redact_path(str(source.resolve())) for source in sources],
        "runs": list(found.runs),
    }


def _replace(data: Path, runs: dict[str, dict[str, bytes]], extra: Mapping[str, bytes]) -> None:
    """Write everything into a fresh directory beside ``data``, then swap it in."""
    if data.exists() and not (data / SOURCE_FILE).is_file():
        raise ReportError(f"{data} exists and holds no {SOURCE_FILE}: not collected data")
    if data.parent.exists() and not data.parent.is_dir():
        raise ReportError(f"{data.parent} is not a directory")
    data.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".data-", dir=data.parent))
    fresh.chmod(0o755)  # mkdtemp's 0700 would become the data directory's mode
    try:
        for name, content in [*extra.items(), *(i for f in runs.values() for i in f.items())]:
            path = fresh / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        if data.exists():
            shutil.rmtree(data)
        fresh.rename(data)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh)
