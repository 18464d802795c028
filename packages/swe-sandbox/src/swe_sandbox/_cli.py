"""``swe-sandbox`` command line: build images, reap orphans, grade a task file.

swe-sandbox image build-base [--mirror URL] [--suite bookworm]
swe-sandbox image build TASK.json [--format spec|swebench|swerebench|r2egym]
swe-sandbox janitor [--backend docker|namespace]
swe-sandbox grade TASK.json [--backend ...] [--patch gold|none|FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from swe_sandbox._backend import Backend
from swe_sandbox._errors import SandboxError
from swe_sandbox._rootfs import DEFAULT_PACKAGES, BaseImageSpec
from swe_sandbox._task import (
    RepoKind,
    RepoSource,
    TaskSpec,
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)


def task_to_json(task: TaskSpec) -> dict[str, Any]:
    """The ``spec`` JSON form of `task` (inverse of `task_from_json`)."""
    data = attrs.asdict(task, recurse=False)
    data["repo"] = {
        "kind": task.repo.kind.value,
        "location": task.repo.location,
        "path_in_image": task.repo.path_in_image,
        "strip_components": task.repo.strip_components,
    }
    for key, value in data.items():
        if isinstance(value, tuple):
            data[key] = list(value)
    data["runner_files"] = dict(task.runner_files)
    return data


def task_from_json(data: dict[str, Any], fmt: str = "spec") -> TaskSpec:
    """A task from a JSON object: our own field names (``spec``) or a dataset row."""
    if fmt == "swebench":
        return task_from_swebench_row(data)
    if fmt == "swerebench":
        return task_from_swerebench_row(data)
    if fmt == "r2egym":
        return task_from_r2egym_row(data)
    fields = dict(data)
    repo = fields.pop("repo")
    fields["repo"] = RepoSource(
        kind=RepoKind(repo["kind"]),
        location=repo["location"],
        path_in_image=repo.get("path_in_image", "/testbed"),
        strip_components=repo.get("strip_components", 0),
    )
    for key in ("fail_to_pass", "pass_to_pass", "graded_files", "setup_commands"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return TaskSpec(**fields)


def _base_spec(args: argparse.Namespace) -> BaseImageSpec:
    return BaseImageSpec(suite=args.suite, mirror=args.mirror, packages=DEFAULT_PACKAGES)


def _backend(name: str, spec: BaseImageSpec) -> Backend:
    if name == "docker":
        from swe_sandbox._docker_backend import DockerBackend

        return DockerBackend(spec)
    from swe_sandbox._namespace import NamespaceBackend

    return NamespaceBackend(spec)


def _load_task(args: argparse.Namespace) -> TaskSpec:
    return task_from_json(json.loads(Path(args.task).read_text()), args.format)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    spec = _base_spec(args)
    if args.command == "image" and args.image_command == "build-base":
        from swe_sandbox._docker_image import ensure_base_image
        from swe_sandbox._rootfs import build_rootfs

        rootfs = build_rootfs(spec)
        tag = None if args.no_docker else ensure_base_image(spec)
        return {"rootfs": str(rootfs), "image": tag, "content_hash": spec.content_hash}
    if args.command == "image" and args.image_command == "build":
        from swe_sandbox._docker_image import build_task_image

        return {"image": build_task_image(_load_task(args), spec)}
    if args.command == "janitor":
        return {"reaped": _backend(args.backend, spec).reap_orphans()}
    if args.command == "grade":
        from swe_sandbox._sandbox import Sandbox

        task = _load_task(args)
        with Sandbox.create(task, _backend(args.backend, spec)) as sandbox:
            if args.patch == "gold":
                sandbox.apply_patch(task.gold_patch)
            elif args.patch != "none":
                sandbox.apply_patch(Path(args.patch).read_text())
            result = sandbox.grade()
        return {
            "reward": result.reward,
            "reasons": list(result.reasons),
            "tests": {k: v.value for k, v in result.tests.items()},
        }
    raise SandboxError(f"unknown command {args.command}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swe-sandbox",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--suite", default="bookworm", help="Debian suite of the base rootfs")
    parser.add_argument(
        "--mirror", default=None, help="Debian mirror URL (default: this machine's apt sources)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    image = commands.add_parser("image", help="build images locally")
    image_commands = image.add_subparsers(dest="image_command", required=True)
    base = image_commands.add_parser("build-base", help="debootstrap + docker import")
    base.add_argument("--no-docker", action="store_true", help="only build the rootfs")
    for name, help_text in (("build", "build the per-task image"), ("grade", "grade a task")):
        target = image_commands if name == "build" else commands
        sub = target.add_parser(name, help=help_text)
        sub.add_argument("task", help="JSON file: a TaskSpec object or a dataset row")
        sub.add_argument(
            "--format", default="spec", choices=["spec", "swebench", "swerebench", "r2egym"]
        )
        if name == "grade":
            sub.add_argument("--backend", default="namespace", choices=["namespace", "docker"])
            sub.add_argument("--patch", default="none", help="gold | none | PATCH_FILE")
    janitor = commands.add_parser("janitor", help="reap sandboxes whose owner died")
    janitor.add_argument("--backend", default="namespace", choices=["namespace", "docker"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON object, exit 1 with the typed error on failure."""
    args = build_parser().parse_args(argv)
    try:
        print(json.dumps(_run(args)))
    except SandboxError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
