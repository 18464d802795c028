"""A task's own environment: the Docker image whose filesystem every sandbox of the task runs on.

Both backends run rollout *and* grade in it (Arctic-SWE §5: "Docker images per task"): the
Docker backend starts the container from the image, the namespace backend chroots into a root
filesystem exported from it (``docker export``, cached under ``$SWE_SANDBOX_CACHE/rootfs`` by
image id). Commands get the image's ``PATH`` (so ``python3`` / ``pytest`` are the image's venv
or conda interpreter), minus any entry the agent could write to. The image's own copy of the
repository (``/testbed`` in SWE-bench images, with the full history and the base versions of
the graded tests) is masked by an empty read-only tmpfs: the agent's tree is always ``/work``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from swe_sandbox._backend import BASE_ENV, GRADER_DIR, WORKDIR
from swe_sandbox._errors import ImageBuildError, ImageNotFoundError

if TYPE_CHECKING:
    import docker

#: Label an environment image carries: where its repository copy lives (masked in sandboxes).
REPO_PATH_LABEL = "swe-sandbox.repo-path"
#: Variables of the image that are never passed on (they steer the interpreter or the loader).
_DROPPED_PREFIXES = ("PYTHON", "LD_", "PYTEST_")
_WRITABLE = (WORKDIR, "/tmp", "/dev/shm", GRADER_DIR, "/proc")
#: Where the namespace init's command server looks for an interpreter in an exported rootfs
#: first; then ``python3`` in each directory of the image's ``PATH`` (a conda base, say).
NS_PYTHON = "/usr/bin/python3"
_METADATA = ".swe-sandbox-image.json"


@attrs.frozen(kw_only=True)
class ImageInfo:
    """What a sandbox needs to know about an environment image.

    Attributes:
        reference: the reference the task names (tag or id).
        image_id: the engine's content id (``sha256:...``), the rootfs cache key.
        env: the image's ``Config.Env``.
        labels: the image's labels.
    """

    reference: str
    image_id: str
    env: Mapping[str, str]
    labels: Mapping[str, str]

    @property
    def repo_path(self) -> str | None:
        return self.labels.get(REPO_PATH_LABEL)


def inspect_image(client: docker.DockerClient, reference: str) -> ImageInfo:
    """`ImageInfo` of a local image; `ImageNotFoundError` if it is not there (nothing is pulled)."""
    import docker.errors

    try:
        image = client.images.get(reference)
    except docker.errors.ImageNotFound as exc:
        raise ImageNotFoundError(
            f"image {reference} is not present locally (nothing is pulled; build it with "
            "`swe-sandbox image build-env` / `image build`)"
        ) from exc
    except docker.errors.APIError as exc:
        raise ImageNotFoundError(f"image {reference}: {exc}") from exc
    config = image.attrs.get("Config") or {}
    env = dict(item.split("=", 1) for item in (config.get("Env") or []) if "=" in item)
    return ImageInfo(
        reference=reference,
        image_id=str(image.id),
        env=env,
        labels=dict(config.get("Labels") or {}),
    )


def safe_path(value: str) -> str:
    """`value` (a ``PATH``) without empty, relative or agent-writable entries."""
    kept = []
    for entry in value.split(":"):
        entry = os.path.normpath(entry) if entry else ""
        if not entry.startswith("/") or any(
            entry == w or entry.startswith(w + "/") for w in _WRITABLE
        ):
            continue
        if entry not in kept:
            kept.append(entry)
    return ":".join(kept) or BASE_ENV["PATH"]


def sandbox_env(info: ImageInfo | None) -> dict[str, str]:
    """The environment every command of a sandbox on `info` starts from."""
    if info is None:
        return dict(BASE_ENV)
    inherited = {
        k: v
        for k, v in info.env.items()
        if not k.startswith(_DROPPED_PREFIXES) and k not in BASE_ENV
    }
    return {**inherited, **BASE_ENV, "PATH": safe_path(info.env.get("PATH", BASE_ENV["PATH"]))}


def masked_paths(info: ImageInfo | None, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Absolute directories to hide under an empty tmpfs (the image's repository copies)."""
    found = [*extra, *([info.repo_path] if info is not None and info.repo_path else [])]
    kept: list[str] = []
    for path in found:
        norm = os.path.normpath(path)
        if norm.startswith("/") and norm != "/" and norm not in _WRITABLE and norm not in kept:
            kept.append(norm)
    return tuple(kept)


def _init_python(root: Path, info: ImageInfo) -> str:
    """The interpreter the namespace init runs in an image: `NS_PYTHON`, else the first
    ``python3`` on the image's ``PATH``."""
    dirs = [d for d in safe_path(info.env.get("PATH", "")).split(":") if d]
    for candidate in (NS_PYTHON, "/usr/local/bin/python3", *(f"{d}/python3" for d in dirs)):
        if os.path.lexists(root / candidate.lstrip("/")):
            return candidate
    raise ImageBuildError(
        f"image {info.reference} has no python3 in /usr/bin or on its PATH: the namespace "
        "backend's init needs one (use the Docker backend)"
    )


def init_python(rootfs: Path) -> str:
    """The init interpreter recorded for an exported rootfs (`NS_PYTHON` for the base)."""
    try:
        recorded = json.loads((rootfs / _METADATA).read_text()).get("init_python")
    except (OSError, ValueError):
        return NS_PYTHON
    return str(recorded) if recorded else NS_PYTHON


def _finish_exported(root: Path, info: ImageInfo) -> None:
    """Mount points, the agent user and git's safe-directory rule, as the base rootfs has."""
    python = _init_python(root, info)
    for mount_point in ("work", "grader", "proc", "dev", "tmp", "sys"):
        target = root / mount_point
        if target.is_symlink() or target.is_file():
            target.unlink()
        target.mkdir(exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    passwd = root / "etc" / "passwd"
    if passwd.is_file() and not re.search(r"^[^:]*:[^:]*:1000:", passwd.read_text(), re.M):
        with open(passwd, "a") as out:
            out.write("agent:x:1000:1000:sandbox agent:/work:/bin/bash\n")
    gitconfig = root / "etc" / "gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text("[safe]\n\tdirectory = *\n")
    (root / _METADATA).write_text(
        json.dumps(
            {
                "reference": info.reference,
                "id": info.image_id,
                "env": dict(info.env),
                "init_python": python,
            }
        )
    )


def exported_rootfs(client: docker.DockerClient, info: ImageInfo, cache: Path) -> Path:
    """The root filesystem of image `info` (``docker export`` of a created container), cached
    under `cache` by image id; built atomically under a file lock, like the base rootfs."""
    key = "image-" + info.image_id.split(":")[-1][:24]
    cache.mkdir(parents=True, exist_ok=True)
    final = cache / key
    with open(cache / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.is_dir():
            return final
        partial = cache / f"{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        container = client.containers.create(info.image_id, command=["true"])
        try:
            # GNU tar as root keeps owners, modes, links and devices of the image exactly.
            untar = subprocess.Popen(
                ["tar", "-x", "--numeric-owner", "-p", "-C", str(partial), "-f", "-"],
                stdin=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert untar.stdin is not None
            try:
                for chunk in container.export():
                    untar.stdin.write(chunk)
            finally:
                untar.stdin.close()
                error = untar.stderr.read().decode(errors="replace") if untar.stderr else ""
                code = untar.wait()
            if code != 0:
                raise ImageBuildError(f"exporting {info.reference} failed: {error[-1000:]}")
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        finally:
            container.remove(force=True)
        try:
            _finish_exported(partial, info)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        partial.rename(final)
    return final
