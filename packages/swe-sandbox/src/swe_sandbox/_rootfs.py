"""The base root filesystem: a debootstrapped Debian with python3, git and pytest.

Built once per machine and cached by the content hash of its recipe (Docker backend:
"a base image from a Debian root filesystem (debootstrap, mirror taken from the machine's apt
configuration or a flag), cached by content hash"). The namespace backend uses the directory
itself as its read-only root; the Docker backend imports it as ``swe-sandbox-base:<hash>``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs

from swe_sandbox._errors import ImageBuildError

RECIPE_VERSION = 1
DEFAULT_PACKAGES = (
    "python3",
    "python3-pytest",
    "python3-pip",
    "git",
    "curl",
    "ca-certificates",
    "procps",
)
_AGENT_PASSWD = "agent:x:1000:1000:sandbox agent:/work:/bin/bash\n"
_AGENT_GROUP = "agent:x:1000:\n"
#: Puts the grader's plugin directory on every python3's sys.path (it is empty, in fact absent,
#: until grading writes it; the agent can never write under /grader).
_GRADER_PTH = ("usr/lib/python3/dist-packages/swe_sandbox_grader.pth", "/grader/plugin\n")


def cache_root() -> Path:
    """``$SWE_SANDBOX_CACHE`` or ``~/.cache/swe-sandbox``."""
    configured = os.environ.get("SWE_SANDBOX_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "swe-sandbox"


@attrs.frozen(kw_only=True)
class BaseImageSpec:
    """The recipe of the base root filesystem; its `content_hash` names every cached artifact.

    Attributes:
        suite: Debian suite passed to debootstrap.
        packages: packages installed on top of ``minbase``.
        mirror: Debian mirror URL; ``None`` = read from this machine's apt configuration
            (or ``$SWE_SANDBOX_MIRROR``). Not part of the hash: every mirror serves the suite.
    """

    suite: str = "bookworm"
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    mirror: str | None = None

    @property
    def content_hash(self) -> str:
        recipe = {
            "v": RECIPE_VERSION,
            "suite": self.suite,
            "packages": sorted(self.packages),
            "passwd": _AGENT_PASSWD,
            "group": _AGENT_GROUP,
            "pth": _GRADER_PTH,
        }
        return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def docker_tag(self) -> str:
        return f"swe-sandbox-base:{self.content_hash}"


def _apt_sources(root: Path = Path("/etc/apt")) -> Iterator[tuple[str, str]]:
    """Yield (uri, suite) pairs from one-line ``.list`` and deb822 ``.sources`` files."""
    files = [root / "sources.list", *sorted((root / "sources.list.d").glob("*"))]
    for file in files:
        if not file.is_file():
            continue
        text = file.read_text(errors="replace")
        if file.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    key, _, value = line.partition(":")
                    if not line.startswith("#") and value.strip():
                        fields[key.strip().lower()] = value.strip()
                if "deb" not in fields.get("types", "").split():
                    continue
                for uri in fields.get("uris", "").split():
                    for suite in fields.get("suites", "").split():
                        yield uri, suite
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^\]]*\]", "", line).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    yield parts[1], parts[2]


def mirror_from_apt(suite: str, apt_root: Path = Path("/etc/apt")) -> str:
    """The first apt source serving `suite` itself (not -updates/-security)."""
    env = os.environ.get("SWE_SANDBOX_MIRROR")
    if env:
        return env
    for uri, found_suite in _apt_sources(apt_root):
        if found_suite == suite and uri.startswith(("http://", "https://", "file:")):
            return uri
    raise ImageBuildError(
        f"no apt source for suite {suite!r} in {apt_root}; pass --mirror or set SWE_SANDBOX_MIRROR"
    )


def _ensure_debootstrap() -> str:
    found = shutil.which("debootstrap")
    if found:
        return found
    # As root on Debian we obtain it ourselves from the machine's own apt sources.
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"],
        ):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ImageBuildError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
        found = shutil.which("debootstrap")
    if not found:
        raise ImageBuildError("debootstrap is not installed (apt-get install debootstrap)")
    return found


def _finish_rootfs(rootfs: Path) -> None:
    """Add the agent user and the mount points both backends expect."""
    with open(rootfs / "etc/passwd", "a") as passwd:
        passwd.write(_AGENT_PASSWD)
    with open(rootfs / "etc/group", "a") as group:
        group.write(_AGENT_GROUP)
    for mount_point in ("work", "grader", "proc", "dev", "tmp", "sys"):
        (rootfs / mount_point).mkdir(exist_ok=True)
    os.chmod(rootfs / "work", 0o755)
    os.chmod(rootfs / "tmp", 0o1777)
    (rootfs / _GRADER_PTH[0]).write_text(_GRADER_PTH[1])
    (rootfs / "etc/gitconfig").write_text("[safe]\n\tdirectory = *\n")
    (rootfs / "etc/resolv.conf").unlink(missing_ok=True)
    (rootfs / "etc/resolv.conf").write_text("# no network in the sandbox\n")
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)


def build_rootfs(spec: BaseImageSpec | None = None, *, force: bool = False) -> Path:
    """Return the cached root filesystem of `spec`, building it first if needed.

    A file lock serialises concurrent builders; the tree appears under its final name only when
    complete (atomic rename), so a killed build never leaves a half rootfs in use.
    """
    spec = spec or BaseImageSpec()
    root = cache_root() / "rootfs"
    root.mkdir(parents=True, exist_ok=True)
    final = root / spec.content_hash
    with open(root / f"{spec.content_hash}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.is_dir() and not force:
            return final
        partial = root / f"{spec.content_hash}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        mirror = spec.mirror or mirror_from_apt(spec.suite)
        argv = [
            _ensure_debootstrap(),
            "--variant=minbase",
            f"--include={','.join(spec.packages)}",
            spec.suite,
            str(partial),
            mirror,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise ImageBuildError(
                f"debootstrap failed ({done.returncode}): {done.stdout[-3000:]}"
                f"{done.stderr[-2000:]}"
            )
        _finish_rootfs(partial)
        if final.exists():
            shutil.rmtree(final)
        partial.rename(final)
    return final
