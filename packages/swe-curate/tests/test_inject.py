"""Bug injection on a real open-source project's published source, downloaded from PyPI at test
time, graded in the real sandbox; the injected tasks then pass Pipeline 1."""

from __future__ import annotations

import random
from pathlib import Path

from swe_curate._audit import AuditConfig, audit_task
from swe_curate._importers import task_from_native_row
from swe_curate._inject import (
    InjectConfig,
    inject,
    is_test_file,
    mutants,
    source_files,
)
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict


def test_sources_and_mutants_exclude_tests(inflection_source: Path) -> None:
    files = source_files(inflection_source)
    assert "inflection/__init__.py" in files
    assert not any(is_test_file(p) for p in files)
    found = list(
        mutants({"inflection/__init__.py": files["inflection/__init__.py"]}, random.Random(0))
    )
    assert len(found) > 20
    assert len({m.qualname for m in found}) > 10
    assert {m.mutator for m in found} >= {"invert_condition", "off_by_one", "drop_statement"}


def test_injection_yields_valid_tasks(
    inflection_source: Path, tmp_path: Path, scorer: SandboxScorer
) -> None:
    records = list(
        inject(
            inflection_source,
            tmp_path / "deck",
            scorer,
            InjectConfig(max_candidates=8, max_tasks=2, seed=3),
            name="inflection",
        )
    )
    kept = [r for r in records if r.verdict is Verdict.INJECTED]
    assert kept, [(r.verdict, r.reason) for r in records]
    assert all(r.verdict in {Verdict.INJECTED, Verdict.NO_VALID_MUTANT} for r in records)
    task = task_from_native_row(kept[0].measurements["task"])
    assert task.fail_to_pass
    assert task.pass_to_pass
    assert "inflection" in task.problem_statement
    assert "For example:" in task.problem_statement  # the failing assertion, quoted
    assert "Error" in task.problem_statement
    audited = audit_task(task, scorer, AuditConfig(reruns=1, binding=False))
    assert audited.verdict is Verdict.ADMITTED, audited.reason
    assert audited.measurements["fail_to_pass"] == sorted(task.fail_to_pass)
