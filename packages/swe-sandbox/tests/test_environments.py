"""Tasks in their own environment images, on both backends (Docker-marked: they need an engine
to build and export images; the namespace backend runs on the exported root filesystem)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
from pathlib import Path, PurePosixPath

import attrs
import pytest
from sandbox_testkit.isodate_env import (
    build_isodate_env,
    env_spec,
    host_pip_available,
    make_isodate_task,
)
from sandbox_testkit.naive import naive_reward
from sandbox_testkit.toyrepo import git

from swe_sandbox import (
    Backend,
    DockerBackend,
    EnvironmentBuildError,
    EnvSpec,
    ImageNotFoundError,
    NamespaceBackend,
    RepoSource,
    Sandbox,
    SandboxPool,
    TaskSpec,
    TestOutcome,
    build_env_image,
    build_task_image,
)
from swe_sandbox._cli import main
from swe_sandbox._docker_image import build_context, docker_build, export_tree_from_image
from swe_sandbox._environment import inspect_image

pytestmark = [
    pytest.mark.docker,
    # Where Docker is required (CI), a missing host pip fails these tests instead of skipping.
    pytest.mark.skipif(
        not host_pip_available() and os.environ.get("ARCTIC_REQUIRE_DOCKER") != "1",
        reason="the host has no pip to fetch wheels",
    ),
]


@pytest.fixture(scope="session")
def isodate_env(docker_backend: DockerBackend) -> str:
    """The isodate environment image (built once per machine, then a content-hash cache hit)."""
    return build_isodate_env()


@pytest.fixture(scope="session")
def isodate_task(
    tmp_path_factory: pytest.TempPathFactory, isodate_env: str, docker_backend: DockerBackend
) -> TaskSpec:
    return make_isodate_task(tmp_path_factory.mktemp("isodate"), isodate_env, docker_backend)


# ----------------------------------------------------------------- export round trip
def _tree_image(docker_backend: DockerBackend, tmp_path: Path) -> tuple[str, Path]:
    """A real image holding a git repository at /testbed: nested dirs, an in-tree symlink."""
    tree = tmp_path / "tree"
    (tree / "timeparse" / "sub").mkdir(parents=True)
    (tree / "timeparse" / "durations.py").write_text("def parse(s):\n    return s\n")
    (tree / "timeparse" / "sub" / "deep.txt").write_text("deep\n")
    (tree / "docs").mkdir()
    (tree / "docs" / "durations.py").symlink_to("../timeparse/durations.py")
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(tree.iterdir()):
            archive.add(entry, arcname=entry.name)
    base = docker_backend.base_image()
    context = build_context(f"FROM {base}\nCOPY tb/ /testbed/\n", {}, {"tb": buffer.getvalue()})
    tag = docker_build(docker_backend.client, context, "swe-sandbox-test:export", "test", {})
    return tag, tree


def _naive_old_extract(reference: str, client: object, dest: Path) -> list[str]:
    """What the export did before: ask for ``/testbed/.``, normalise names, strip one part."""
    container = client.containers.create(reference, command=["true"])  # type: ignore[attr-defined]
    try:
        stream, _ = container.get_archive("/testbed/.")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            names = [PurePosixPath(m.name).parts[1:] for m in archive.getmembers()]
    finally:
        container.remove(force=True)
    return sorted("/".join(parts) for parts in names if parts)


def test_export_round_trip_keeps_paths_git_and_links(
    docker_backend: DockerBackend, tmp_path: Path
) -> None:
    tag, tree = _tree_image(docker_backend, tmp_path)
    naive = _naive_old_extract(tag, docker_backend.client, tmp_path)
    assert "durations.py" in naive  # the old export flattened the tree
    assert "HEAD" in naive
    assert "timeparse/durations.py" not in naive
    out = tmp_path / "out"
    out.mkdir()
    export_tree_from_image(tag, "/testbed", out, client=docker_backend.client)
    assert (out / "timeparse" / "durations.py").read_text() == "def parse(s):\n    return s\n"
    assert (out / "timeparse" / "sub" / "deep.txt").read_text() == "deep\n"
    assert (out / ".git" / "HEAD").is_file()
    link = out / "docs" / "durations.py"
    assert link.is_symlink()
    assert str(link.readlink()) == "../timeparse/durations.py"
    assert git(out, "status", "--porcelain") == ""  # the same commit, byte for byte
    assert git(out, "rev-parse", "HEAD") == git(tree, "rev-parse", "HEAD")


def test_export_of_missing_image_or_path_is_typed(
    docker_backend: DockerBackend, tmp_path: Path
) -> None:
    with pytest.raises(ImageNotFoundError):
        export_tree_from_image("swe-sandbox-test:absent", "/testbed", tmp_path)


# ----------------------------------------------------------------- environment images
def test_env_image_provides_its_dependency(isodate_env: str, backend: Backend) -> None:
    task = TaskSpec(
        instance_id="env-probe", repo=RepoSource.image(isodate_env), environment=isodate_env
    )
    with Sandbox.create(task, backend) as sandbox:
        probe = sandbox.execute_bash(
            "command -v python3; python3 -c 'import six; print(six.__version__)';"
            " /usr/bin/python3 -c 'import six' 2>/dev/null || echo base-has-no-six;"
            " ls -A /testbed | wc -l; ls src/isodate | head -3"
        )
    lines = probe.output.split()
    assert lines[:4] == ["/opt/swe-env/bin/python3", "1.16.0", "base-has-no-six", "0"], probe
    assert "__init__.py" in lines  # the repo copy came from the image's /testbed into /work


def test_env_image_keeps_the_isolation(isodate_env: str, backend: Backend) -> None:
    task = TaskSpec(instance_id="env-iso", repo=RepoSource.image(isodate_env))
    with Sandbox.create(task, backend) as sandbox:
        assert sandbox.execute_bash("id -u").output.strip() == "1000"
        assert not sandbox.execute_bash("touch /opt/swe-env/bin/evil").ok  # read-only image
        assert not sandbox.execute_bash("mkdir /testbed/x").ok  # the masked copy stays empty
        net = sandbox.execute_bash(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\""
        )
        assert not net.ok  # no network in the environment either
        assert "/work" not in sandbox.env["PATH"]


@pytest.mark.slow  # a docker build plus a whole-rootfs export: 15-40 s on the 2-core VM
def test_namespace_init_finds_python_on_the_image_path(
    docker_backend: DockerBackend, namespace_backend: NamespaceBackend, toy_task: TaskSpec
) -> None:
    """An image without /usr/bin/python3 (say a conda base) still starts namespace sandboxes:
    the init runs the first python3 on the image's PATH."""
    base = docker_backend.base_image()
    dockerfile = (
        f"FROM {base}\n"
        "RUN mkdir -p /opt/py/bin && cp /usr/bin/python3.11 /opt/py/bin/python3"
        " && rm /usr/bin/python3 /usr/bin/python3.11\n"
        "ENV PATH=/opt/py/bin:/usr/local/bin:/usr/bin:/bin\n"
    )
    tag = docker_build(
        docker_backend.client, build_context(dockerfile, {}, {}), "swe-sandbox-test:py", "t", {}
    )
    task = attrs.evolve(toy_task, instance_id="conda-like", environment=tag)
    with Sandbox.create(task, namespace_backend) as sandbox:
        assert sandbox.execute_bash("command -v python3").output.strip() == "/opt/py/bin/python3"
        sandbox.apply_patch(task.gold_patch)
        assert sandbox.grade().reward == 1


