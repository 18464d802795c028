"""Per-repository environment images, built locally: base → env (→ instance, `build_task_image`).

The SWE-bench harness's layering without a registry (Arctic-SWE §5, "Docker images per task"):

1. **base** — the swe-sandbox base image (debootstrapped Debian, its Python).
2. **wheelhouse** — on the *host* (which reaches the package index; build containers have no
   network): ``pip download`` of the pinned requirements as wheels for the base's Python and
   platform, cached under ``$SWE_SANDBOX_CACHE/wheelhouse/<hash>``; a requirement that only
   ships an sdist is built into a wheel with ``pip wheel`` when the host Python matches.
3. **repo** — the repository at its base commit with only the base's history (a fresh
   ``git init`` that fetched the base commit, as `prepare_repo` does), or an sdist's tree.
4. **env-image** — ``FROM`` the base: a venv at ``/opt/swe-env`` (``--system-site-packages``,
   so the base's pytest is there unless pinned), ``pip install --no-index`` from the
   wheelhouse, the repo at ``/testbed``, ``PATH`` starting with the venv. The project itself
   is *not* installed: the agent's tree at ``/work`` is what the tests import.

The tag ``swe-sandbox-env:<name>-<hash>`` hashes everything above, so an unchanged spec is a
cache hit that touches neither the index nor the engine's builder. A failing step raises
`EnvironmentBuildError` whose ``step`` names it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from swe_sandbox._archive import safe_extract
from swe_sandbox._docker_image import (
    build_context,
    docker_build,
    docker_client,
    ensure_base_image,
    image_exists,
)
from swe_sandbox._environment import REPO_PATH_LABEL
from swe_sandbox._errors import EnvironmentBuildError, SandboxError
from swe_sandbox._prepare import _fetch_base_only as fetch_base_only
from swe_sandbox._prepare import _git as git
from swe_sandbox._prepare import _prune_history as prune_history
from swe_sandbox._rootfs import BaseImageSpec, cache_root

if TYPE_CHECKING:
    import docker

RECIPE_VERSION = 1
ENV_PREFIX = "/opt/swe-env"
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*==\s*[A-Za-z0-9.!+_-]+"
)
_PATH = f"{ENV_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@attrs.frozen(kw_only=True)
class EnvSpec:
    """The recipe of one environment image.

    Attributes:
        name: short name used in the tag (``[a-z0-9._-]``).
        requirements: pinned requirements (``name==version``), installed from the wheelhouse.
        repo: the repository on the host: a git checkout, a plain directory or a tarball
            (an sdist); ``None`` for an environment without a repository copy.
        base_commit: commit of a git `repo` to check out (``None``: its ``HEAD``).
        strip_components: leading path parts dropped from a tarball `repo` (1 for an sdist).
        repo_path: where the repository goes in the image (masked in every sandbox).
        python: expected ``major.minor`` of the base's Python (``None``: whatever it has).
    """

    name: str
    requirements: tuple[str, ...] = ()
    repo: str | None = None
    base_commit: str | None = None
    strip_components: int = 0
    repo_path: str = "/testbed"
    python: str | None = None

    def __attrs_post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", self.name):
            raise EnvironmentBuildError("spec", f"name {self.name!r}: use [a-z0-9._-], 1-64 chars")
        for requirement in self.requirements:
            if not _REQUIREMENT.fullmatch(requirement.strip()):
                raise EnvironmentBuildError(
                    "spec", f"requirement {requirement!r} is not pinned as name==version"
                )
        if not self.repo_path.startswith("/") or ".." in self.repo_path.split("/"):
            raise EnvironmentBuildError("spec", f"repo_path {self.repo_path!r} is not absolute")


def env_spec_from_json(data: object) -> EnvSpec:
    """An `EnvSpec` from its JSON object (``requirements`` a list); `EnvironmentBuildError`
    (step ``spec``) for an unknown, missing or mistyped field."""
    if not isinstance(data, dict):
        raise EnvironmentBuildError("spec", "expected a JSON object")
    known = {f.name: f for f in attrs.fields(EnvSpec)}
    if unknown := sorted(set(data) - set(known)):
        raise EnvironmentBuildError("spec", f"unknown fields {unknown}")
    if "name" not in data:
        raise EnvironmentBuildError("spec", "missing field 'name'")
    fields = dict(data)
    requirements = fields.get("requirements", [])
    if not isinstance(requirements, list) or not all(isinstance(r, str) for r in requirements):
        raise EnvironmentBuildError("spec", "requirements: expected a list of strings")
    fields["requirements"] = tuple(requirements)
    for key in ("name", "repo", "base_commit", "repo_path", "python"):
        if key in fields and not isinstance(fields[key], str | None):
            raise EnvironmentBuildError("spec", f"{key}: expected a string")
    if type(fields.get("strip_components", 0)) is not int:
        raise EnvironmentBuildError("spec", "strip_components: expected an integer")
    return EnvSpec(**fields)


def _base_python(client: docker.DockerClient, base: str) -> str:
    """``major.minor`` of the base image's python3 (asked once per base image, then cached)."""
    cached = cache_root() / "base-python" / base.replace(":", "-")
    if cached.is_file():
        return cached.read_text().strip()
    out = client.containers.run(
        base,
        ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        network_mode="none",
        remove=True,
    )
    version = str(out.decode()).strip()
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(version)
    return version


