"""``swe-sandbox`` command line: build images, reap orphans, grade a task file.

swe-sandbox image build-base [--mirror URL] [--suite bookworm] [--no-docker]
swe-sandbox image build-env SPEC.json
swe-sandbox image build TASK.json [--format spec|swebench|swerebench|r2egym] [--repo-dir DIR]
swe-sandbox janitor [--backend NAME]      (namespace, docker or a registered backend)
swe-sandbox grade TASK.json [--backend NAME] [--patch gold|none|FILE] [--repo-dir DIR]

--suite and --mirror may be given before or after the sub-command. Each command prints one JSON
object on stdout; an error prints {"error": CLASS, "message": ...} there on one line, and
"swe-sandbox: error: ..." on stderr. Exit codes: 0 success; 2 a usage error (bad arguments, a
task, spec or patch file that is missing or invalid, a task whose repository, base commit or
test program does not exist); 1 a runtime failure (an image build, a sandbox or the grader
failed); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from swe_sandbox._backend import Backend
from swe_sandbox._errors import (
    BaseCommitNotFoundError,
    EnvironmentBuildError,
    PatchApplyError,
    RepoNotFoundError,
    SandboxError,
    TaskSpecError,
    TestCommandNotFoundError,
)
from swe_sandbox._registry import DEFAULT_BACKEND, backend_names, create_backend
from swe_sandbox._rootfs import DEFAULT_PACKAGES, BaseImageSpec
from swe_sandbox._task import TaskSpec
from swe_sandbox._taskfile import FORMATS, load_task_file, task_from_json, task_to_json

__all__ = ["build_parser", "main", "task_from_json", "task_to_json"]

PROG = "swe-sandbox"
USAGE_EXIT = 2
FAILURE_EXIT = 1

#: Errors that say the input the user named is unusable (exit 2); any other SandboxError or
#: OSError is a failure of the work itself (exit 1).
USAGE_ERRORS: tuple[type[SandboxError], ...] = (
    TaskSpecError,
    RepoNotFoundError,
    BaseCommitNotFoundError,
    TestCommandNotFoundError,
)


class InputFileError(Exception):
    """A file named on the command line (patch, spec) cannot be used: a usage error reported
    under the class of the typed error it wraps."""

    def __init__(self, error: SandboxError) -> None:
        super().__init__(str(error))
        self.error = error


def _base_spec(args: argparse.Namespace) -> BaseImageSpec:
    return BaseImageSpec(suite=args.suite, mirror=args.mirror, packages=DEFAULT_PACKAGES)


def _backend(name: str, spec: BaseImageSpec) -> Backend:
    return create_backend(name, base=spec)  # every factory takes the base image as ``base``


def _load_task(args: argparse.Namespace) -> TaskSpec:
    return load_task_file(args.task, args.format, repo_dir=args.repo_dir)


def _read_patch(choice: str, task: TaskSpec) -> str | None:
    if choice == "gold":
        return task.gold_patch
    if choice == "none":
        return None
    try:
        return Path(choice).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        error = PatchApplyError(f"--patch {choice}: cannot read the patch file: {why}")
        raise InputFileError(error) from exc


def _run(args: argparse.Namespace) -> dict[str, Any]:
    spec = _base_spec(args)
    if args.command == "image" and args.image_command == "build-base":
        from swe_sandbox._docker_image import ensure_base_image
        from swe_sandbox._rootfs import build_rootfs

        rootfs = build_rootfs(spec)
        tag = None if args.no_docker else ensure_base_image(spec)
        return {"rootfs": str(rootfs), "image": tag, "content_hash": spec.content_hash}
    if args.command == "image" and args.image_command == "build-env":
        from swe_sandbox._env_image import build_env_image, env_spec_from_json

        try:
            env_spec = env_spec_from_json(_read_json(args.spec))
        except EnvironmentBuildError as exc:  # the recipe itself: the user's input
            raise InputFileError(exc) from exc
        tag = build_env_image(env_spec, spec, progress=_progress)
        return {"image": tag, "name": env_spec.name, "requirements": list(env_spec.requirements)}
    if args.command == "image" and args.image_command == "build":
        from swe_sandbox._docker_image import build_task_image

        return {"image": build_task_image(_load_task(args), spec)}
    if args.command == "janitor":
        return {"reaped": _backend(args.backend, spec).reap_orphans()}
    if args.command == "grade":
        from swe_sandbox._sandbox import Sandbox

        task = _load_task(args)
        patch = _read_patch(args.patch, task)  # read before a sandbox exists: fail fast
        with Sandbox.create(task, _backend(args.backend, spec)) as sandbox:
            if patch is not None:
                sandbox.apply_patch(patch)
            result = sandbox.grade()
        return {
            "reward": result.reward,
            "reasons": list(result.reasons),
            "tests": {k: v.value for k, v in result.tests.items()},
        }
    raise SandboxError(f"unknown command {args.command}")


def _read_json(path: str) -> object:
    from swe_sandbox._errors import EnvironmentBuildError

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EnvironmentBuildError("spec", f"{path}: cannot read the spec: {exc}") from exc


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _mirror_url(value: str) -> str:
    if not value.startswith(("http://", "https://", "file:")):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s):// or file: URL")
    return value


def _suite_name(value: str) -> str:
    if not value or not value.replace("-", "").isalnum():
        raise argparse.ArgumentTypeError(f"{value!r} is not a Debian suite name")
    return value


def _add_base_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``--suite`` / ``--mirror``, accepted before the sub-command and after it.

    Below the top level the defaults are suppressed, so an option given after the sub-command
    overrides one given before it and an absent one leaves the top-level value alone.
    """
    parser.add_argument(
        "--suite",
        type=_suite_name,
        default="bookworm" if top else argparse.SUPPRESS,
        help="Debian suite of the base rootfs (default: bookworm)",
    )
    parser.add_argument(
        "--mirror",
        type=_mirror_url,
        default=None if top else argparse.SUPPRESS,
        help="Debian mirror URL (default: $SWE_SANDBOX_MIRROR, else this machine's apt sources)",
    )


