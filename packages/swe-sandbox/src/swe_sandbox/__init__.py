"""Isolated SWE task environments (Docker and namespace backends), the agent tools and unspoofable grading.

Task isolation for Arctic-SWE §5 (sandbox isolation, evaluation-hacking prevention): `TaskSpec` and dataset loaders, the
`DockerBackend` and `NamespaceBackend` (and any registered backend: `create_backend`), `Sandbox` (tools + grader), `SandboxPool` (asyncio).
"""

from swe_sandbox._backend import GRADER_DIR, WORKDIR, Backend, BackendSession
from swe_sandbox._docker_backend import DockerBackend
from swe_sandbox._docker_image import build_task_image, ensure_base_image, task_image_tag
from swe_sandbox._env_image import EnvSpec, build_env_image, env_spec_from_json
from swe_sandbox._errors import (
    BackendPluginError,
    BackendUnavailableError,
    BaseCommitNotFoundError,
    EnvironmentBuildError,
    EpisodeEndedError,
    GradingError,
    ImageBuildError,
    ImageNotFoundError,
    PatchApplyError,
    PathEscapeError,
    RepoNotFoundError,
    SandboxClosedError,
    SandboxError,
    StrReplaceError,
    TaskSpecError,
    TestCommandNotFoundError,
    UnknownBackendError,
    UnsupportedTestCommandError,
)
from swe_sandbox._grading import GradingPolicy, grade_patch
from swe_sandbox._limits import Limits
from swe_sandbox._namespace import NamespaceBackend
from swe_sandbox._pool import AsyncSandbox, LatencyStats, SandboxPool
from swe_sandbox._prepare import PreparedRepo, prepare_repo
from swe_sandbox._registry import (
    BACKEND_ENTRY_POINT_GROUP,
    DEFAULT_BACKEND,
    BackendFactory,
    backend_names,
    create_backend,
    register_backend,
)
from swe_sandbox._results import ExecResult, GradeResult, TestOutcome, reward_contract
from swe_sandbox._rootfs import BaseImageSpec, build_rootfs, mirror_from_apt
from swe_sandbox._rows import (
    env_spec_from_row,
    find_checkout,
    swebench_image_name,
    task_from_r2egym_row,
    task_from_swebench_row,
    task_from_swerebench_row,
)
from swe_sandbox._sandbox import Sandbox, SandboxMetrics
from swe_sandbox._task import DEFAULT_TEST_COMMAND, RepoKind, RepoSource, TaskSpec
from swe_sandbox._version import __version__

__all__ = [
    "BACKEND_ENTRY_POINT_GROUP",
    "DEFAULT_BACKEND",
    "DEFAULT_TEST_COMMAND",
    "GRADER_DIR",
    "WORKDIR",
    "AsyncSandbox",
    "Backend",
    "BackendFactory",
    "BackendPluginError",
    "BackendSession",
    "BackendUnavailableError",
    "BaseCommitNotFoundError",
    "BaseImageSpec",
    "DockerBackend",
    "EnvSpec",
    "EnvironmentBuildError",
    "EpisodeEndedError",
    "ExecResult",
    "GradeResult",
    "GradingError",
    "GradingPolicy",
    "ImageBuildError",
    "ImageNotFoundError",
    "LatencyStats",
    "Limits",
    "NamespaceBackend",
    "PatchApplyError",
    "PathEscapeError",
    "PreparedRepo",
    "RepoKind",
    "RepoNotFoundError",
    "RepoSource",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxMetrics",
    "SandboxPool",
    "StrReplaceError",
    "TaskSpec",
    "TaskSpecError",
    "TestCommandNotFoundError",
    "TestOutcome",
    "UnknownBackendError",
    "UnsupportedTestCommandError",
    "__version__",
    "backend_names",
    "build_env_image",
    "build_rootfs",
    "build_task_image",
    "create_backend",
    "ensure_base_image",
    "env_spec_from_json",
    "env_spec_from_row",
    "find_checkout",
    "grade_patch",
    "mirror_from_apt",
    "prepare_repo",
    "register_backend",
    "reward_contract",
    "swebench_image_name",
    "task_from_r2egym_row",
    "task_from_swebench_row",
    "task_from_swerebench_row",
    "task_image_tag",
]
