"""The grader on real repository layouts: no false rejects, no false accepts (Arctic-SWE §5).

Eleven published projects (``real_layouts.CORPUS``), chosen for where they keep code, tests
and pytest configuration: a top-level ``test/`` package (the stdlib's name), ``src/`` layouts, a
root conftest, tests inside the package, pytest plugins shipped in the package (one under a
``contrib/pytest/`` folder), a PEP 420 namespace package, ``pytest.ini`` / ``setup.cfg`` /
``pyproject.toml`` options the tests depend on. On each, on both backends: the gold patch scores 1, the buggy tree scores 0 with exactly its
FAIL_TO_PASS failing, and a real fix that touches an unusual place (a new module, a data file,
a mode bit, a rename, a deletion) scores 1 with nothing dropped. Two legitimate fixes score 0
by design and must say why: a change over the size limit, and a new conftest fixture the task
does not allow.
"""

from __future__ import annotations

import os
import re
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from real_layouts import BY_NAME, CORPUS, SEED
from real_layouts_tasks import BuiltTask, build_task, download

from swe_curate._importers import task_from_native_row
from swe_curate._inject import InjectConfig, inject, unpack_source
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict
from swe_sandbox import Backend, DockerBackend, GradeResult, NamespaceBackend, Sandbox, TestOutcome

BACKENDS = [
    pytest.param("namespace", id="namespace"),
    pytest.param("docker", id="docker", marks=pytest.mark.docker),
]
#: Projects whose three grades run in CI; the rest are `slow` (the CI budget is minutes).
NAMES = [
    pytest.param(project.name, id=project.name, marks=[pytest.mark.slow] if project.slow else [])
    for project in CORPUS
]
PASSED = TestOutcome.PASSED


@pytest.fixture(scope="session")
def layout_docker_backend() -> Iterator[DockerBackend]:
    backend = DockerBackend()
    backend.base_image()
    yield backend
    backend.reap_orphans()


@pytest.fixture(scope="session", params=BACKENDS)
def layout_backend(request: pytest.FixtureRequest) -> Backend:
    name = "namespace_backend" if request.param == "namespace" else "layout_docker_backend"
    found: Backend = request.getfixturevalue(name)
    return found


@pytest.fixture(scope="session")
def layout_scorer(layout_backend: Backend) -> Iterator[SandboxScorer]:
    with SandboxScorer(layout_backend) as scorer:
        yield scorer


_BUILT: dict[str, BuiltTask] = {}


@pytest.fixture(scope="session")
def corpus_task(
    layout_scorer: SandboxScorer, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], BuiltTask]:
    """Each project's task, built and measured once per session, on the first backend that
    asks (both backends run the same base root filesystem, so one measurement serves both)."""

    def get(name: str) -> BuiltTask:
        if name not in _BUILT:
            try:
                built = build_task(BY_NAME[name], tmp_path_factory.mktemp(name), layout_scorer)
            except urllib.error.URLError as exc:  # a sha256 mismatch is not skipped
                if os.environ.get("CI"):  # CI has the index: an outage there is a failure
                    raise
                pytest.skip(f"package index unreachable: {exc}")
            _BUILT[name] = built
        return _BUILT[name]

    return get


def verdict(result: GradeResult) -> str:
    """What a failed assertion shows: the reward, the reasons and what the policy dropped."""
    return f"reward={result.reward} reasons={list(result.reasons)} dropped={list(result.dropped)}"


@pytest.mark.parametrize("name", NAMES)
def test_gold_patch_resolves(
    name: str, corpus_task: Callable[[str], BuiltTask], layout_scorer: SandboxScorer
) -> None:
    task = corpus_task(name).task
    result = layout_scorer.grade(task, task.gold_patch)
    assert result.reward == 1, verdict(result)


@pytest.mark.parametrize("name", NAMES)
def test_buggy_tree_fails_exactly_its_fail_to_pass(
    name: str, corpus_task: Callable[[str], BuiltTask], layout_scorer: SandboxScorer
) -> None:
    task = corpus_task(name).task
    result = layout_scorer.grade(task, "")
    assert result.reward == 0
    assert result.reason_codes == ("FAIL_TO_PASS",), verdict(result)
    still_passing = [t for t in task.fail_to_pass if result.tests.get(t) is PASSED]
    broken = [t for t in task.pass_to_pass if result.tests.get(t) is not PASSED]
    assert not still_passing, verdict(result)
    assert not broken, verdict(result)
    assert result.dropped == (), f"an empty patch changed nothing: {verdict(result)}"


@pytest.mark.parametrize("name", NAMES)
def test_unusual_fix_resolves(
    name: str, corpus_task: Callable[[str], BuiltTask], layout_scorer: SandboxScorer
) -> None:
    built = corpus_task(name)
    assert built.fix_patch != built.task.gold_patch or built.project.added_test
    result = layout_scorer.grade(built.task, built.fix_patch)
    assert result.reward == 1, f"{built.project.fix_kind}: {verdict(result)}"
    assert result.dropped == (), f"{built.project.fix_kind}: {verdict(result)}"


def test_new_conftest_fixture_needs_allowed_config_paths(
    corpus_task: Callable[[str], BuiltTask], layout_scorer: SandboxScorer
) -> None:
    """Legitimate but zero: without the allowance the fixture is dropped, its test errors."""
    built = corpus_task("validators")
    assert built.task.allowed_config_paths == ("tests/conftest.py",)
    strict = attrs.evolve(built.task, allowed_config_paths=())
    result = layout_scorer.grade(strict, built.fix_patch)
    assert result.reward == 0
    assert [d for d in result.dropped if d.startswith("tests/conftest.py:")], verdict(result)
    new_test = "tests/test_length.py::test_fixture_password_has_length_eight"
    assert new_test in strict.fail_to_pass
    assert result.tests.get(new_test) is not PASSED, verdict(result)


def test_change_over_the_size_limit_scores_zero_and_says_why(
    corpus_task: Callable[[str], BuiltTask], layout_backend: Backend
) -> None:
    """Legitimate but zero: the gold fix plus a 17 MiB data file in the package."""
    task = corpus_task("boltons").task
    with Sandbox.create(task, layout_backend) as sandbox:
        sandbox.apply_patch(task.gold_patch)
        made = sandbox.execute_bash(
            "python3 -c \"open('boltons/table.txt', 'w').write(('x' * 99 + '\\n') * 174064)\""
        )
        assert made.ok, made.output
        result = sandbox.grade()
    assert result.reward == 0
    said = " ".join((*result.reasons, *result.dropped))
    assert re.search(r"larger than|size|MiB|bytes", said), verdict(result)


@pytest.mark.slow
def test_inject_search_finds_a_task_on_a_real_layout(
    namespace_backend: NamespaceBackend, tmp_path: Path
) -> None:
    """The full injector (collect, probe, grade mutants) on a project whose tests live inside
    the package and whose pyproject sets testpaths, strict markers and warnings as errors."""
    project = BY_NAME["toolz"]
    repo = unpack_source(download(project), tmp_path / "repo")
    config = InjectConfig(max_candidates=8, max_tasks=1, seed=SEED, describe_failures=False)
    with SandboxScorer(namespace_backend) as scorer:
        records = list(inject(repo, tmp_path / "out", scorer, config, name=project.id))
        kept = [r for r in records if r.verdict is Verdict.INJECTED]
        assert kept, [(r.verdict, r.reason) for r in records]
        row = kept[0].measurements["task"]
        assert isinstance(row, dict)
        task = task_from_native_row(row)
        gold = scorer.grade(task, task.gold_patch)
        assert gold.reward == 1, verdict(gold)
