"""Real SWE tasks for the pipeline tests: a small repository on disk plus a TaskSpec.

Every task shares the bug (``clamp`` ignores its lower bound) and the gold fix; they differ
only in the graded tests, which is exactly what Pipeline 2 judges:

- ``good``: a reference-comparison loop over many inputs; should be accepted.
- ``loose``: one literal check of the fixed value; a special-cased patch passes (too_loose).
- ``implementation``: the loop plus a check that the source says ``x < lo`` (over_restrictive).
- ``flaky``: the good suite plus a test that passes by coin toss.
"""

from __future__ import annotations

from pathlib import Path

from swe_curate._diff import make_patch
from swe_sandbox import RepoSource, TaskSpec

OPS_BUGGY = '''\
"""Small numeric helpers."""


def clamp(x, lo, hi):
    """Clamp x into the closed interval [lo, hi]."""
    if x > hi:
        return hi
    return x


def span(lo, hi):
    """Length of the interval [lo, hi]."""
    return hi - lo
'''

OPS_GOLD = OPS_BUGGY.replace(
    "        return hi\n    return x\n",
    "        return hi\n    if x < lo:\n        return lo\n    return x\n",
)

TESTS_BASE = """\
from geom.ops import clamp, span


def test_high():
    assert clamp(50, 0, 10) == 10


def test_span():
    assert span(2, 5) == 3
"""

SUITES = {
    "good": """

def test_clamp_matches_reference():
    for x in range(-20, 21):
        assert clamp(x, -5, 7) == min(max(x, -5), 7)
""",
    "loose": """

def test_low():
    assert clamp(-5, 0, 10) == 0
""",
    "implementation": """

def test_clamp_matches_reference():
    for x in range(-20, 21):
        assert clamp(x, -5, 7) == min(max(x, -5), 7)


def test_guard_is_written_as_documented():
    import inspect

    assert "x < lo" in inspect.getsource(clamp)
""",
    "flaky": """

def test_clamp_matches_reference():
    for x in range(-20, 21):
        assert clamp(x, -5, 7) == min(max(x, -5), 7)


def test_coin():
    import os

    assert os.urandom(1)[0] < 128
""",
}

F2P = {
    "good": ("tests/test_ops.py::test_clamp_matches_reference",),
    "loose": ("tests/test_ops.py::test_low",),
    "implementation": (
        "tests/test_ops.py::test_clamp_matches_reference",
        "tests/test_ops.py::test_guard_is_written_as_documented",
    ),
    "flaky": ("tests/test_ops.py::test_clamp_matches_reference",),
}
P2P = ("tests/test_ops.py::test_high", "tests/test_ops.py::test_span")

ISSUE = "clamp() ignores the lower bound: clamp(-5, 0, 10) returns -5, it should return 0."


def make_repo(root: Path) -> Path:
    """The buggy tree (no graded-test changes yet)."""
    (root / "geom").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "geom" / "__init__.py").write_text("")
    (root / "geom" / "ops.py").write_text(OPS_BUGGY)
    (root / "tests" / "test_ops.py").write_text(TESTS_BASE)
    return root


def make_task(root: Path, kind: str) -> TaskSpec:
    repo = make_repo(root / f"repo-{kind}")
    extra = tuple("tests/test_ops.py::test_coin" for _ in ("x",)) if kind == "flaky" else ()
    return TaskSpec(
        instance_id=f"geom-{kind}",
        repo=RepoSource.directory(repo),
        problem_statement=ISSUE,
        gold_patch=make_patch({"geom/ops.py": OPS_BUGGY}, {"geom/ops.py": OPS_GOLD}),
        test_patch=make_patch(
            {"tests/test_ops.py": TESTS_BASE}, {"tests/test_ops.py": TESTS_BASE + SUITES[kind]}
        ),
        fail_to_pass=F2P[kind],
        pass_to_pass=(*P2P, *extra),
    )


def make_swebench_checkout(root: Path, kind: str = "good") -> tuple[Path, dict[str, object]]:
    """A folder of checkouts holding ``geomlab__geom`` (a git repository whose HEAD is the
    buggy tree) and the SWE-bench row of the task, with the published field names and the
    lists as JSON strings, as SWE-bench publishes them."""
    import json
    import subprocess

    task = make_task(root, kind)
    checkout = root / "checkouts" / "geomlab__geom"
    checkout.parent.mkdir(parents=True, exist_ok=True)
    Path(task.repo.location).rename(checkout)
    ident = ["-c", "user.name=geom", "-c", "user.email=geom@example.org"]
    for args in (["init", "-q"], ["add", "-A"], [*ident, "commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=checkout, check=True, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=checkout, check=True, capture_output=True, text=True
    ).stdout.strip()
    row: dict[str, object] = {
        "repo": "geomlab/geom",
        "instance_id": f"geomlab__geom-{kind}",
        "base_commit": head,
        "patch": task.gold_patch,
        "test_patch": task.test_patch,
        "problem_statement": task.problem_statement,
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "0.1",
        "environment_setup_commit": head,
        "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
        "PASS_TO_PASS": json.dumps(list(task.pass_to_pass)),
    }
    return checkout.parent, row
