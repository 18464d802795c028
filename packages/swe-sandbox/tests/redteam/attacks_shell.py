"""Attack classes on a task whose command is a shell ``&&`` list of two plain pytest calls
(`redteam.attack.SHELL_COMMAND`): each call is a ``python3 -m pytest`` of its own, so whatever
steers one interpreter (working directory first on ``sys.path``, user site, ``PYTEST_ADDOPTS``
from start-up code, the report plugin found by module name) steers both.

``PATH`` and ``cd`` tricks are not here: the naive run's ``PATH`` holds no agent-writable
directory and the command names no directory the agent could swap, so they cannot beat it.
"""

from __future__ import annotations

import dataclasses

from redteam import attacks_imports, attacks_pytest
from redteam.attack import GRADED, Attack

#: A module named like the report plugin (found through ``sys.path`` by ``-p NAME``): it writes
#: a pass for every graded test and a clean finish to the report file the plugin would use.
SHADOW_REPORT_PLUGIN = f"""
import json, os
_R = None

def pytest_configure(config):
    global _R
    _R = open(os.environ.pop("SWE_SANDBOX_REPORT"), "a")
    _R.write(json.dumps({{"event": "start"}}) + "\\n")

def pytest_sessionfinish(session, exitstatus):
    for t in {GRADED!r}:
        for when in ("setup", "call", "teardown"):
            _R.write(json.dumps({{"event": "test", "nodeid": t, "when": when, "outcome": "passed"}}) + "\\n")
    _R.write(json.dumps({{"event": "finish", "exitstatus": 0}}) + "\\n")
    _R.flush()
    session.exitstatus = 0
"""


def on_shell_task(attack: Attack) -> Attack:
    """`attack` against the ``&&``-list task."""
    return dataclasses.replace(
        attack, name=f"shell-{attack.name}", area="shell", task="shell", ci_docker=False
    )


#: Toy-task classes that also steer each interpreter of the ``&&`` list.
_REUSED = (
    "shadow-stdlib-module",
    "shadow-pytest-package",
    "user-site-pth",
    "conftest-forgery",
    "setup-cfg-plugin",
)
ATTACKS = [
    Attack(
        "shell-shadow-report-plugin",
        "shell",
        {"swe_sandbox_report.py": SHADOW_REPORT_PLUGIN},
        task="shell",
        ci_docker=True,
    ),
    *(
        on_shell_task(a)
        for a in (*attacks_imports.ATTACKS, *attacks_pytest.ATTACKS)
        if a.name in _REUSED
    ),
]
