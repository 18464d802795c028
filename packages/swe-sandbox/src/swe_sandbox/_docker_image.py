"""Docker images built locally (no registry): the base image from the cached rootfs, and
per-task layers holding the prepared repository (images are built locally: there may be no registry)."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from swe_sandbox._errors import BackendUnavailableError, ImageBuildError, RepoNotFoundError
from swe_sandbox._prepare import AGENT_UID, prepare_repo, safe_extract, task_key
from swe_sandbox._rootfs import BaseImageSpec, build_rootfs

if TYPE_CHECKING:
    import docker

    from swe_sandbox._task import TaskSpec

#: Where a per-task image keeps the prepared repository (copied into the tmpfs workdir).
TASK_REPO_PATH = "/opt/swe-task/repo"


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
    spec = spec or BaseImageSpec()
    name = re.sub(r"[^a-z0-9._-]", "-", task.instance_id.lower())[:80]
    return f"swe-sandbox-task:{name}-{spec.content_hash[:6]}{task_key(task)[:10]}"


def build_task_image(
    task: TaskSpec, spec: BaseImageSpec | None = None, *, client: docker.DockerClient | None = None
) -> str:
    """Build (or reuse) the per-task layer: the base image plus the prepared repository.

    Only the agent-visible tree goes in; graded tests, runner files and the gold patch never do.
    """
    import docker.errors

    client = client or docker_client()
    tag = task_image_tag(task, spec)
    if image_exists(client, tag):
        return tag
    base = ensure_base_image(spec, client=client)
    prepared = prepare_repo(task)
    dockerfile = (
        f"FROM {base}\n"
        f"COPY --chown={AGENT_UID}:{AGENT_UID} repo/ {TASK_REPO_PATH}/\n"
        f'LABEL swe-sandbox.task="{task.instance_id}"\n'
    ).encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
        with tarfile.open(fileobj=io.BytesIO(prepared.tar_bytes)) as repo:
            for member in repo.getmembers():
                data = repo.extractfile(member) if member.isfile() else None
                member.name = f"repo/{member.name}"
                archive.addfile(member, data)
    context.seek(0)
    try:
        client.images.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode="none",
        )
    except (docker.errors.BuildError, docker.errors.APIError) as exc:
        raise ImageBuildError(f"building {tag} failed: {exc}") from exc
    return tag


def export_tree_from_image(reference: str, path_in_image: str, dest: Path) -> None:
    """Copy the tree at `path_in_image` of `reference` into `dest` (for IMAGE repo sources)."""
    import docker.errors

    client = docker_client()
    if not image_exists(client, reference):
        raise RepoNotFoundError(f"image {reference} is not present locally (nothing is pulled)")
    container = client.containers.create(reference, command=["true"], network_disabled=True)
    try:
        stream, _ = container.get_archive(path_in_image.rstrip("/") + "/.")
        buffer = io.BytesIO(b"".join(stream))
        with tarfile.open(fileobj=buffer) as archive:
            safe_extract(archive, dest, strip_components=1)
    except docker.errors.NotFound as exc:
        raise RepoNotFoundError(f"{reference} has no {path_in_image}") from exc
    finally:
        container.remove(force=True)