def host_pip() -> list[str]:
    """The host's pip: ``$SWE_SANDBOX_PIP`` (a command line), else this interpreter's pip,
    else ``python3 -m pip`` from ``PATH``, else a ``pip3``/``pip`` executable on ``PATH``.

    The last one matters under ``uv run``: uv's environments carry no pip, and ``PATH`` then
    starts with the environment's own ``python3``, while the machine's pip is still on ``PATH``.
    """
    configured = os.environ.get("SWE_SANDBOX_PIP")
    if configured:
        return configured.split()
    candidates = [[python, "-m", "pip"] for python in (sys.executable, shutil.which("python3"))]
    candidates += [[pip] for pip in (shutil.which("pip3"), shutil.which("pip"))]
    for command in candidates:
        if all(command) and _answers(command):
            return [str(part) for part in command]
    raise EnvironmentBuildError("wheelhouse", "no pip on the host (set SWE_SANDBOX_PIP)")


def _answers(pip: list[str | None]) -> bool:
    done = subprocess.run([*map(str, pip), "--version"], capture_output=True, check=False)
    return done.returncode == 0


def _host_python(pip: list[str]) -> str:
    """The ``X.Y`` of the Python the host's pip runs on, from ``pip --version``'s closing
    ``(python X.Y)`` (works for ``python -m pip`` and for a bare ``pip3`` alike)."""
    done = subprocess.run([*pip, "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"\(python (\d+\.\d+)\)", done.stdout)
    return found.group(1) if found else ""


def build_wheelhouse(requirements: tuple[str, ...], python: str) -> Path:
    """Wheels for `requirements` (and their dependencies) for CPython `python` on x86-64
    Linux, downloaded on the host; cached by content hash."""
    key = hashlib.sha256(json.dumps([sorted(requirements), python]).encode()).hexdigest()[:16]
    root = cache_root() / "wheelhouse"
    final = root / key
    if final.is_dir():
        return final
    partial = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=_mkdir(root)))
    pip = host_pip()
    nodot = python.replace(".", "")
    platforms = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"]
    argv = [
        *pip, "download", "--disable-pip-version-check", "--only-binary=:all:",
        *(f"--platform={p}" for p in platforms),
        f"--python-version={python}", "--implementation=cp",
        f"--abi=cp{nodot}", "--abi=abi3", "--abi=none", "-d", str(partial), *requirements,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0 and _host_python(pip) == python:
        # Some requirement ships only an sdist: let the host (same Python) build its wheel.
        wheel = [*pip, "wheel", "--disable-pip-version-check", "-w", str(partial), *requirements]
        done = subprocess.run(wheel, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        why = " ".join(done.stderr.split())[-800:]
        raise EnvironmentBuildError(
            "wheelhouse", f"pip could not fetch {list(requirements)}: {why}"
        )
    if final.exists():  # a concurrent builder finished first: keep its copy
        shutil.rmtree(partial)
    else:
        partial.rename(final)
    return final


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _tree_tar(tree: Path) -> bytes:
    """`tree` as a tar (root-owned: the image's copy is not the agent's)."""

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in sorted(tree.iterdir()):
            archive.add(entry, arcname=entry.name, filter=owned_by_root)
    return buffer.getvalue()


def _repo_tree(spec: EnvSpec, scratch: Path) -> tuple[bytes, str]:
    """The repository copy for the image and its content id (commit or sha256)."""
    assert spec.repo is not None
    source = Path(spec.repo)
    tree = scratch / "repo"
    if source.is_file():
        tree.mkdir()
        try:
            with tarfile.open(source) as archive:
                safe_extract(archive, tree, strip_components=spec.strip_components)
        except tarfile.TarError as exc:
            raise EnvironmentBuildError("repo", f"{source} is not a tarball: {exc}") from exc
        return _tree_tar(tree), hashlib.sha256(source.read_bytes()).hexdigest()
    if not source.is_dir():
        raise EnvironmentBuildError("repo", f"repository {source} not found")
    if not (source / ".git").exists():
        if spec.base_commit:
            raise EnvironmentBuildError("repo", f"base commit given but {source} is no git repo")
        shutil.copytree(source, tree, symlinks=True)
        data = _tree_tar(tree)
        return data, hashlib.sha256(data).hexdigest()
    wanted = f"{spec.base_commit or 'HEAD'}^{{commit}}"
    found = git(source, "rev-parse", "--verify", "--quiet", wanted, check=False)
    if found.returncode != 0:
        raise EnvironmentBuildError(
            "repo", f"base commit {spec.base_commit or 'HEAD'} is not in {source}"
        )
    commit = found.stdout.strip()
    fetch_base_only(source, commit, tree)
    prune_history(tree)
    return _tree_tar(tree), commit


def env_image_tag(spec: EnvSpec, base: str, python: str, repo_id: str) -> str:
    recipe = {
        "v": RECIPE_VERSION,
        "base": base,
        "python": python,
        "requirements": sorted(spec.requirements),
        "repo": repo_id,
        "repo_path": spec.repo_path,
    }
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return f"swe-sandbox-env:{spec.name}-{digest[:16]}"


def _dockerfile(base: str, spec: EnvSpec, has_repo: bool) -> str:
    lines = [f"FROM {base}"]
    if spec.requirements:
        lines += [
            "COPY wheelhouse/ /opt/swe-wheelhouse/",
            "COPY requirements.txt /opt/swe-env-requirements.txt",
            f"RUN python3 -m venv --without-pip --system-site-packages {ENV_PREFIX}"
            f" && {ENV_PREFIX}/bin/python -m pip install --disable-pip-version-check --no-index"
            " --no-cache-dir --find-links /opt/swe-wheelhouse -r /opt/swe-env-requirements.txt"
            " && rm -rf /opt/swe-wheelhouse",
        ]
    else:
        lines.append(f"RUN python3 -m venv --without-pip --system-site-packages {ENV_PREFIX}")
    if has_repo:
        lines.append(f"COPY repo/ {spec.repo_path}/")
    lines += [f"ENV PATH={_PATH} VIRTUAL_ENV={ENV_PREFIX}", "WORKDIR /work"]
    return "\n".join(lines) + "\n"


def build_env_image(
    spec: EnvSpec,
    base_spec: BaseImageSpec | None = None,
    *,
    client: docker.DockerClient | None = None,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Build (or reuse) the environment image of `spec`; returns its tag.

    Raises `EnvironmentBuildError` with ``step`` one of ``base``, ``wheelhouse``, ``repo``,
    ``env-image`` (and ``spec`` from `EnvSpec` itself).
    """
    say = progress or (lambda _line: None)
    client = client or docker_client()
    try:
        say("step base: the swe-sandbox base image")
        base = ensure_base_image(base_spec, client=client)
        python = _base_python(client, base)
    except SandboxError as exc:
        raise EnvironmentBuildError("base", str(exc)) from exc
    if spec.python and spec.python != python:
        raise EnvironmentBuildError(
            "base", f"the spec wants Python {spec.python}, the base image has {python}"
        )
    with tempfile.TemporaryDirectory(prefix="swe-env-") as tmp:
        say("step repo: the repository at its base commit")
        try:
            repo_tar, repo_id = _repo_tree(spec, Path(tmp)) if spec.repo else (b"", "")
        except EnvironmentBuildError:
            raise
        except SandboxError as exc:
            raise EnvironmentBuildError("repo", str(exc)) from exc
        tag = env_image_tag(spec, base, python, repo_id)
        if image_exists(client, tag):
            return tag
        files = {"requirements.txt": "".join(f"{r}\n" for r in spec.requirements).encode()}
        trees = {"repo": repo_tar} if spec.repo else {}
        if spec.requirements:
            say(f"step wheelhouse: pip download {len(spec.requirements)} requirement(s)")
            wheelhouse = build_wheelhouse(spec.requirements, python)
            for wheel in sorted(wheelhouse.iterdir()):
                files[f"wheelhouse/{wheel.name}"] = wheel.read_bytes()
        say(f"step env-image: docker build {tag}")
        labels = {
            "swe-sandbox.env": spec.name,
            REPO_PATH_LABEL: spec.repo_path if spec.repo else "",
            "swe-sandbox.python": f"{ENV_PREFIX}/bin/python",
        }
        context = build_context(_dockerfile(base, spec, bool(spec.repo)), files, trees)
        return docker_build(client, context, tag, "env-image", labels)
