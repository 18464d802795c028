"""A results folder's committed data and the two rules that keep it committable: compressed
bytes that do not change when the same data is collected again, and no path of the machine the
runs ran on.

Layout::

    RESULTS/README.md                       the page; its tables between generated markers
    RESULTS/figures/*.png                   the plots, regenerated
    RESULTS/data/SOURCE.json                where the data came from: date, command, note, runs
    RESULTS/data/ablation.json              the ablation's manifest, machine paths redacted
    RESULTS/data/<run>/config.toml          the run's resolved config, machine paths redacted
    RESULTS/data/<run>/metrics.jsonl.gz     one JSON object per update
    RESULTS/data/<run>/evaluations.jsonl.gz every pool and held-out evaluation, per rollout
    RESULTS/data/<run>/finished.json        how the run ended (when it recorded it)
    RESULTS/data/<run>/inputs.json          the deck and warm-start digests, paths redacted
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from arctic_swe.report._errors import ReportError

DATA = "data"
SOURCE_FILE = "SOURCE.json"
METRICS_GZ = "metrics.jsonl.gz"
EVALUATIONS_GZ = "evaluations.jsonl.gz"
README = "README.md"
FIGURES = "figures"
#: What replaces the directories of a machine path (its last component is kept).
MACHINE = "<machine>"

_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")
#: A word of free text: what lies between spaces, ``=``, brackets, quotes, commas, semicolons.
_WORD = re.compile(r"[^\s=()\[\]{}\"',;]+")


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed with no file name and modification time 0, so the same data
    gives the same bytes on every collection."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(data)
    return buffer.getvalue()


def gzip_json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a gzip-compressed JSON-lines file. Raises :class:`ReportError` for
    a file that is not one."""
    try:
        text = gzip.decompress(path.read_bytes()).decode()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path} cannot be read: {exc}") from exc
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{path}:{number}: {exc}") from exc
        if not isinstance(item, dict):
            raise ReportError(f"{path}:{number}: not a JSON object")
        yield item


def is_machine_path(text: str) -> bool:
    """An absolute path (POSIX, Windows drive) or one under a home directory (``~``)."""
    return (len(text) > 1 and text.startswith(("/", "~"))) or bool(_WINDOWS_ABSOLUTE.match(text))


def redact_path(text: str) -> str:
    """``/home/me/runs/deck`` -> ``<machine>/deck``; any other text unchanged."""
    if not is_machine_path(text):
        return text
    pure = PureWindowsPath(text) if _WINDOWS_ABSOLUTE.match(text) else PurePosixPath(text)
    return f"{MACHINE}/{pure.name}" if pure.name and pure.name != "~" else MACHINE


def redact(value: Any) -> Any:
    """``value`` (JSON/TOML data) with every string that is a machine path redacted, keys
    kept."""
    if isinstance(value, str):
        return redact_path(value)
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    return value


def redact_words(text: str) -> str:
    """Free text (a command line, a note) with each machine path among its words redacted,
    including the value of ``--flag=/path`` and a path in brackets or quotes."""
    return _WORD.sub(lambda match: redact_path(match.group(0)), text)


def check_label(label: str) -> str:
    """A run's label, which names its directory under ``data/``: relative parts, none empty,
    ``.`` or ``..``. Raises :class:`ReportError` otherwise."""
    parts = label.split("/")
    if is_machine_path(label) or "\\" in label or any(p in ("", ".", "..") for p in parts):
        raise ReportError(f"run label {label!r} cannot name a directory under {DATA}/")
    return label