def test_env_image_is_cached_by_content_hash(isodate_env: str) -> None:
    info = inspect_image(DockerBackend().client, isodate_env)
    assert build_isodate_env() == isodate_env
    assert inspect_image(DockerBackend().client, isodate_env).image_id == info.image_id


def test_cli_build_env_prints_the_cached_tag(
    isodate_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = env_spec()
    path = tmp_path / "env.json"
    path.write_text(
        json.dumps(
            {
                "name": spec.name,
                "requirements": list(spec.requirements),
                "repo": spec.repo,
                "strip_components": spec.strip_components,
            }
        )
    )
    assert main(["image", "build-env", str(path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["image"] == isodate_env
    assert "step repo" in captured.err  # progress goes to stderr, the JSON alone to stdout
    assert "step env-image" not in captured.err  # a content-hash hit builds nothing


def test_namespace_rootfs_is_exported_once_per_image(
    isodate_env: str, namespace_backend: NamespaceBackend
) -> None:
    first, env, _ = namespace_backend.environment(isodate_env)
    again, _, _ = NamespaceBackend().environment(isodate_env)
    assert first == again
    assert (first / "opt/swe-env/bin/python3").exists()
    assert env["PATH"].startswith("/opt/swe-env/bin:")


# ----------------------------------------------------------------- the real project
def test_real_project_graded_in_its_environment(isodate_task: TaskSpec, backend: Backend) -> None:
    assert "src/isodate/tests/test_duration.py::DurationTest::test_neg" in isodate_task.fail_to_pass
    assert len(isodate_task.fail_to_pass) <= 3  # one injected line: a few tests notice it
    assert len(isodate_task.pass_to_pass) >= 10  # the rest of the suite still passes
    assert any("test_pickle.py" in t for t in isodate_task.pass_to_pass)  # needs six
    with Sandbox.create(isodate_task, backend) as sandbox:
        empty = sandbox.grade()
        assert empty.reward == 0, empty.reasons
        assert "FAIL_TO_PASS" in empty.reasons[0]
        sandbox.apply_patch(isodate_task.gold_patch)
        gold = sandbox.grade()
    assert gold.reward == 1, gold.reasons


@pytest.mark.slow  # a docker build of the instance layer: 15-50 s on the loaded 2-core VM
def test_instance_layer_on_the_env_image(
    isodate_task: TaskSpec, docker_backend: DockerBackend
) -> None:
    tag = build_task_image(isodate_task, client=docker_backend.client)
    assert build_task_image(isodate_task, client=docker_backend.client) == tag  # cached
    layers = docker_backend.client.images.get(tag).history()
    env_id = inspect_image(docker_backend.client, isodate_task.environment or "").image_id
    assert any(layer["Id"] == env_id for layer in layers)  # base -> env -> instance
    with Sandbox.create(isodate_task, docker_backend, image=tag) as sandbox:
        assert not sandbox.execute_bash("ls src/isodate/tests/test_duration.py").ok  # withheld
        sandbox.apply_patch(isodate_task.gold_patch)
        assert sandbox.grade().reward == 1


def test_pool_warms_and_reuses_sandboxes_per_environment(
    isodate_task: TaskSpec, toy_task: TaskSpec, backend: Backend
) -> None:
    env = isodate_task.environment_image

    async def run() -> tuple[set[str], str, str, int]:
        async with SandboxPool(backend, max_concurrency=2, warm=1, warm_image=env) as pool:
            warm_ids = {s.id for s in pool._idle}
            async with pool.sandbox(isodate_task) as sandbox:
                used = sandbox.sync.id
                await sandbox.apply_patch(isodate_task.gold_patch)
                reward = (await sandbox.grade()).reward
            async with pool.sandbox(toy_task) as other:  # another environment: its own sandbox
                other_image = str(other.sync.image)
        return warm_ids, used, other_image, reward

    warm_ids, used, other_image, reward = asyncio.run(run())
    assert used in warm_ids  # the warm sandbox on the task's environment was taken
    assert reward == 1
    assert other_image == "None"  # the toy task runs on the base, not on the warm image


# ----------------------------------------------------------------- bad input, per task
def test_missing_environment_image_fails_only_its_task(
    toy_task: TaskSpec, backend: Backend
) -> None:
    broken = TaskSpec(
        instance_id="no-such-env", repo=toy_task.repo, environment="swe-sandbox-env:absent-0"
    )

    async def run() -> list[object]:
        async def one(task: TaskSpec) -> object:
            try:
                async with pool.sandbox(task) as sandbox:
                    await sandbox.apply_patch(task.gold_patch)
                    return (await sandbox.grade()).reward
            except ImageNotFoundError as exc:
                return exc

        async with SandboxPool(backend, max_concurrency=2) as pool:
            return list(await asyncio.gather(one(broken), one(toy_task)))

    failed, graded = asyncio.run(run())
    assert isinstance(failed, ImageNotFoundError)
    assert "absent-0" in str(failed)
    assert graded == 1


def test_uninstallable_requirement_names_the_step(
    docker_backend: DockerBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(EnvironmentBuildError) as caught:
        build_env_image(EnvSpec(name="broken", requirements=("six==999.0.0",)))
    assert caught.value.step == "wheelhouse"
    assert "six==999.0.0" in str(caught.value)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"name": "broken", "requirements": ["six==999.0.0"]}))
    assert main(["image", "build-env", str(spec)]) == 1
    error = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert error["error"] == "EnvironmentBuildError"
    assert error["message"].startswith("step wheelhouse:")


def test_bad_spec_and_base_commit_name_their_step(
    tmp_path: Path, docker_backend: DockerBackend
) -> None:
    with pytest.raises(EnvironmentBuildError) as unpinned:
        EnvSpec(name="x", requirements=("six",))
    assert unpinned.value.step == "spec"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    with pytest.raises(EnvironmentBuildError) as missing:
        build_env_image(EnvSpec(name="x", repo=str(repo), base_commit="deadbeef" * 5))
    assert missing.value.step == "repo"


# ----------------------------------------------------------------- SWE-bench-style images
_EDITABLE_TESTS = (
    "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n"
    "def test_imports_the_agent_tree():\n    assert calc.__file__.startswith('/work/')\n"
)
#: A startup hook an agent would drop into the environment's site-packages: it "fixes" calc
#: in every interpreter that starts, without touching the repository.
_HOOK = "import calc; calc.add = lambda a, b: a + b"


@pytest.fixture(scope="session")
def editable_image(docker_backend: DockerBackend, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SWE-bench-style instance image: the repo at /testbed installed in editable mode into
    a venv (``setup.py develop``: an egg-link and an ``easy-install.pth`` naming /testbed)."""
    tree = tmp_path_factory.mktemp("editable") / "tb"
    (tree / "calc").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "setup.py").write_text(
        'from setuptools import setup\nsetup(name="calc", version="0.1", packages=["calc"])\n'
    )
    (tree / "calc" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (tree / "tests" / "test_calc.py").write_text(_EDITABLE_TESTS)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(tree.iterdir()):
            archive.add(entry, arcname=entry.name)
    dockerfile = (
        f"FROM {docker_backend.base_image()}\n"
        "COPY tb/ /testbed/\n"
        "RUN python3 -m venv --without-pip --system-site-packages /opt/venv && cd /testbed"
        " && /opt/venv/bin/python setup.py -q develop --no-deps"
        " && grep -qx /testbed /opt/venv/lib/python3.11/site-packages/easy-install.pth\n"
        "ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin\n"
    )
    context = build_context(dockerfile, {}, {"tb": buffer.getvalue()})
    return docker_build(docker_backend.client, context, "swe-sandbox-test:editable", "t", {})


def _editable_task(image: str) -> TaskSpec:
    return TaskSpec(
        instance_id="editable-calc",
        repo=RepoSource.image(image),  # the repo at /testbed; the image is the environment
        graded_files=("tests/test_calc.py",),
        fail_to_pass=("tests/test_calc.py::test_add",),
        pass_to_pass=("tests/test_calc.py::test_imports_the_agent_tree",),
        gold_patch=(
            "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n"
            " def add(a, b):\n-    return a - b\n+    return a + b\n"
        ),
        test_command="python3 -m pytest -p no:cacheprovider tests",
    )


def test_editable_install_at_testbed_grades_the_agent_tree(
    editable_image: str, backend: Backend
) -> None:
    """/testbed is masked, its egg-link / .pth point at an empty directory, and the tests import
    the agent's tree from /work (P2P asserts it): empty 0, gold 1."""
    task = _editable_task(editable_image)
    with Sandbox.create(task, backend) as sandbox:
        empty = sandbox.grade()
        assert empty.reward == 0
        assert empty.tests["tests/test_calc.py::test_imports_the_agent_tree"] is TestOutcome.PASSED
        sandbox.apply_patch(task.gold_patch)
        gold = sandbox.grade()
    assert gold.reward == 1, gold.reasons


def test_startup_hook_in_the_environment_venv_is_blocked(
    editable_image: str, backend: Backend, docker_backend: DockerBackend
) -> None:
    """Red team, the image environment's own surface: a ``.pth`` hook written into the venv.

    Against a naive harness (the image run writable, tests in place, as a plain ``docker run``
    does) the hook alone makes the failing test pass; in the sandbox the image is read-only, so
    the write fails, and the grade runs in a fresh sandbox anyway: reward 0."""
    site = "/opt/venv/lib/python3.11/site-packages"
    write_hook = f"echo {_HOOK!r} > {site}/zz_fix.pth"
    naive = docker_backend.client.containers.run(
        editable_image,
        ["bash", "-c", f"{write_hook} && cd /testbed && python3 -m pytest -q -p no:cacheprovider"
         " tests/test_calc.py::test_add"],
        network_mode="none",
        remove=True,
    )  # fmt: skip
    assert b"1 passed" in naive  # the hack works when the environment is writable
    task = _editable_task(editable_image)
    with Sandbox.create(task, backend) as sandbox:
        assert not sandbox.execute_bash(write_hook).ok  # read-only environment
        assert not sandbox.run(write_hook, user="root").ok  # not even for harness root
        result = sandbox.submit()
    assert result.reward == 0
    assert result.tests["tests/test_calc.py::test_add"] is TestOutcome.FAILED


def test_tree_hooks_that_the_env_python_would_load_are_dropped(
    editable_image: str, backend: Backend
) -> None:
    """Red team in the image environment: a ``conftest.py`` (and a ``sitecustomize.py`` and a
    ``.pth``) added to the tree. The naive in-place run on the environment's interpreter
    loads the conftest and is fooled; the package drops all three and scores 0."""
    task = _editable_task(editable_image)
    with Sandbox.create(task, backend) as sandbox:
        sandbox.write_file("conftest.py", f"{_HOOK}\n".encode())
        sandbox.write_file("sitecustomize.py", f"{_HOOK}\n".encode())
        sandbox.write_file("calc_fix.pth", f"{_HOOK}\n".encode())
        naive, _ = naive_reward(sandbox, task)
        assert naive == 1  # the attack beats an in-place grade in the same environment
        result = sandbox.submit()
    assert result.reward == 0
    dropped = {entry.split(":", 1)[0] for entry in result.dropped}
    assert {"conftest.py", "sitecustomize.py", "calc_fix.pth"} <= dropped
