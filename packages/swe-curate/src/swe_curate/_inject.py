"""Deck building by bug injection (SWE-smith style) for any Python repository with tests.

Procedure: collect the repository's tests and keep those that pass on the original tree; apply
AST mutations to its (non-test) functions — the same wrong-patch operators the offline judge
uses: inverted and weakened conditions, off-by-one constants and boundaries, early returns,
dropped statements; grade each mutant with the sandbox; keep a mutant when at least one test
fails and every other test still passes (no collection errors). Each kept mutant becomes a task
whose buggy tree is the mutant, whose gold patch restores the original, whose FAIL_TO_PASS are
the tests it broke and whose issue text is templated from those failures.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
import shutil
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._audit import AuditConfig, binding_assertions
from swe_curate._diff import make_patch
from swe_curate._differential import module_name
from swe_curate._errors import CurateError, MutationError
from swe_curate._importers import task_to_row
from swe_curate._records import CurationRecord
from swe_curate._scorer import Scorer
from swe_curate._source import (
    ChangedFunction,
    FunctionNode,
    iter_functions,
    same_program,
    splice_function,
)
from swe_curate._verdicts import Verdict
from swe_curate._wrong import WRONG_MUTATORS
from swe_sandbox import DEFAULT_TEST_COMMAND, RepoSource, TaskSpec, TestOutcome

STAGE = "inject"
_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*|[^/]*_test)\.py$|(^|/)(tests?|testing)/|(^|/)conftest\.py$"
)
_SKIP_DIRS = {".git", "docs", "doc", "build", "dist", ".tox", ".nox", "examples", "benchmarks"}


@attrs.frozen
class InjectConfig:
    """``max_candidates`` mutants are graded (sampled with ``seed``); ``max_tasks`` are kept."""

    max_candidates: int = 30
    max_tasks: int = 10
    seed: int = 0
    test_command: str = DEFAULT_TEST_COMMAND
    collect_timeout_s: float = 600.0
    describe_failures: bool = True
    """Quote the failing assertions in the issue (two extra probe runs per kept mutant)."""
    environment: str | None = None
    """Docker image the repository's tests run in (its interpreter and installed
    dependencies, e.g. from ``swe-sandbox image build-env``); every kept task carries it."""


@attrs.frozen
class Mutant:
    """One injected bug: the file it lives in and the mutated text."""

    path: str
    qualname: str
    mutator: str
    description: str
    original: str
    mutated: str


def is_test_file(path: str) -> bool:
    return bool(_TEST_FILE.search(path))


def source_files(root: Path) -> dict[str, str]:
    """Non-test Python files of a repository tree (repo-relative path → text)."""
    out: dict[str, str] = {}
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        if set(rel.split("/")[:-1]) & _SKIP_DIRS or is_test_file(rel) or rel == "setup.py":
            continue
        try:
            out[rel] = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def mutants(files: dict[str, str], rng: random.Random, per_function: int = 2) -> Iterator[Mutant]:
    """Single-site mutants, ``per_function`` per function, functions in ``rng`` order.

    Mutants are generated lazily per sampled function, so a large repository costs only what
    is graded.
    """
    functions: list[tuple[str, str, FunctionNode]] = []
    for path, text in files.items():
        try:
            module = parse_source(text)
        except SyntaxError:
            continue
        functions.extend((path, qualname, node) for qualname, node in iter_functions(module))
    rng.shuffle(functions)
    for path, qualname, node in functions:
        yield from itertools.islice(
            _function_mutants(path, files[path], qualname, node, rng), per_function
        )


def _function_mutants(
    path: str, text: str, qualname: str, node: FunctionNode, rng: random.Random
) -> Iterator[Mutant]:
    end = node.end_lineno or node.lineno
    func = ChangedFunction(path, qualname, node, frozenset(range(node.lineno, end + 1)))
    # Mutated ASTs are cheap; splicing and re-parsing the file is not, so sample first.
    variants = [
        (name, description, new_node)
        for name, mutator in WRONG_MUTATORS.items()
        for description, new_node in mutator(func)
    ]
    rng.shuffle(variants)
    for name, description, new_node in variants:
        assert isinstance(new_node, ast.FunctionDef | ast.AsyncFunctionDef)
        try:
            mutated = splice_function(text, node, new_node)
        except MutationError:
            continue
        if not same_program(mutated, text):
            yield Mutant(path, qualname, name, description, text, mutated)


def unpack_source(archive: Path, dest: Path) -> Path:
    """Extract an sdist/tarball (dropping its top-level folder) into ``dest``; return it."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            member.name = parts[1]
            members.append(member)
        # The "data" filter refuses absolute paths, links out of dest and special files.
        tar.extractall(dest, members=members, filter="data")
    return dest


def collect_tests(scorer: Scorer, task: TaskSpec, timeout: float) -> list[str]:
    """Test ids pytest collects in the sandbox."""
    done = scorer.run(
        task,
        "",
        "python3 -m pytest --collect-only -q -p no:cacheprovider 2>/dev/null",
        timeout=timeout,
    )
    return [
        line.strip()
        for line in done.output.splitlines()
        if "::" in line and not line.startswith(" ")
    ]


