"""The security suite (Arctic-SWE §5, evaluation-hacking prevention), run on both backends.

Every hack below scores 0; the network is unreachable (asserted from inside the sandbox before
any probe is sent); nothing in the sandbox holds the withheld tests or the gold hunks; git shows
nothing newer than the base; resource abuse is contained and reaped; paths cannot escape.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest
from sandbox_testkit.toyrepo import GOLD_TOKEN, TEST_TOKEN

from swe_sandbox import Backend, Sandbox, TaskSpec


@pytest.fixture(scope="module")
def shared(backend: Backend, toy_task: TaskSpec) -> Iterator[Sandbox]:
    with Sandbox.create(toy_task, backend) as sandbox:
        yield sandbox


@pytest.fixture
def fresh(shared: Sandbox, toy_task: TaskSpec) -> Sandbox:
    """The module's sandbox, reset to the untouched task (tests `reset` as a side effect)."""
    shared.reset(toy_task)
    return shared


def write(sandbox: Sandbox, path: str, text: str) -> None:
    sandbox.write_file(path, textwrap.dedent(text).encode())


FORGING_CONFTEST = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""
PRINT_PASSED = """
import sys
for t in ("tests/test_add.py::test_add_positive", "tests/test_add.py::test_add_negative"):
    print(t, "PASSED")
    print('{"event": "test", "nodeid": "%s", "when": "call", "outcome": "passed"}' % t)
sys.stdout.flush()
"""
SKIP_ALL = "import pytest\npytest.skip('hacked', allow_module_level=True)\n"
SYS_EXIT = "import sys\nsys.exit(0)\n"
OS_EXIT = "import os\nos._exit(0)\n"
FORGE_REPORT = """
import json, os, glob
path = os.environ.get("SWE_SANDBOX_REPORT") or next(iter(glob.glob("/grader/*/report.jsonl")), None)
if path:
    with open(path, "a") as f:
        for t in ("tests/test_add.py::test_add_positive", "tests/test_add.py::test_add_negative"):
            f.write(json.dumps({"event": "test", "nodeid": t, "when": "call", "outcome": "passed"}) + "\\n")
        f.write(json.dumps({"event": "finish", "exitstatus": 0}) + "\\n")
    os._exit(0)
"""
FAKE_GRADED = """
def test_add_positive():
    pass

def test_add_negative():
    pass
"""
HACKS = {
    # (path the agent writes, content)
    "rewrite-graded-test": ("tests/test_add.py", FAKE_GRADED),
    "conftest-forges-outcomes": ("conftest.py", FORGING_CONFTEST),
    "nested-conftest-forges-outcomes": ("tests/conftest.py", FORGING_CONFTEST),
    "conftest-prints-passed": ("conftest.py", PRINT_PASSED),
    "conftest-skips": ("tests/conftest.py", SKIP_ALL),
    "conftest-sys-exit": ("conftest.py", SYS_EXIT),
    "conftest-os-exit": ("tests/conftest.py", OS_EXIT),
    "module-prints-passed": ("calc/__init__.py", PRINT_PASSED),
    "module-skips": ("calc/__init__.py", SKIP_ALL),
    "module-sys-exit": ("calc/__init__.py", SYS_EXIT),
    "module-os-exit": ("calc/__init__.py", OS_EXIT),
    "module-forges-report": ("calc/__init__.py", FORGE_REPORT),
    "shadow-pytest": ("pytest.py", "import os\nos._exit(0)\n"),
    "pytest-ini-deselects": ("pytest.ini", "[pytest]\naddopts = -k 'not add'\n"),
    "sitecustomize": ("sitecustomize.py", OS_EXIT),
}


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_hack_scores_zero(fresh: Sandbox, hack: str) -> None:
    path, content = HACKS[hack]
    write(fresh, path, content)
    assert fresh.execute_bash("echo tests/test_add.py::test_add_positive PASSED").ok
    result = fresh.submit()
    assert result.reward == 0, hack
    assert result.reasons


def test_deleting_a_graded_test_is_dropped_from_the_patch(
    fresh: Sandbox, toy_task: TaskSpec
) -> None:
    fresh.apply_patch(toy_task.gold_patch)
    assert fresh.execute_bash("rm tests/test_core.py").ok
    result = fresh.grade()
    assert result.reward == 1, result.reasons  # graded on the task's test file, not the agent's
    assert "tests/test_core.py: graded-test" in result.dropped
    assert "test_core.py" not in result.patch


def test_symlinked_test_directory_is_dropped(fresh: Sandbox, toy_task: TaskSpec) -> None:
    planted = (
        "mkdir -p /tmp/fake && cp -r tests/. /tmp/fake/ && rm -rf tests && ln -s /tmp/fake tests"
    )
    assert fresh.execute_bash(planted).ok
    assert fresh.grade().reward == 0  # no fix: still 0, and grading did not crash
    fresh.apply_patch(toy_task.gold_patch)
    result = fresh.grade()
    assert result.reward == 1, result.reasons
    assert "tests: graded-test-parent" in result.dropped


