"""Real tasks in their own environments, end to end (Arctic-SWE §4 deck building, §5 isolation).

The project is `isodate` 0.6.1 from the package index: its published sdist (its own unittest
suite, run by pytest) and one third-party dependency, `six`, which the swe-sandbox base image
does not have. The sdist is fetched at test time with the host's ``pip download`` (sha256
checked, cached), never committed. Its environment image comes from ``build_env_image`` (base
-> host wheelhouse -> env image, cached by content hash, so a session builds it once).

1. swe-curate's injector plants bugs in the tree (graded in the environment); an injected task
   scores gold 1 and empty 0 on both backends, inside that environment.
2. Two injected bugs become SWE-bench-format rows (published field names, FAIL_TO_PASS as a
   JSON string) over one git checkout with two base commits; with a row whose base commit is
   not in the repository and a row whose environment image does not exist, ``arctic-swe deck
   import --validate audit`` (Pipeline 1 on Docker) admits the two real rows and gives each bad
   row its own verdict; the admitted tasks grade gold 1 / empty 0, and ``arctic-swe rollout``
   runs a random-initialised policy on the Docker-backed deck of 2 tasks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

from arctic_swe._cli import main
from arctic_swe.chat import save_tokenizer, train_tokenizer
from arctic_swe.deck import IMPORT_FILE, load_deck
from arctic_swe.model import build_policy, policy_config, save_policy
from swe_curate import (
    InjectConfig,
    SandboxScorer,
    Verdict,
    inject,
    make_patch,
    task_from_native_row,
    task_to_row,
    unpack_source,
)
from swe_sandbox import (
    Backend,
    DockerBackend,
    EnvSpec,
    NamespaceBackend,
    Sandbox,
    TaskSpec,
    build_env_image,
)

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="the namespace sandbox needs root and unshare",
    ),
]

PROJECT, VERSION = "isodate", "0.6.1"
SDIST_SHA256 = "48c5881de7e8b0a0d648cb024c8062dc84e7b840ed81e864c7614fd3c127bde9"
TEST_COMMAND = "python3 -m pytest -p no:cacheprovider src/isodate/tests"


def _sdist(folder: Path) -> Path:
    """The published sdist via ``pip download`` (the host reaches the package index)."""
    from swe_sandbox._env_image import host_pip

    target = folder / f"{PROJECT}-{VERSION}.tar.gz"
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [*host_pip(), "download", "--no-deps", "--no-binary=:all:",
             "--disable-pip-version-check", "-d", str(folder), f"{PROJECT}=={VERSION}"],
            check=True,
            capture_output=True,
        )  # fmt: skip
    assert hashlib.sha256(target.read_bytes()).hexdigest() == SDIST_SHA256
    return target


@pytest.fixture(scope="module")
def sdist() -> Path:
    from swe_sandbox._rootfs import cache_root

    return _sdist(cache_root() / "test-downloads")


@pytest.fixture(scope="module")
def environment(sdist: Path) -> str:
    """isodate's environment image: the base's Python plus ``six`` (no network inside)."""
    spec = EnvSpec(
        name="isodate", requirements=("six==1.16.0",), repo=str(sdist), strip_components=1
    )
    return build_env_image(spec)


@pytest.fixture(scope="module")
def injected(
    sdist: Path, environment: str, tmp_path_factory: pytest.TempPathFactory
) -> list[TaskSpec]:
    """Two bugs swe-curate's injector planted in the real tree, graded in its environment."""
    root = tmp_path_factory.mktemp("isodate")
    source = unpack_source(sdist, root / "source")
    config = InjectConfig(
        max_candidates=16,
        max_tasks=2,
        seed=0,
        test_command=TEST_COMMAND,
        environment=environment,
        describe_failures=False,
    )
    with SandboxScorer(NamespaceBackend()) as scorer:
        records = list(inject(source, root / "trees", scorer, config, name="isodate"))
    tasks = [
        task_from_native_row(record.measurements["task"])  # type: ignore[arg-type]
        for record in records
        if record.verdict is Verdict.INJECTED
    ]
    assert len(tasks) == 2, [f"{r.instance_id}: {r.reason}" for r in records]
    return tasks


