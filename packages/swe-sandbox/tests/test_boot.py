"""The graded run's boot script on the host: report channel, installed plugins, audit hook."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from swe_sandbox._grader import PLUGIN_SOURCE, ParsedReport, parse_report
from swe_sandbox._results import TestOutcome
from swe_sandbox._runner import BOOT_SOURCE

#: Runs the boot script the way a Python 3.6 / 3.7 interpreter would: without audit hooks.
NO_HOOKS = (
    "import sys; del sys.addaudithook; boot = sys.argv[1]; sys.argv = sys.argv[1:]; "
    "exec(compile(open(boot).read(), boot, 'exec'), {'__file__': boot, '__name__': '__main__'})"
)


def boot(
    tmp_path: Path, test_source: str, *options: str, audit_hooks: bool = True
) -> tuple[int, ParsedReport]:
    """Run the boot script as the grader does (``python -I``, autoload off) on one test file;
    its stdout is the report channel."""
    grader = tmp_path / "grader"
    grader.mkdir(exist_ok=True)
    (grader / "boot.py").write_text(BOOT_SOURCE)
    (grader / "report.py").write_text(PLUGIN_SOURCE)
    (tmp_path / "t").mkdir(exist_ok=True)
    (tmp_path / "t" / "test_x.py").write_text(test_source)
    start = [sys.executable, "-I"] if audit_hooks else [sys.executable, "-I", "-c", NO_HOOKS]
    done = subprocess.run(
        [*start, str(grader / "boot.py"), "_swe_grader_t", str(tmp_path), "-p", "no:cacheprovider",
         "-p", "no:randomly", *options, "t/test_x.py"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    return done.returncode, parse_report(done.stdout.splitlines())


def test_the_report_goes_to_the_inherited_pipe_with_call_records(tmp_path: Path) -> None:
    code, report = boot(tmp_path, "def test_ok():\n    pass\n\ndef test_bad():\n    assert 0\n")
    assert (code, report.exit_status, report.version) == (1, 1, 2)
    assert report.outcomes == {
        "t/test_x.py::test_ok": TestOutcome.PASSED,
        "t/test_x.py::test_bad": TestOutcome.FAILED,
    }


def test_installed_plugins_load_from_site_packages_with_autoload_off(tmp_path: Path) -> None:
    """hypothesis registers a ``pytest11`` entry point in this environment's site-packages: its
    option is known, and ``-p no:NAME`` still turns it off."""
    code, _ = boot(tmp_path, "def test_ok():\n    pass\n", "--hypothesis-seed=3")
    assert code == 0
    code, _ = boot(tmp_path, "def test_ok():\n    pass\n", "-p", "no:hypothesispytest",
                   "--hypothesis-seed=3")  # fmt: skip
    assert code == 4  # usage error: the option is unknown without the plugin


FD_WRITE = """
import pytest

def test_fd_paths_are_not_writable():
    for path in ("/proc/self/fd/1", "/dev/fd/1"):
        with pytest.raises(PermissionError):
            open(path, "w")
"""


def test_the_audit_hook_refuses_writing_through_fd_paths(tmp_path: Path) -> None:
    plain = subprocess.run(
        [sys.executable, "-c", "open('/proc/self/fd/1', 'w').write('')"], check=False
    )
    assert plain.returncode == 0  # an ordinary process may
    code, report = boot(tmp_path, FD_WRITE)
    assert report.outcomes == {"t/test_x.py::test_fd_paths_are_not_writable": TestOutcome.PASSED}
    assert code == 0


def test_the_grader_sources_are_python_3_6_syntax() -> None:
    """Environment images of older tasks run Python 3.6 / 3.7: the boot script and the report
    plugin run in that interpreter (no walrus, no ``sys.addaudithook`` or ``importlib.metadata``
    without a fallback)."""
    for source in (BOOT_SOURCE, PLUGIN_SOURCE):
        ast.parse(source, feature_version=(3, 6))
    assert 'hasattr(sys, "addaudithook")' in BOOT_SOURCE
    assert "import pkg_resources" in BOOT_SOURCE


def test_without_audit_hooks_the_run_still_reports(tmp_path: Path) -> None:
    """What a Python 3.6 / 3.7 environment does: the boot script runs without the hook (and the
    fd-path writes it would refuse go through)."""
    code, report = boot(tmp_path, "def test_ok():\n    pass\n", audit_hooks=False)
    assert (code, report.exit_status) == (0, 0)
    assert report.outcomes == {"t/test_x.py::test_ok": TestOutcome.PASSED}
    code, report = boot(tmp_path, FD_WRITE, audit_hooks=False)
    assert report.outcomes == {"t/test_x.py::test_fd_paths_are_not_writable": TestOutcome.FAILED}
