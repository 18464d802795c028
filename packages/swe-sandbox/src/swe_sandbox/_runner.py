"""The isolated graded run: pytest started so that the tree cannot steer it (Arctic-SWE §5).

A task command of the form ``[VAR=value ...] python3 -m pytest ARGS`` or ``pytest ARGS`` runs as

    env -i PATH=… HOME=/tmp LANG=C.UTF-8 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 [task VARs]
        python3 -I /grader/<nonce>/boot.py -c /grader/<nonce>/pytest.ini --rootdir=/work
        --confcutdir=/work --import-mode=append -p no:cacheprovider OPTIONS GRADED-FILES

* ``-I``: no user site, no ``PYTHON*`` variables, no working directory on ``sys.path`` — a
  ``.pth`` or ``sitecustomize`` helper in the tree, a ``pytest/`` package or a stdlib name at
  the root are never imported; ``env -i`` leaves no ``PYTHON*`` variable for child processes.
* the boot script imports pytest and the report plugin first, then puts ``/work`` *after* the
  standard library; test directories are appended (``--import-mode=append``).
* plugin auto-loading is off (fake ``*.dist-info`` entry points load nothing); the grader's own
  empty ``-c`` configuration means ``setup.cfg`` / ``pyproject.toml`` / ``tox.ini`` /
  ``pytest.ini`` sections of the tree are not read (a task declares its own with ``-c``).
* only the files holding graded tests are collected, so a test module the agent added (say,
  with ``pytest_plugins``) is never imported.
* the report plugin is loaded from ``/grader`` by file path under a private module name and
  handed to ``pytest.main`` as an object; its channel is the command's inherited stdout pipe,
  which the boot script moves to a private close-on-exec descriptor before anything else runs
  (stdout/stderr then point at ``/dev/null``): no variable or path names it.

Any other command shape runs through ``bash`` with the plugin added by ``PYTEST_ADDOPTS`` and
a report file under ``/grader`` (weaker: the verdict says ``runner: shell``).
"""

from __future__ import annotations

import secrets
import shlex
from typing import TYPE_CHECKING

import attrs

from swe_sandbox._backend import GRADER_DIR, WORKDIR
from swe_sandbox._environment import safe_path
from swe_sandbox._errors import GradingError
from swe_sandbox._grader import PLUGIN_MODULE, PLUGIN_SOURCE, parse_report
from swe_sandbox._results import ExecResult, GradeResult, TestOutcome, reward_contract
from swe_sandbox._task import TaskSpec

if TYPE_CHECKING:
    from swe_sandbox._sandbox import Sandbox

#: The report may be large (one line per test phase); results never come from test output.
REPORT_LIMIT = 64 << 20
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: pytest options that take their value as the next word.
_VALUE_OPTIONS = frozenset(
    {
        "-p", "-k", "-m", "-c", "-o", "-W", "-r", "-n",
        "--config-file", "--rootdir", "--confcutdir", "--deselect", "--ignore",
        "--ignore-glob", "--junitxml", "--junit-xml", "--tb", "--maxfail", "--durations",
        "--import-mode", "--basetemp", "--dist", "--cov", "--cov-report", "--log-level",
        "--timeout", "--capture", "--color", "--override-ini", "--log-file", "--doctest-glob",
        "--runxfail-for", "--numprocesses", "--pythonwarnings", "--log-cli-level",
    }
)  # fmt: skip
_SHELL_WORDS = frozenset({"&&", "||", ";", "|", "&", ">", ">>", "<", "2>", "2>&1", "(", ")"})

BOOT_SOURCE = r'''
"""swe-sandbox graded-run boot script (started as python3 -I)."""
import os, sys
channel = os.dup(1)  # the inherited report pipe, now private and close-on-exec
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.close(null)
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if p and not p.startswith(("/work", "/grader"))]
import importlib.util
import pytest  # before the tree is on sys.path: a pytest/ package there cannot shadow it
spec = importlib.util.spec_from_file_location(sys.argv[1], os.path.join(here, "report.py"))
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
plugin.open_channel(channel)
at = next(
    (i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))),
    len(sys.path),
)
sys.path.insert(at, "/work")  # after the standard library: the tree cannot shadow it
sys.exit(int(pytest.main(sys.argv[2:], plugins=[plugin])))
'''


@attrs.frozen(kw_only=True)
class PytestInvocation:
    """A task command recognised as pytest: its variables, options and path arguments."""

    env: dict[str, str]
    python: str
    options: tuple[str, ...]
    paths: tuple[str, ...]