def _backend(name: str) -> Backend:
    return DockerBackend() if name == "docker" else NamespaceBackend()


def _reward(task: TaskSpec, backend: Backend, patch: str) -> int:
    with Sandbox.create(task, backend) as sandbox:
        if patch:
            sandbox.apply_patch(patch)
        return sandbox.grade().reward


@pytest.mark.parametrize("name", ["namespace", "docker"])
def test_an_injected_real_task_scores_gold_1_and_empty_0_in_its_environment(
    injected: list[TaskSpec], environment: str, name: str
) -> None:
    task = injected[0]
    assert task.environment == environment
    assert task.fail_to_pass
    assert task.pass_to_pass
    backend = _backend(name)
    assert _reward(task, backend, task.gold_patch) == 1
    assert _reward(task, backend, "") == 0


def _git(cwd: Path, *args: str) -> str:
    ident = ["-c", "user.name=isodate", "-c", "user.email=isodate@example.org"]
    done = subprocess.run(
        ["git", *ident, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _swebench_rows(tasks: list[TaskSpec], checkout: Path) -> list[dict[str, object]]:
    """One checkout, one base commit per task: the buggy tree without the test files that hold
    its FAIL_TO_PASS tests, which come back through ``test_patch`` (as SWE-bench rows do)."""
    checkout.mkdir(parents=True)
    _git(checkout, "init", "-q")
    rows = []
    for index, task in enumerate(tasks):
        tree = Path(task.repo.location)
        held = sorted({test.split("::", 1)[0] for test in task.fail_to_pass})
        for entry in checkout.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        shutil.copytree(tree, checkout, dirs_exist_ok=True)
        added = {path: (checkout / path).read_text() for path in held}
        for path in held:
            (checkout / path).unlink()
        _git(checkout, "checkout", "-q", "--orphan", f"task-{index}")
        _git(checkout, "add", "-A")
        _git(checkout, "commit", "-q", "-m", f"base of {task.instance_id}")
        base = _git(checkout, "rev-parse", "HEAD")
        rows.append(
            {
                "repo": "gweis/isodate",
                "instance_id": f"gweis__isodate-{index + 1}",
                "base_commit": base,
                "patch": task.gold_patch,
                "test_patch": make_patch({}, added),
                "problem_statement": task.problem_statement,
                "hints_text": "",
                "created_at": "2024-01-01T00:00:00Z",
                "version": VERSION,
                "environment_setup_commit": base,
                "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
                "PASS_TO_PASS": list(task.pass_to_pass),
            }
        )
    return rows


def _random_policy(texts: list[str], target: Path) -> Path:
    tokenizer = train_tokenizer(texts * 8, vocab_size=1024)
    path = save_policy(build_policy(policy_config(len(tokenizer)), 0), target)
    save_tokenizer(tokenizer, path)
    return path


@pytest.fixture(scope="module")
def checkout_rows(
    injected: list[TaskSpec], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[dict[str, object]]]:
    checkouts = tmp_path_factory.mktemp("checkouts")
    return checkouts, _swebench_rows(injected, checkouts / "gweis__isodate")


def test_swebench_rows_import_audit_grade_and_roll_out_on_docker(
    injected: list[TaskSpec],
    environment: str,
    checkout_rows: tuple[Path, list[dict[str, object]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    checkouts, rows = checkout_rows
    missing_commit = {**rows[0], "instance_id": "gweis__isodate-9", "base_commit": "ab" * 20}
    no_image = task_to_row(
        attrs.evolve(
            injected[0], instance_id="isodate-no-image", environment="swe-sandbox-env:none-0"
        )
    )
    source = tmp_path / "rows.jsonl"
    batch = [rows[0], missing_commit, no_image, rows[1]]
    source.write_text("".join(json.dumps(row) + "\n" for row in batch))
    deck = tmp_path / "deck"
    argv = ["deck", "import", str(source), "--out", str(deck), "--repo-dir", str(checkouts)]
    argv += ["--environment", environment, "--backend", "docker", "--validate", "audit"]
    assert main([*argv, "--reruns", "1"]) == 1  # two rows are not tasks
    verdicts = {
        r["instance_id"]: r["verdict"]
        for r in map(json.loads, (deck / IMPORT_FILE).read_text().splitlines())
    }
    assert verdicts == {
        "gweis__isodate-1": "admitted",
        "gweis__isodate-2": "admitted",
        "gweis__isodate-9": "missing_base_commit",
        "isodate-no-image": "missing_repo",
    }
    capsys.readouterr()

    tasks = [task.spec for task in load_deck(deck).split("pool")]
    assert [t.instance_id for t in tasks] == ["gweis__isodate-1", "gweis__isodate-2"]
    assert {task.environment for task in tasks} == {environment}
    # Pipeline 1 graded both trees of each row during the import; the deck's task also scores
    # gold 1 / empty 0 through the plain grading path, inside its environment.
    docker = DockerBackend()
    assert _reward(tasks[1], docker, tasks[1].gold_patch) == 1
    assert _reward(tasks[1], docker, "") == 0

    policy = _random_policy([t.problem_statement for t in tasks], tmp_path / "policy")
    argv = ["rollout", "--deck", str(deck), "--policy", str(policy), "--backend", "docker"]
    assert main([*argv, "--tasks", "2", "--workers", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rollouts"] == 2


@pytest.mark.slow  # a pip-built environment image of its own: 47 s of CI; test_environments covers env builds
def test_swerebench_rows_build_their_own_environment_and_a_bad_recipe_is_one_row(
    checkout_rows: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    checkouts, rows = checkout_rows
    recipe = {
        "pip_packages": ["six==1.16.0"],
        "test_cmd": TEST_COMMAND,
        "log_parser": "parse_log_pytest",
    }
    good = [{**row, "install_config": recipe} for row in rows]
    unavailable = {**good[0], "instance_id": "gweis__isodate-7", "version": "bad"}
    unavailable["install_config"] = {**recipe, "pip_packages": ["six==0.0.99"]}
    old_python = {**good[1], "instance_id": "gweis__isodate-8", "version": "py27"}
    old_python["install_config"] = {**recipe, "python": "2.7"}
    source = tmp_path / "rebench.jsonl"
    batch = [good[0], unavailable, old_python, good[1]]
    source.write_text("".join(json.dumps(row) + "\n" for row in batch))
    deck = tmp_path / "deck"
    argv = ["deck", "import", str(source), "--out", str(deck), "--repo-dir", str(checkouts)]
    assert main([*argv, "--format", "swerebench", "--build-env"]) == 1
    records = {
        r["instance_id"]: r for r in map(json.loads, (deck / IMPORT_FILE).read_text().splitlines())
    }
    assert {name: r["verdict"] for name, r in records.items()} == {
        "gweis__isodate-1": "admitted",
        "gweis__isodate-2": "admitted",
        "gweis__isodate-7": "environment_build_failed",
        "gweis__isodate-8": "environment_build_failed",
    }
    assert records["gweis__isodate-7"]["reason"].startswith("step wheelhouse:")
    assert "six==0.0.99" in records["gweis__isodate-7"]["reason"]
    assert records["gweis__isodate-8"]["reason"].startswith("step base: the spec wants Python 2.7")
    tasks = [task.spec for task in load_deck(deck).split("pool")]
    # One recipe (repository, version, requirements), one image: both rows share it.
    assert len({t.environment for t in tasks}) == 1
    assert str(tasks[0].environment).startswith("swe-sandbox-env:gweis-isodate-0.6.1-")
    assert tasks[0].test_command == TEST_COMMAND
    assert _reward(tasks[0], NamespaceBackend(), tasks[0].gold_patch) == 1