def issue_text(
    mutant: Mutant, failing: list[str], failures: Sequence[Mapping[str, Any]] = ()
) -> str:
    """A templated issue from the failures (it names the symptom, never the fix).

    ``failures`` are binding assertions of the failing tests (as Pipeline 1 records them); up
    to three are quoted with what they raised on the buggy tree.
    """
    module = module_name(mutant.path) or mutant.path
    shown = "\n".join(f"- `{t}`" for t in failing[:5])
    more = f"\n- ... and {len(failing) - 5} more" if len(failing) > 5 else ""
    name = mutant.qualname.rsplit(".", 1)[-1]
    quoted: dict[str, None] = {}
    for failure in failures:
        if failure.get("source") and len(quoted) < 3:
            raised = str(failure.get("buggy") or "").splitlines()[:1]
            quoted["\n".join([str(failure["source"]), *raised])] = None
    examples = "".join(f"\n```\n{text}\n```\n" for text in quoted)
    return (
        f"`{name}` in `{module}` returns wrong results\n\n"
        f"Since the last change, `{mutant.qualname}` no longer behaves as documented. "
        f"These tests fail:\n{shown}{more}\n"
        + (f"\nFor example:\n{examples}" if examples else "")
        + f"\nExpected: `{name}` behaves as these tests (and its documentation) describe.\n"
    )


def inject(
    repo: Path,
    out_dir: Path,
    scorer: Scorer,
    config: InjectConfig = InjectConfig(),
    *,
    name: str | None = None,
) -> Iterator[CurationRecord]:
    """Yield one record per graded mutant; kept ones carry their task row in ``measurements``.

    The mutated trees are written under ``out_dir/<instance_id>/``.
    """
    name = re.sub(r"[^A-Za-z0-9._-]", "-", name or repo.name).lstrip("._-") or "repo"
    base = TaskSpec(
        instance_id=f"{name}-base",
        repo=RepoSource.directory(repo),
        test_command=config.test_command,
        environment=config.environment,
    )
    collected = collect_tests(scorer, base, config.collect_timeout_s)
    if not collected:
        raise CurateError(f"{repo}: pytest collected no tests in the sandbox")
    graded_files = tuple(sorted({t.split("::", 1)[0] for t in collected}))
    probe = attrs.evolve(base, pass_to_pass=tuple(collected), graded_files=graded_files)
    original = scorer.grade(probe, "")
    passing = tuple(t for t in collected if original.tests.get(t) is TestOutcome.PASSED)
    graded = attrs.evolve(probe, pass_to_pass=passing)
    candidates = mutants(source_files(repo), random.Random(config.seed))
    kept = 0
    for index, mutant in enumerate(itertools.islice(candidates, config.max_candidates)):
        if kept >= config.max_tasks:
            return
        record = _try_mutant(
            repo, out_dir, scorer, graded, name, index, mutant, config.describe_failures
        )
        kept += record.verdict is Verdict.INJECTED
        yield record


def _try_mutant(
    repo: Path,
    out_dir: Path,
    scorer: Scorer,
    graded: TaskSpec,
    name: str,
    index: int,
    mutant: Mutant,
    describe: bool,
) -> CurationRecord:
    began = time.monotonic()
    instance_id = f"{name}-{mutant.mutator}-{index}"
    patch = make_patch({mutant.path: mutant.original}, {mutant.path: mutant.mutated})
    measurements: dict[str, object] = {
        "path": mutant.path,
        "function": mutant.qualname,
        "mutator": mutant.mutator,
        "description": mutant.description,
    }

    def record(verdict: Verdict, reason: str) -> CurationRecord:
        return CurationRecord(
            instance_id, STAGE, verdict, reason, measurements, elapsed_s=time.monotonic() - began
        )

    try:
        result = scorer.grade(graded, patch)
    except CurateError as exc:
        return record(Verdict.SANDBOX_ERROR, str(exc))
    failing = [t for t in graded.pass_to_pass if result.tests.get(t) is not TestOutcome.PASSED]
    if any(r.startswith(("collection-error", "no-report", "timeout")) for r in result.reasons):
        return record(
            Verdict.NO_VALID_MUTANT, f"the mutant breaks the test run: {result.reasons[0]}"
        )
    if not failing:
        return record(Verdict.NO_VALID_MUTANT, "no test fails: the suite does not notice this bug")
    if len(failing) == len(graded.pass_to_pass):
        return record(Verdict.NO_VALID_MUTANT, "every test fails: not a localised bug")
    tree = out_dir / instance_id
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(repo, tree, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    (tree / mutant.path).write_text(mutant.mutated, encoding="utf-8")
    task = TaskSpec(
        instance_id=instance_id,
        repo=RepoSource.directory(tree),
        problem_statement=issue_text(mutant, failing),
        gold_patch=make_patch({mutant.path: mutant.mutated}, {mutant.path: mutant.original}),
        graded_files=graded.graded_files,
        fail_to_pass=tuple(failing),
        pass_to_pass=tuple(t for t in graded.pass_to_pass if t not in failing),
        test_command=graded.test_command,
        environment=graded.environment,
    )
    if describe:
        try:
            failures = binding_assertions(task, scorer, failing[:5], AuditConfig())
        except CurateError:
            failures = []
        task = attrs.evolve(task, problem_statement=issue_text(mutant, failing, failures))
    measurements.update(fail_to_pass=len(failing), task=task_to_row(task))
    return record(Verdict.INJECTED, f"{len(failing)} test(s) fail, {len(task.pass_to_pass)} pass")
