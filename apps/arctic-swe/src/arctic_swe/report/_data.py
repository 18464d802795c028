"""Reading a results folder's collected data back (``RESULTS/data``, see ``_layout``): the
records every results table and plot is computed from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from arctic_swe.config import (
    RunConfigError,
    RunDir,
    RunDirError,
    RunEnd,
    RunInputs,
    read_run_end,
    read_run_inputs,
)
from arctic_swe.metrics import (
    EvalRecord,
    MetricsError,
    UpdateMetrics,
    VerdictRule,
    read_verdict_rule,
)
from arctic_swe.report._errors import ReportError
from arctic_swe.report._layout import (
    DATA,
    EVALUATIONS_GZ,
    METRICS_GZ,
    SOURCE_FILE,
    check_label,
    gzip_json_lines,
)


@dataclass(frozen=True)
class RunData:
    """One collected run: its updates, its evaluations (empty for a run that logged none), how
    it ended and what it started from (``None`` where the run recorded neither)."""

    label: str
    records: tuple[UpdateMetrics, ...]
    evaluations: tuple[EvalRecord, ...]
    end: RunEnd | None
    inputs: RunInputs | None
    rule: VerdictRule | None = None  # the verdict its config.toml declared


def read_results(results: Path) -> list[RunData]:
    """Every run of ``results/data``, in the order ``SOURCE.json`` lists them (the tables'
    order). Raises :class:`ReportError` for a folder without collected data or a file that
    cannot be read."""
    return [_run(results / DATA, label) for label in collected_labels(results)]


def collected_labels(results: Path) -> list[str]:
    """The labels of the runs ``results/data`` holds, in the order ``SOURCE.json`` lists them.
    Raises :class:`ReportError` for a folder without collected data or an unreadable list."""
    source = results / DATA / SOURCE_FILE
    if not source.is_file():
        raise ReportError(
            f"{results} holds no collected data ({DATA}/{SOURCE_FILE}); "
            "collect it first: arctic-swe report RESULTS --collect SOURCE"
        )
    try:
        labels = json.loads(source.read_text())["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"{source} cannot be read: {exc}") from exc
    if not isinstance(labels, list) or not labels:
        raise ReportError(f"{source} lists no runs")
    return [check_label(str(label)) for label in labels]


def _run(data: Path, label: str) -> RunData:
    root = data / label
    metrics = root / METRICS_GZ
    if not metrics.is_file():
        raise ReportError(f"run {label}: {metrics} is missing")
    evaluations = root / EVALUATIONS_GZ
    try:
        records = tuple(UpdateMetrics.from_mapping(row) for row in gzip_json_lines(metrics))
        evals = (
            tuple(EvalRecord.from_mapping(row) for row in gzip_json_lines(evaluations))
            if evaluations.is_file()
            else ()
        )
        end, inputs = read_run_end(RunDir(root)), read_run_inputs(RunDir(root))
        rule = read_verdict_rule(root)
    except (MetricsError, RunDirError, RunConfigError, TypeError) as exc:
        raise ReportError(f"run {label}: {exc}") from exc
    if not records:
        raise ReportError(f"run {label}: {metrics} holds no updates")
    return RunData(label, records, evals, end, inputs, rule)