def _add_task_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="JSON file: a TaskSpec object (task_to_json) or a dataset row")
    parser.add_argument(
        "--format",
        default="spec",
        choices=FORMATS,
        help="how TASK.json is written: our own field names (spec, the default) or a "
        "SWE-bench / SWE-rebench / R2E-Gym row",
    )
    parser.add_argument(
        "--repo-dir",
        default=None,
        metavar="DIR",
        help="dataset rows only: take the repository from a local git checkout instead of the "
        "dataset's image; DIR is the checkout itself or a folder of checkouts named "
        "owner__name, owner/name or name (the base commit must exist in it)",
    )


def _add_backend_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        default=DEFAULT_BACKEND,
        choices=backend_names(),
        help=f"sandbox backend (default: {DEFAULT_BACKEND}, daemon-less; docker needs an "
        "engine; third-party ones come from the swe_sandbox.backends entry points)",
    )


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (``swe-sandbox <cmd>: error: ...``), exit 2; sub-parsers are
    built with the parent's class, so every sub-command gets this."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``swe-sandbox`` argument parser (``--backend`` choices: `backend_names`; nothing is
    constructed)."""
    parser = _Parser(
        prog="swe-sandbox",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_base_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    image = commands.add_parser("image", help="build images locally (there is no registry)")
    image_commands = image.add_subparsers(dest="image_command", required=True, metavar="WHAT")
    base = image_commands.add_parser(
        "build-base", help="debootstrap the base rootfs, then docker-import it"
    )
    _add_base_options(base, top=False)
    base.add_argument("--no-docker", action="store_true", help="only build the rootfs")
    build_env = image_commands.add_parser(
        "build-env",
        help="build a per-repository environment image (base -> wheelhouse -> env)",
        description="SPEC.json: {name, requirements: [name==version...], repo: checkout | "
        "plain directory | sdist, base_commit, strip_components, repo_path (/testbed), "
        "python (checked against the base)}. Wheels are downloaded on the host (build "
        "containers have no network); the image is cached by the hash of the whole recipe.",
    )
    _add_base_options(build_env, top=False)
    build_env.add_argument("spec", help="JSON file with the environment recipe (EnvSpec)")
    build = image_commands.add_parser(
        "build", help="build the per-task image on the task's environment image (or the base)"
    )
    _add_base_options(build, top=False)
    _add_task_options(build)
    grade = commands.add_parser("grade", help="grade a task: gold, empty or a patch file")
    _add_base_options(grade, top=False)
    _add_task_options(grade)
    _add_backend_option(grade)
    grade.add_argument(
        "--patch",
        default="none",
        help="what to grade: gold (the task's fix), none (the untouched tree, the default) or "
        "the path of a unified diff",
    )
    janitor = commands.add_parser("janitor", help="reap sandboxes whose owner died")
    _add_base_options(janitor, top=False)
    _add_backend_option(janitor)
    return parser


def _fail(kind: str, message: str, code: int) -> int:
    # One line each, whatever the message holds (debootstrap output, a multi-line JSON error):
    # the JSON object on stdout for tools, the argparse-style line on stderr for people.
    line = " ".join(message.split())
    print(json.dumps({"error": kind, "message": line}), flush=True)
    print(f"{PROG}: error: {line}", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: prints one JSON object; on an error ``{"error": CLASS, "message": …}`` on
    stdout and ``swe-sandbox: error: …`` on stderr. Exit 0 success, 2 a usage error (bad
    arguments, an unusable task, spec or patch file), 1 a runtime failure, 130 interrupted."""
    args = build_parser().parse_args(argv)
    try:
        print(json.dumps(_run(args)))
    except InputFileError as exc:
        return _fail(type(exc.error).__name__, str(exc), USAGE_EXIT)
    except USAGE_ERRORS as exc:
        return _fail(type(exc).__name__, str(exc), USAGE_EXIT)
    except SandboxError as exc:
        return _fail(type(exc).__name__, str(exc), FAILURE_EXIT)
    except OSError as exc:
        # Environment, not input: an unwritable cache directory, a full disk. Still one line.
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(type(exc).__name__, f"{where}{exc.strerror or exc}", FAILURE_EXIT)
    except KeyboardInterrupt:
        # The sandbox context manager has already torn the sandbox down on the way out.
        return _fail("Interrupted", "interrupted; nothing to resume, run the command again", 130)
    return 0


if __name__ == "__main__":
    sys.exit(main())
