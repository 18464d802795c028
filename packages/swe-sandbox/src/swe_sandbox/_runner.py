"""The isolated graded run: pytest started so that the tree cannot steer it (Arctic-SWE §5).

A task command of the form ``[VAR=value ...] python3 -m pytest ARGS`` or ``pytest ARGS`` — or a
``&&`` / ``;`` list of such calls that agree on variables, interpreter and options (SWE-rebench
``test_cmd`` lists), optionally with ``cd /work`` — runs as

    env -i PATH=… HOME=/tmp LANG=C.UTF-8 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 [task VARs]
        python3 -I /grader/<nonce>/boot.py <private name> /work --rootdir=/work --confcutdir=/work
        -p no:cacheprovider OPTIONS GRADED-FILES

Any other shape is refused (`UnsupportedTestCommandError`): there is no weaker path.

* ``-I``: no user site, no ``PYTHON*`` variables, no working directory on ``sys.path``;
  ``env -i`` leaves no ``PYTHON*`` variable for child processes.
* the boot script imports pytest, the report plugin and the environment's installed pytest
  plugins (``pytest11`` entry points of site-packages only, so auto-loading is off and nothing
  in the tree registers one) *before* ``/work`` is on ``sys.path``, then puts ``/work`` after the
  standard library.
* the repository's own pytest configuration is read (markers, ``testpaths``, ``python_files``,
  import mode): grading restores its base content, so the patch never changes it.
* only the files holding graded tests (with the canaries, `swe_sandbox._canary`) are collected.
* the report plugin is loaded from ``/grader`` by file path under a private module name and
  handed to ``pytest.main`` as an object; its channel is the command's inherited stdout pipe,
  moved to a random private close-on-exec descriptor before anything else runs (stdout/stderr
  then point at ``/dev/null``). An audit hook refuses to open ``/proc/*/fd/*``, ``/dev/fd/*``
  and ``/proc/*/mem`` for writing, and ``/proc/*/fd`` listings: code under test that wants the
  channel must guess a number — and then still has to state every canary right.
"""

from __future__ import annotations

import secrets
import shlex
from typing import TYPE_CHECKING

import attrs

from swe_sandbox._backend import GRADER_DIR, WORKDIR
from swe_sandbox._canary import Canary, misstated_canaries
from swe_sandbox._environment import safe_path
from swe_sandbox._errors import GradingError, UnsupportedTestCommandError
from swe_sandbox._grader import PLUGIN_SOURCE, parse_report
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
_SEPARATORS = frozenset({"&&", ";"})
_CD_HOME = (["cd", "/work"], ["cd", "."], ["cd", "/work/"])

BOOT_SOURCE = r'''
"""swe-sandbox graded-run boot script (started as python3 -I; Python 3.6 and later)."""
import fcntl, os, sys
# The inherited report pipe moves to a random private close-on-exec descriptor.
channel = fcntl.fcntl(1, fcntl.F_DUPFD, 200 + int.from_bytes(os.urandom(2), "big") % 700)
os.set_inheritable(channel, False)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.close(null)
here = os.path.dirname(os.path.abspath(__file__))
workdir = sys.argv[2]  # the tree: /work
outside = (workdir, "/grader")
sys.path[:] = [p for p in sys.path if p and not any(p == d or p.startswith(d + "/") for d in outside)]
import importlib.util, re
import pytest  # before the tree is on sys.path: a pytest/ package there cannot shadow it
spec = importlib.util.spec_from_file_location(sys.argv[1], os.path.join(here, "report.py"))
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
plugin.open_channel(channel)
argv = sys.argv[3:]
blocked = {a[3:] for a in argv if a.startswith("no:")} | {a[5:] for a in argv if a.startswith("-pno:")}
site_dirs = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def installed_entry_points():
    """(name, loader) of the environment's pytest11 plugins, site-packages only (auto-loading
    is off, so nothing in the tree registers one)."""
    try:
        from importlib import metadata  # Python 3.8+
    except ImportError:
        try:
            import pkg_resources  # its working set is read now: the tree is not on sys.path
        except ImportError:
            return []
        found = pkg_resources.iter_entry_points("pytest11")
        return [(ep.name, ep.load) for ep in found if ep.dist.location in site_dirs]
    return [
        (ep.name, ep.load)
        for dist in metadata.distributions(path=site_dirs)
        for ep in dist.entry_points
        if ep.group == "pytest11"
    ]


entry_points = [(name, load) for name, load in installed_entry_points() if name not in blocked]
installed = [load() for _, load in entry_points]
if any(name == "xdist" for name, _ in entry_points):
    argv += ["-n", "0"]  # workers would not load the report plugin object: run in this process
_FDPATH = re.compile(r"^/(proc/[^/]+/(fd|task/[^/]+/fd)/|dev/fd/|proc/[^/]+/mem$)")
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT


def _guard(event, args):
    if event != "open":
        return
    path, mode, flags = args
    if path == channel:
        raise PermissionError("swe-sandbox: the report channel is not for the code under test")
    writing = (mode is not None and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITES)
    if writing and isinstance(path, str) and _FDPATH.match(os.path.normpath(path)):
        raise PermissionError("swe-sandbox: %s is not writable during grading" % path)


if hasattr(sys, "addaudithook"):  # Python 3.8+; older environments run without the hook
    sys.addaudithook(_guard)
at = next(
    (i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))),
    len(sys.path),
)
sys.path.insert(at, workdir)  # after the standard library: the tree cannot shadow it
sys.exit(int(pytest.main(argv, plugins=[plugin] + installed)))
'''


