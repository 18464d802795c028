"""Labels for runs shown side by side (``arctic-swe compare``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arctic_swe.metrics._record import MetricsError


def run_labels(runs: Sequence[Path], labels: Sequence[str] = ()) -> list[str]:
    """One distinct label per run: ``labels`` in order where given, else the shortest path
    suffix that no other run shares (``a/overfit`` and ``b/overfit`` become those two, not
    ``overfit`` twice).

    Raises :class:`MetricsError` for more labels than runs, a run given twice, or two equal
    labels: a comparison never silently drops a run.
    """
    if len(labels) > len(runs):
        raise MetricsError(f"{len(labels)} --label values for {len(runs)} runs")
    parts = [Path(run).resolve().parts for run in runs]
    seen: dict[tuple[str, ...], Path] = {}
    for run, key in zip(runs, parts, strict=True):
        if key in seen:
            raise MetricsError(
                f"{seen[key]} is given twice"
                + (f" (as {run})" if str(run) != str(seen[key]) else "")
            )
        seen[key] = run
    chosen = [_shortest_unique_suffix(index, parts) for index in range(len(runs))]
    chosen[: len(labels)] = labels
    duplicates = sorted({label for label in chosen if chosen.count(label) > 1})
    if duplicates:
        raise MetricsError(f"two runs share the label {duplicates[0]!r}; give --label")
    return chosen


def _shortest_unique_suffix(index: int, parts: Sequence[tuple[str, ...]]) -> str:
    own = parts[index]
    others = [other for i, other in enumerate(parts) if i != index]
    for length in range(1, len(own) + 1):
        suffix = own[-length:]
        if all(other[-length:] != suffix for other in others):
            return "/".join(suffix).lstrip("/") or "/"
    return str(Path(*own))
