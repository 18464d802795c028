"""Pipeline 1 on real tasks through the real (namespace) sandbox."""

from __future__ import annotations

from pathlib import Path

import attrs
from curate_tasks import make_task

from swe_curate._audit import AuditConfig, audit_task
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict


def test_good_task_is_admitted_with_binding_assertions(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    task = make_task(tmp_path, "good")
    rec = audit_task(task, scorer, AuditConfig(reruns=2))
    assert rec.verdict is Verdict.ADMITTED, rec.reason
    m = rec.measurements
    assert m["fail_to_pass"] == ["tests/test_ops.py::test_clamp_matches_reference"]
    assert m["buggy_reward"] == [0, 0]
    assert m["gold_reward"] == [1, 1]
    (binding,) = m["binding_assertions"]
    assert binding["test"] == "tests/test_ops.py::test_clamp_matches_reference"
    assert binding["source"] == "assert clamp(x, -5, 7) == min(max(x, -5), 7)"
    assert binding["buggy"].startswith("AssertionError")
    assert binding["gold"] == "passed"
    assert binding["is_assertion"]


def test_flaky_test_is_flagged(tmp_path: Path, scorer: SandboxScorer) -> None:
    # The coin reads the kernel's entropy (no seeded ``random`` state can pin it); 8 reruns per
    # tree miss a fair coin with probability (2 * 2**-8) ** 2 = 6e-5 (6 reruns: 1e-3, seen in CI).
    rec = audit_task(make_task(tmp_path, "flaky"), scorer, AuditConfig(reruns=8, binding=False))
    assert rec.verdict is Verdict.FLAKY, rec.reason
    assert rec.measurements["flaky"] == ["tests/test_ops.py::test_coin"]


def test_wrong_lists_and_broken_patches_are_rejected(tmp_path: Path, scorer: SandboxScorer) -> None:
    task = make_task(tmp_path, "good")
    swapped = attrs.evolve(
        task, fail_to_pass=("tests/test_ops.py::test_high",), pass_to_pass=task.fail_to_pass
    )
    assert audit_task(swapped, scorer, AuditConfig(reruns=1)).verdict is Verdict.NO_FAIL_TO_PASS
    no_fix = attrs.evolve(
        task, gold_patch=task.gold_patch.replace("+    if x < lo:", "+    if x < lo - 100:")
    )
    rec = audit_task(no_fix, scorer, AuditConfig(reruns=1))
    assert rec.verdict in {Verdict.NO_FAIL_TO_PASS, Verdict.GOLD_FAILS}
    bad = attrs.evolve(task, gold_patch=task.gold_patch.replace("return hi", "return HI"))
    assert audit_task(bad, scorer, AuditConfig(reruns=1)).verdict is Verdict.PATCH_DOES_NOT_APPLY
