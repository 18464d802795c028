"""The naive baseline every red-team attack must beat first: grading the way it used to be done.

`naive_reward` restores the graded tests into the *agent's own* sandbox and runs the task's
command the ordinary way (``python3 -m pytest ...`` as the agent uid, working directory, user
site and environment as the agent left them), with a plain report plugin found through
``sys.path`` and a report file named by ``$SWE_SANDBOX_REPORT`` — the design before grading
moved into a fresh sandbox. An attack "works" when this baseline gives reward 1 on the buggy
tree; the red-team suite then shows the package gives 0.
"""

from __future__ import annotations

from swe_sandbox import Sandbox, TaskSpec, prepare_repo
from swe_sandbox._grader import parse_report
from swe_sandbox._results import reward_contract

PLUGIN = "swe_sandbox_report"
#: The plain report plugin (JSON lines to the file in ``$SWE_SANDBOX_REPORT``).
PLAIN_PLUGIN = """
import json, os
_REPORT = None

def _emit(record):
    if _REPORT is not None:
        _REPORT.write(json.dumps(record) + "\\n")
        _REPORT.flush()

def pytest_configure(config):
    global _REPORT
    path = os.environ.pop("SWE_SANDBOX_REPORT", None)
    if path and _REPORT is None:
        _REPORT = open(path, "a", encoding="utf-8")
        _emit({"event": "start"})

def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect", "nodeid": report.nodeid, "outcome": "failed"})

def pytest_runtest_logreport(report):
    _emit({"event": "test", "nodeid": report.nodeid, "when": report.when,
           "outcome": report.outcome, "xfail": bool(getattr(report, "wasxfail", False))})

def pytest_sessionfinish(session, exitstatus):
    _emit({"event": "finish", "exitstatus": int(exitstatus)})
"""


def naive_reward(sandbox: Sandbox, task: TaskSpec) -> tuple[int, tuple[str, ...]]:
    """Reward and reasons of the naive in-place run (see the module docstring)."""
    sandbox.restore(prepare_repo(task).restore_files)
    # The base rootfs puts /grader/plugin on sys.path (a .pth in dist-packages).
    installed = sandbox.run_internal(
        f"mkdir -p /grader/plugin /grader/naive && cat > /grader/plugin/{PLUGIN}.py"
        " && chmod -R a+rX /grader && chmod 0733 /grader/naive",
        user="root",
        stdin=PLAIN_PLUGIN.encode(),
        timeout=60,
    )
    assert installed.ok, installed.output
    run = sandbox.run_internal(
        task.test_command,
        env={"SWE_SANDBOX_REPORT": "/grader/naive/report.jsonl", "PYTEST_ADDOPTS": f"-p {PLUGIN}"},
        timeout=120,
    )
    sandbox.kill_agent_processes()
    raw = sandbox.run_internal("cat /grader/naive/report.jsonl", user="root", timeout=60)
    sandbox.run_internal("rm -rf /grader/naive /grader/plugin", user="root", timeout=60)
    report = parse_report(raw.output.splitlines() if raw.ok else [])
    return reward_contract(
        report.outcomes,
        task.fail_to_pass,
        task.pass_to_pass,
        run.exit_code,
        report_found=report.started and report.exit_status is not None,
        collection_error=bool(report.collection_errors),
    )