def parse_pytest_command(command: str) -> PytestInvocation | None:
    """``[VAR=v ...] python3 -m pytest ARGS`` / ``pytest ARGS``, or ``None`` for other shapes."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    env: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words or any(w in _SHELL_WORDS for w in words):
        return None
    python = "python3"
    if words[0] in ("pytest", "py.test"):
        args = words[1:]
    elif words[0].rsplit("/", 1)[-1].startswith("python") and words[1:3] == ["-m", "pytest"]:
        python, args = words[0], words[3:]
    else:
        return None
    options: list[str] = []
    paths: list[str] = []
    iterator = iter(args)
    for word in iterator:
        if word.startswith("-"):
            options.append(word)
            if word in _VALUE_OPTIONS:
                options.append(next(iterator, ""))
        else:
            paths.append(word)
    return PytestInvocation(env=env, python=python, options=tuple(options), paths=tuple(paths))


def _has(options: tuple[str, ...], *names: str) -> bool:
    return any(o == n or o.startswith(n + "=") for o in options for n in names)


def isolated_argv(invocation: PytestInvocation, task: TaskSpec, grader: str) -> list[str]:
    """The pytest arguments of the isolated run (see the module docstring)."""
    ours = []
    if not _has(invocation.options, "-c", "--config-file"):
        ours += ["-c", f"{grader}/pytest.ini"]
    if not _has(invocation.options, "--rootdir"):
        ours.append(f"--rootdir={WORKDIR}")
    if not _has(invocation.options, "--confcutdir"):
        ours.append(f"--confcutdir={WORKDIR}")
    if not _has(invocation.options, "--import-mode"):
        ours.append("--import-mode=append")
    targets = sorted({t.split("::", 1)[0] for t in task.graded_tests}) or list(invocation.paths)
    return [*ours, "-p", "no:cacheprovider", *invocation.options, *targets]


def _install(sandbox: Sandbox, grader: str) -> None:
    files = {"boot.py": BOOT_SOURCE, "report.py": PLUGIN_SOURCE, "pytest.ini": "[pytest]\n"}
    script = " && ".join(
        f"printf %s {shlex.quote(text)} > {grader}/{name}" for name, text in files.items()
    )
    done = sandbox.run_internal(
        f"mkdir -m 0755 -p {grader} && {script} && chmod 0644 {grader}/*",
        user="root",
        timeout=60,
    )
    if not done.ok:
        raise GradingError(f"cannot install the grader: {done.output}")


def _isolated_run(
    sandbox: Sandbox, invocation: PytestInvocation, task: TaskSpec, timeout: float
) -> ExecResult:
    python = invocation.python
    if "/" in python and (not python.startswith("/") or safe_path(python) != python):
        raise GradingError(f"test interpreter {python!r} is relative or agent-writable")
    nonce = secrets.token_hex(8)
    grader = f"{GRADER_DIR}/{nonce}"
    _install(sandbox, grader)
    env = {
        # The environment image's PATH (its venv / conda first), agent-writable entries
        # dropped (`swe_sandbox._environment.safe_path`): `python3` is the image's interpreter.
        "PATH": safe_path(sandbox.env.get("PATH", _PATH)),
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        **{k: v for k, v in invocation.env.items() if not k.startswith("PYTHON")},
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    argv = [
        "env", "-i", *(f"{k}={v}" for k, v in env.items()),
        invocation.python, "-I", f"{grader}/boot.py", f"_swe_grader_{nonce}",
        *isolated_argv(invocation, task, grader),
    ]  # fmt: skip
    return sandbox.run_internal(
        "exec " + shlex.join(argv), timeout=timeout, output_limit=REPORT_LIMIT
    )


def _shell_run(sandbox: Sandbox, task: TaskSpec, timeout: float) -> tuple[ExecResult, str]:
    """Fallback for non-pytest command shapes: the plugin via PYTEST_ADDOPTS, a report file."""
    report_dir = f"{GRADER_DIR}/{secrets.token_hex(8)}"
    done = sandbox.run_internal(
        f"mkdir -p {GRADER_DIR}/plugin && cat > {GRADER_DIR}/plugin/{PLUGIN_MODULE}.py"
        f" && chmod 0644 {GRADER_DIR}/plugin/{PLUGIN_MODULE}.py"
        f" && chmod 0711 {GRADER_DIR} && mkdir -m 0733 {report_dir}",
        user="root",
        stdin=PLUGIN_SOURCE.encode(),
        timeout=60,
    )
    if not done.ok:
        raise GradingError(f"cannot install the grader: {done.output}")
    env = {
        "SWE_SANDBOX_REPORT": f"{report_dir}/report.jsonl",
        "PYTEST_ADDOPTS": f"-p {PLUGIN_MODULE}",
    }
    run = sandbox.run_internal(task.test_command, env=env, timeout=timeout)
    raw = sandbox.run_internal(
        f"cat {report_dir}/report.jsonl", user="root", timeout=60, output_limit=REPORT_LIMIT
    )
    return run, (raw.output if raw.ok and not raw.truncated else "")


def run_tests(sandbox: Sandbox, task: TaskSpec, timeout: float) -> GradeResult:
    """Run the task's tests in `sandbox` (fresh, patched, graded files restored) and apply the
    reward contract to the out-of-band report."""
    invocation = parse_pytest_command(task.test_command)
    flags: tuple[str, ...] = ()
    if invocation is not None:
        run = _isolated_run(sandbox, invocation, task, timeout)
        raw = "" if run.truncated else run.output
    else:
        run, raw = _shell_run(sandbox, task, timeout)
        flags = ("runner: shell (the task command is not a plain pytest invocation)",)
    sandbox.kill_agent_processes()
    report = parse_report(raw.splitlines())
    reward, reasons = reward_contract(
        report.outcomes,
        task.fail_to_pass,
        task.pass_to_pass,
        run.exit_code,
        report_found=report.started and report.exit_status is not None,
        collection_error=bool(report.collection_errors),
    )
    failures: list[str] = []
    if run.timed_out:
        failures.append(f"timeout: the test run exceeded {timeout}s")
    if report.exit_status is not None and report.exit_status != run.exit_code:
        failures.append(f"exit-code-mismatch: report {report.exit_status}, runner {run.exit_code}")
    if failures:
        reward, reasons = 0, (*reasons, *failures)
    outcomes = {name: report.outcomes.get(name) for name in task.graded_tests}
    return GradeResult(
        reward=reward,
        tests={k: v or TestOutcome.MISSING for k, v in outcomes.items()},
        runner_exit_code=run.exit_code,
        reasons=reasons,
        report_found=report.exit_status is not None,
        report=dict(report.outcomes),
        collection_errors=report.collection_errors,
        flags=flags,
    )
