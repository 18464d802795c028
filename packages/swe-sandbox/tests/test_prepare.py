"""Host-side preparation and the bad-input errors, both backends where a
sandbox is involved: a typed error saying which, and nothing left behind."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import attrs
import pytest
from sandbox_testkit.leaks import live_sandbox_ids
from sandbox_testkit.toyrepo import GOLD_TOKEN, TEST_TOKEN

from swe_sandbox import (
    Backend,
    BaseCommitNotFoundError,
    BaseImageSpec,
    ImageBuildError,
    PatchApplyError,
    PathEscapeError,
    RepoNotFoundError,
    RepoSource,
    Sandbox,
    TaskSpec,
    TestCommandNotFoundError,
    build_rootfs,
    prepare_repo,
)


def members(prepared_tar: bytes) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(prepared_tar)) as archive:
        for member in archive.getmembers():
            if member.isfile():
                data = archive.extractfile(member)
                assert data is not None
                out[member.name] = data.read()
    return out


def test_prepared_tree_withholds_tests_and_history(toy_task: TaskSpec) -> None:
    prepared = prepare_repo(toy_task, use_cache=False)
    files = members(prepared.tar_bytes)
    assert "tests/test_add.py" not in files
    assert "calc/core.py" in files
    for name, data in files.items():
        assert TEST_TOKEN.encode() not in data, name
        if not name.startswith(".git/objects/"):  # objects are compressed: checked in-sandbox
            assert GOLD_TOKEN.encode() not in data, name
    restored = prepared.restore_files["tests/test_add.py"]
    assert restored is not None
    assert TEST_TOKEN.encode() in restored
    assert prepared.base_commit == toy_task.base_commit
    # the base file list the patch policy derives roles from: no withheld test, no .git
    assert set(prepared.files) == {
        "calc/__init__.py",
        "calc/core.py",
        "conftest.py",
        "tests/test_core.py",
    }


def test_missing_repository(tmp_path: Path) -> None:
    for repo in (RepoSource.directory(tmp_path / "nope"), RepoSource.tarball(tmp_path / "x.tgz")):
        with pytest.raises(RepoNotFoundError, match="not found"):
            prepare_repo(TaskSpec(instance_id="missing", repo=repo))


def test_missing_base_commit(toy_task: TaskSpec) -> None:
    task = attrs.evolve(toy_task, instance_id="nobase", base_commit="0" * 40)
    with pytest.raises(BaseCommitNotFoundError, match="0000000"):
        prepare_repo(task)


def test_tarball_with_escaping_member_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("pkg/../../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(PathEscapeError):
        prepare_repo(TaskSpec(instance_id="evil", repo=RepoSource.tarball(archive)))
    assert not (tmp_path.parent / "escape.txt").exists()


def test_test_patch_that_does_not_apply(toy_task: TaskSpec) -> None:
    bad = toy_task.test_patch.replace("from calc.core import add", "from calc.nothing import x")
    bad = bad.replace("+++ b/tests/test_add.py", "+++ b/tests/test_core.py").replace(
        "--- /dev/null", "--- a/tests/test_core.py"
    )
    task = attrs.evolve(
        toy_task, instance_id="badpatch", test_patch=bad, graded_files=("tests/test_core.py",)
    )
    with pytest.raises(PatchApplyError, match="test patch"):
        prepare_repo(task)


def test_agent_patch_that_does_not_apply(backend: Backend, toy_task: TaskSpec) -> None:
    with Sandbox.create(toy_task, backend) as sandbox:
        with pytest.raises(PatchApplyError, match="does not apply"):
            sandbox.apply_patch(toy_task.gold_patch.replace("return a - b", "return a * b"))
        assert sandbox.execute_bash("git status --porcelain calc").output == ""


def test_missing_test_command_reaps_the_sandbox(backend: Backend, toy_task: TaskSpec) -> None:
    before = live_sandbox_ids(backend)
    task = attrs.evolve(toy_task, instance_id="nocmd", test_command="nosuchrunner -q tests")
    with pytest.raises(TestCommandNotFoundError, match="nosuchrunner"):
        Sandbox.create(task, backend)
    assert live_sandbox_ids(backend) == before


def test_image_that_cannot_be_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWE_SANDBOX_CACHE", str(tmp_path))
    # A loopback mirror with nothing listening: debootstrap fails fast, nothing leaves the host.
    spec = BaseImageSpec(packages=("python3",), mirror="http://127.0.0.1:9/debian")
    with pytest.raises(ImageBuildError, match="debootstrap failed"):
        build_rootfs(spec)
    assert not (tmp_path / "rootfs" / spec.content_hash).exists()


def test_a_plain_trees_ignored_files_are_part_of_the_base(backend: Backend, tmp_path: Path) -> None:
    """An sdist ships its egg-info and a .gitignore that lists it: the base holds both, so an
    untouched sandbox's diff is empty (no pristine file passes for the agent's addition)."""
    tree = tmp_path / "tree"
    (tree / "pkg.egg-info").mkdir(parents=True)
    (tree / "pkg.egg-info" / "PKG-INFO").write_text("Name: pkg\n")
    (tree / ".gitignore").write_text("*.egg-info\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / "__init__.py").write_text("X = 1\n")
    (tree / "test_pkg.py").write_text("from pkg import X\n\n\ndef test_x():\n    assert X == 1\n")
    task = TaskSpec(
        instance_id="ignored-1",
        repo=RepoSource.directory(tree),
        graded_files=("test_pkg.py",),
        fail_to_pass=("test_pkg.py::test_x",),
        test_command="python3 -m pytest test_pkg.py",
    )
    assert "pkg.egg-info/PKG-INFO" in prepare_repo(task).files
    with Sandbox.create(task, backend) as sandbox:
        assert sandbox.diff() == ""
        result = sandbox.grade()
    assert (result.reward, result.dropped) == (1, ())
