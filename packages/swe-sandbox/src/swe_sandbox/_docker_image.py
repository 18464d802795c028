"""Docker images built locally (no registry): the base image from the cached rootfs, per-task
layers holding the prepared repository on the task's environment image, and tree export."""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from swe_sandbox._archive import safe_extract
from swe_sandbox._errors import (
    BackendUnavailableError,
    EnvironmentBuildError,
    ImageBuildError,
    ImageNotFoundError,
    RepoNotFoundError,
)
from swe_sandbox._prepare import AGENT_UID, prepare_repo, task_key
from swe_sandbox._rootfs import BaseImageSpec, build_rootfs

if TYPE_CHECKING:
    import docker

    from swe_sandbox._task import TaskSpec

#: Where a per-task image keeps the prepared repository (copied into the tmpfs workdir).
TASK_REPO_PATH = "/opt/swe-task/repo"
#: The `task_key` of the task a per-task image was built for (`Sandbox.load` checks it).
TASK_KEY_PATH = "/opt/swe-task/key"


def docker_client() -> docker.DockerClient:
    """A client from the environment (``DOCKER_HOST``), or `BackendUnavailableError`."""
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BackendUnavailableError(f"no Docker engine: {exc}") from exc
    return client


def image_exists(client: docker.DockerClient, reference: str) -> bool:
    import docker.errors

    try:
        client.images.get(reference)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_base_image(
    spec: BaseImageSpec | None = None, *, client: docker.DockerClient | None = None
) -> str:
    """Return the base image tag, importing the cached rootfs into Docker if needed."""
    spec = spec or BaseImageSpec()
    client = client or docker_client()
    if image_exists(client, spec.docker_tag):
        return spec.docker_tag
    rootfs = build_rootfs(spec)
    with tempfile.TemporaryDirectory(prefix="swe-base-") as tmp:
        archive = Path(tmp) / "rootfs.tar"
        done = subprocess.run(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise ImageBuildError(f"cannot archive {rootfs}: {done.stderr.strip()}")
        repository, tag = spec.docker_tag.split(":")
        try:
            client.api.import_image_from_file(
                str(archive),
                repository=repository,
                tag=tag,
                changes=["WORKDIR /work", "ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]'],
            )
        except Exception as exc:  # the SDK raises several unrelated types here
            raise ImageBuildError(f"docker import of {rootfs} failed: {exc}") from exc
    if not image_exists(client, spec.docker_tag):
        raise ImageBuildError(f"docker import did not produce {spec.docker_tag}")
    return spec.docker_tag


def task_image_tag(task: TaskSpec, spec: BaseImageSpec | None = None) -> str:
    """``swe-sandbox-task:<id>-<hash>``: the hash covers the base recipe, the environment
    image reference and the task definition (`task_key`)."""
    spec = spec or BaseImageSpec()
    name = re.sub(r"[^a-z0-9._-]", "-", task.instance_id.lower())[:80]
    below = task.environment_image or spec.docker_tag
    digest = hashlib.sha256(f"{below}\0{task_key(task)}".encode()).hexdigest()
    return f"swe-sandbox-task:{name}-{spec.content_hash[:6]}{digest[:10]}"


def build_context(dockerfile: str, files: dict[str, bytes], trees: dict[str, bytes]) -> io.BytesIO:
    """A build context tar: the Dockerfile, loose files and whole trees (tar bytes, re-rooted
    under the given directory name)."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        for name, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
        for prefix, tree in trees.items():
            with tarfile.open(fileobj=io.BytesIO(tree)) as source:
                for member in source.getmembers():
                    stream = source.extractfile(member) if member.isfile() else None
                    member.name = f"{prefix}/{member.name}"
                    archive.addfile(member, stream)
    context.seek(0)
    return context


def docker_build(
    client: docker.DockerClient, context: io.BytesIO, tag: str, step: str, labels: dict[str, str]
) -> str:
    """``docker build`` without network (the engine has no registry either); a failure is an
    `EnvironmentBuildError` naming `step` and the last lines of the build log."""
    import docker.errors

    try:
        client.images.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode="none",
            labels=labels,
        )
    except docker.errors.BuildError as exc:
        lines = [str(c.get("stream", c.get("error", ""))).strip() for c in exc.build_log]
        tail = " | ".join(line for line in lines if line)[-1500:]
        raise EnvironmentBuildError(step, f"building {tag} failed: {exc.msg}: {tail}") from exc
    except docker.errors.APIError as exc:
        raise EnvironmentBuildError(step, f"building {tag} failed: {exc}") from exc
    return tag


def build_task_image(
    task: TaskSpec, spec: BaseImageSpec | None = None, *, client: docker.DockerClient | None = None
) -> str:
    """Build (or reuse) the per-task layer on the task's environment image (or the base): the
    prepared repository at `TASK_REPO_PATH` and the task key at `TASK_KEY_PATH`.

    The SWE-bench harness's base → env → instance layering: `build_env_image` makes the env
    image, this the instance. Only the agent-visible tree goes in; graded tests, runner files
    and the gold patch never do. Failures: `ImageNotFoundError` (no such environment image),
    `EnvironmentBuildError` (step ``base`` or ``instance-image``).
    """
    from swe_sandbox._environment import inspect_image

    client = client or docker_client()
    tag = task_image_tag(task, spec)
    if image_exists(client, tag):
        return tag
    if task.environment_image is not None:
        below = inspect_image(client, task.environment_image).image_id
    else:
        try:
            below = ensure_base_image(spec, client=client)
        except ImageBuildError as exc:
            raise EnvironmentBuildError("base", str(exc)) from exc
    prepared = prepare_repo(task)
    dockerfile = (
        f"FROM {below}\n"
        f"COPY --chown={AGENT_UID}:{AGENT_UID} repo/ {TASK_REPO_PATH}/\n"
        f"COPY task-key {TASK_KEY_PATH}\n"
    )
    context = build_context(
        dockerfile, {"task-key": task_key(task).encode()}, {"repo": prepared.tar_bytes}
    )
    labels = {"swe-sandbox.task": task.instance_id}
    return docker_build(client, context, tag, "instance-image", labels)


def export_tree_from_image(
    reference: str, path_in_image: str, dest: Path, *, client: docker.DockerClient | None = None
) -> None:
    """Copy the tree at `path_in_image` of `reference` into `dest` (for IMAGE repo sources).

    Asks for the directory itself (members ``testbed/...``) and removes exactly that top
    directory, so nested paths and ``.git`` keep their place; in-tree symlinks are kept,
    escaping ones refused (`swe_sandbox._archive.safe_extract`).
    """
    import docker.errors

    client = client or docker_client()
    if not image_exists(client, reference):
        raise ImageNotFoundError(f"image {reference} is not present locally (nothing is pulled)")
    source = PurePosixPath(path_in_image)
    if not source.is_absolute() or ".." in source.parts or source == PurePosixPath("/"):
        raise RepoNotFoundError(f"{path_in_image!r} is not an absolute directory in the image")
    container = client.containers.create(reference, command=["true"], network_disabled=True)
    try:
        stream, stat = container.get_archive(str(source))
        if not stat.get("mode", 0) & (1 << 31):  # os.ModeDir in the engine's Go file mode
            raise RepoNotFoundError(f"{reference}:{path_in_image} is not a directory")
        with tempfile.TemporaryFile() as buffer:
            for chunk in stream:
                buffer.write(chunk)
            buffer.seek(0)
            with tarfile.open(fileobj=buffer) as archive:
                safe_extract(archive, dest, under=source.name)
    except docker.errors.NotFound as exc:
        raise RepoNotFoundError(f"{reference} has no {path_in_image}") from exc
    finally:
        container.remove(force=True)
