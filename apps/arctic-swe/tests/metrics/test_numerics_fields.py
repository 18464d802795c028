"""The numerics fields of ``UpdateMetrics`` (ω quantiles, mismatch KL by layer type)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from arctic_swe.metrics import MetricsLog, UpdateMetrics
from arctic_swe.trainer import LayerTypeKL, numerics_figures

Record = Callable[..., UpdateMetrics]

NUMERICS = (
    "omega_p1", "omega_p5", "omega_p50", "omega_p95", "omega_p99", "omega_min", "omega_max",
    "kl_audit_overall", "kl_linear_attention", "kl_full_attention",
)  # fmt: skip


def test_a_line_written_before_the_numerics_fields_reads_back_as_not_measured(
    make_record: Record, tmp_path: Path
) -> None:
    old = asdict(make_record(1, 0.5))
    for name in (*NUMERICS, "kl_audit_tokens", "kl_audit_seconds"):
        old.pop(name)
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = MetricsLog(path).read()
    assert all(getattr(loaded, name) == -1.0 for name in NUMERICS)
    assert (loaded.kl_audit_tokens, loaded.kl_audit_seconds) == (0, 0.0)


def test_numerics_figures_fill_the_record_and_round_trip(
    make_record: Record, tmp_path: Path
) -> None:
    omega = {"p1": 0.9, "p5": 0.95, "p50": 1.0, "p95": 1.05, "p99": 1.1, "min": 0.5, "max": 2.5}
    audit = LayerTypeKL(
        overall=3e-9, linear_attention=2e-9, full_attention=1e-10, tokens=64, seconds=4.0
    )
    filled = UpdateMetrics(**{**asdict(make_record(2, 0.5)), **numerics_figures(omega, audit)})
    assert filled.omega_p99 == 1.1
    assert filled.omega_max == 2.5
    assert (filled.kl_linear_attention, filled.kl_full_attention) == (2e-9, 1e-10)
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.append(filled)
    assert log.read() == [filled]
    # no audit this update: only ω, the KL fields stay "not measured"
    partial = numerics_figures(omega, None)
    assert set(partial) == {f"omega_{k}" for k in omega}
