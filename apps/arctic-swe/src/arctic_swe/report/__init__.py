"""Results folders: the compact raw data of reported runs, committed, and every results table
and plot regenerated from it by one command (``arctic-swe report``; Arctic-SWE §3.1)."""

from arctic_swe.report._build import (
    BEGIN,
    END,
    Report,
    build_report,
    check_report,
    render_block,
    splice,
    write_report,
)
from arctic_swe.report._collect import Collected, collect
from arctic_swe.report._data import RunData, collected_labels, read_results
from arctic_swe.report._errors import ReportError, ReportOutOfDateError
from arctic_swe.report._layout import (
    DATA,
    EVALUATIONS_GZ,
    FIGURES,
    MACHINE,
    METRICS_GZ,
    README,
    SOURCE_FILE,
    gzip_bytes,
    redact,
    redact_path,
    redact_words,
)
from arctic_swe.report._restore import restore_runs
from arctic_swe.report._tables import (
    RESULT_TABLES,
    ResultTable,
    Section,
    result_sections,
    sections_markdown,
)

__all__ = [
    "BEGIN",
    "DATA",
    "END",
    "EVALUATIONS_GZ",
    "FIGURES",
    "MACHINE",
    "METRICS_GZ",
    "README",
    "RESULT_TABLES",
    "SOURCE_FILE",
    "Collected",
    "Report",
    "ReportError",
    "ReportOutOfDateError",
    "ResultTable",
    "RunData",
    "Section",
    "build_report",
    "check_report",
    "collect",
    "collected_labels",
    "gzip_bytes",
    "read_results",
    "redact",
    "redact_path",
    "redact_words",
    "render_block",
    "restore_runs",
    "result_sections",
    "sections_markdown",
    "splice",
    "write_report",
]