@attrs.frozen(kw_only=True)
class PytestInvocation:
    """A task command recognised as pytest: its variables, options and path arguments."""

    env: dict[str, str]
    python: str
    options: tuple[str, ...]
    paths: tuple[str, ...]


def _parse_words(words: list[str]) -> PytestInvocation | None:
    """``[VAR=v ...] python3 -m pytest ARGS`` / ``pytest ARGS`` as words, or ``None``."""
    words = list(words)
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


def graded_invocation(command: str) -> PytestInvocation:
    """The one isolated pytest run a task command stands for.

    A plain pytest call, or a ``&&`` / ``;`` list of pytest calls (``cd /work`` allowed) with
    the same variables, interpreter and options: their paths are merged. Raises
    `UnsupportedTestCommandError` for anything else.
    """
    try:  # punctuation_chars: ``a.py;`` is two tokens, as the shell reads it
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError as exc:
        raise UnsupportedTestCommandError(f"test command does not parse: {exc}") from exc
    parts: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            parts.append([])
        else:
            parts[-1].append(word)
    calls = [_parse_words(part) for part in parts if part and part not in _CD_HOME]
    if not calls or any(call is None for call in calls):
        raise UnsupportedTestCommandError(
            f"test command {command!r} is not a pytest call (or a && / ; list of them): "
            "the grader runs only pytest, isolated"
        )
    found = [c for c in calls if c is not None]
    shapes = {(tuple(sorted(c.env.items())), c.python, c.options) for c in found}
    if len(shapes) > 1:
        raise UnsupportedTestCommandError(
            f"test command {command!r}: its pytest calls differ in variables, interpreter or "
            "options, so they cannot be graded as one isolated run"
        )
    paths = tuple(dict.fromkeys(p for c in found for p in c.paths))
    return attrs.evolve(found[0], paths=paths)


def _has(options: tuple[str, ...], *names: str) -> bool:
    return any(o == n or o.startswith(n + "=") for o in options for n in names)


def isolated_argv(invocation: PytestInvocation, task: TaskSpec) -> list[str]:
    """The pytest arguments of the isolated run (see the module docstring)."""
    ours = []
    if not _has(invocation.options, "--rootdir"):
        ours.append(f"--rootdir={WORKDIR}")
    if not _has(invocation.options, "--confcutdir"):
        ours.append(f"--confcutdir={WORKDIR}")
    targets = sorted({t.split("::", 1)[0] for t in task.graded_tests}) or list(invocation.paths)
    return [*ours, "-p", "no:cacheprovider", *invocation.options, *targets]


def _install(sandbox: Sandbox, grader: str) -> None:
    files = {"boot.py": BOOT_SOURCE, "report.py": PLUGIN_SOURCE}
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
        invocation.python, "-I", f"{grader}/boot.py", f"_swe_grader_{nonce}", WORKDIR,
        *isolated_argv(invocation, task),
    ]  # fmt: skip
    return sandbox.run_internal(
        "exec " + shlex.join(argv), user="tester", timeout=timeout, output_limit=REPORT_LIMIT
    )


def run_tests(
    sandbox: Sandbox, task: TaskSpec, timeout: float, canaries: tuple[Canary, ...] = ()
) -> GradeResult:
    """Run the task's tests in `sandbox` (fresh, patched, graded files restored with their
    `canaries`) and apply the reward contract and the canary rule to the out-of-band report.

    Raises `UnsupportedTestCommandError` for a command that is not pytest.
    """
    invocation = graded_invocation(task.test_command)
    run = _isolated_run(sandbox, invocation, task, timeout)
    raw = "" if run.truncated else run.output
    sandbox.kill_agent_processes()
    report = parse_report(raw.splitlines())
    found = report.started and report.version >= 2 and report.exit_status is not None
    reward, reasons = reward_contract(
        report.outcomes,
        task.fail_to_pass,
        task.pass_to_pass,
        run.exit_code,
        report_found=found,
        collection_error=bool(report.collection_errors),
    )
    failures: list[str] = []
    if run.timed_out:
        failures.append(f"timeout: the test run exceeded {timeout}s")
    if report.exit_status is not None and report.exit_status != run.exit_code:
        failures.append(f"exit-code-mismatch: report {report.exit_status}, runner {run.exit_code}")
    if found and not report.collection_errors:
        failures += [f"forged: {m}" for m in misstated_canaries(canaries, report.outcomes)]
    if failures:
        reward, reasons = 0, (*reasons, *failures)
    outcomes = {name: report.outcomes.get(name) for name in task.graded_tests}
    return GradeResult(
        reward=reward,
        tests={k: v or TestOutcome.MISSING for k, v in outcomes.items()},
        runner_exit_code=run.exit_code,
        reasons=reasons,
        report_found=found,
        report={k: v for k, v in report.outcomes.items() if k not in _ids(canaries)},
        collection_errors=report.collection_errors,
        canaries={c.nodeid: c.must_pass for c in canaries},
    )


def _ids(canaries: tuple[Canary, ...]) -> set[str]:
    return {c.nodeid for c in canaries}