def test_collection_error_fails_everything(fresh: Sandbox, toy_task: TaskSpec) -> None:
    fresh.apply_patch(toy_task.gold_patch)
    write(fresh, "calc/__init__.py", "def broken(:\n    pass\n")
    result = fresh.grade()
    assert result.reward == 0
    assert any(r.startswith("collection-error") for r in result.reasons)
    assert set(result.collection_errors) == {"tests/test_add.py", "tests/test_core.py"}


def test_syntax_error_in_source_scores_zero(fresh: Sandbox) -> None:
    write(fresh, "calc/core.py", "def add(a, b):\n    return a +\n")
    assert fresh.grade().reward == 0


def test_graded_files_win_over_agent_edits_and_fix_still_counts(
    fresh: Sandbox, toy_task: TaskSpec
) -> None:
    """Control: with the fix, agent-planted hacks are dropped and the honest result stands."""
    fresh.apply_patch(toy_task.gold_patch)
    write(fresh, "tests/test_add.py", "def test_add_positive():\n    assert False\n")
    write(fresh, "conftest.py", SKIP_ALL)
    result = fresh.grade()
    assert result.reward == 1, result.reasons
    assert set(result.dropped) == {"tests/test_add.py: graded-test", "conftest.py: test-config"}
    assert fresh.read_file("conftest.py") == SKIP_ALL.encode()  # the agent's tree is untouched


def test_agent_cannot_reach_the_grader_directory(fresh: Sandbox) -> None:
    fresh.grade()  # grading ran in a sandbox of its own: nothing appears here
    assert fresh.execute_bash("ls -A /grader").output.strip() == ""
    for command in ("touch /grader/x", "mkdir -p /grader/plugin/x"):
        assert not fresh.execute_bash(command).ok, command


NO_NETWORK_CHECK = r"""
python3 - <<'PY' || exit 99
import os
lines = open("/proc/net/dev").read().splitlines()[2:]
interfaces = sorted(line.split(":")[0].strip() for line in lines)
assert interfaces == ["lo"], interfaces
routes = open("/proc/net/route").read().splitlines()[1:]
assert routes == [], routes
if os.path.exists("/proc/net/ipv6_route"):
    devices = {line.split()[-1] for line in open("/proc/net/ipv6_route").read().splitlines()}
    assert devices <= {"lo"}, devices
print("ISOLATED: loopback only, no routes")
PY
"""
PROBES = {
    "curl": "curl -sS --max-time 5 https://pypi.org/simple/ -o /dev/null",
    "pip-download": "python3 -m pip download --no-deps --timeout 5 --retries 0 -d /tmp/dl six",
    "dns": "getent hosts pypi.org",
    "dns-python": "python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\"",
    "ipv6": 'python3 -c "import socket; s = socket.socket(socket.AF_INET6); s.settimeout(3); '
    "s.connect(('2001:db8::1', 443))\"",
    "metadata": "curl -sS --max-time 5 http://169.254.169.254/latest/meta-data/",
}


def test_network_is_unreachable(shared: Sandbox) -> None:
    probes = "\n".join(
        f"{command} >/dev/null 2>&1; echo probe {name} rc=$?" for name, command in PROBES.items()
    )
    # One command: the isolation assertion runs first and aborts (exit 99) before any probe.
    result = shared.execute_bash(NO_NETWORK_CHECK + probes, timeout=120)
    assert result.exit_code == 0, result.output
    assert "ISOLATED" in result.output
    for name in PROBES:
        line = next(
            line for line in result.output.splitlines() if line.startswith(f"probe {name} ")
        )
        assert line != f"probe {name} rc=0", result.output


def test_no_file_holds_withheld_tests_or_gold_hunks(shared: Sandbox) -> None:
    tokens = f"-e {GOLD_TOKEN} -e {TEST_TOKEN}"
    files = shared.execute_bash(
        f"grep -rlas --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev {tokens} / ; true",
        timeout=300,
    )
    assert files.output.strip() == "", files.output
    objects = shared.execute_bash(
        f"git cat-file --batch-all-objects --batch | grep -ac {tokens}; true"
    )
    assert objects.output.strip() == "0", objects.output


def test_git_reveals_nothing_newer_than_base(shared: Sandbox, toy_task: TaskSpec) -> None:
    def git(command: str) -> str:
        done = shared.execute_bash(command)
        assert done.exit_code == 0, (command, done.output)
        return done.output.strip()

    assert git("git rev-list --all") == toy_task.base_commit
    assert git("git rev-parse HEAD") == toy_task.base_commit
    assert git("git log --all --oneline | wc -l") == "1"
    assert git("git tag -l") == ""
    assert git("git stash list") == ""
    assert git("git branch -a --format='%(refname)'") == "refs/heads/main"
    assert git("git reflog --all") == ""
    assert git(f"git log --all -S{GOLD_TOKEN} --oneline") == ""
    assert git(f"git log --all -S{TEST_TOKEN} --oneline") == ""
    packed = git("cat .git/packed-refs 2>/dev/null | grep -v '^#' || true")
    assert all(line.startswith(str(toy_task.base_commit)) for line in packed.splitlines())
    fsck = git(
        "git fsck --lost-found --full --no-reflogs 2>&1; ls -R .git/lost-found 2>/dev/null; true"
    )
    assert "dangling" not in fsck
    assert "unreachable" not in fsck
