"""`_policy`: splitting git diffs into file sections, the drop rules, the detector."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox._layout import RepoLayout
from swe_sandbox._policy import (
    filter_patch,
    graded_paths,
    split_patch,
    suspicious_references,
    unquote_path,
)

GRADED = graded_paths(("tests/test_add.py",), ("tests/test_core.py::test_sub",))
#: The toy repository's base tree: package ``calc``, tests in a non-package ``tests/``.
BASE = ("calc/__init__.py", "calc/core.py", "tests/test_core.py", "conftest.py", "README.md")
LAYOUT = RepoLayout.of(BASE, GRADED)


def rule_for(path: str, allowed: tuple[str, ...] = ()) -> str | None:
    return RepoLayout.of(BASE, GRADED, allowed).rule_for(path)


def git_diff(tmp_path: Path, files: dict[str, bytes]) -> str:
    """A real ``git diff --binary`` that adds `files` to an empty repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    done = subprocess.run(
        ["git", "-c", "core.quotePath=true", "diff", "--cached", "--binary", "--no-renames"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    return done.stdout.decode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("calc/core.py", None),
        ("calc/new_module.py", None),  # a fix may add modules and data to the package
        ("calc/data/table.json", None),
        ("calc/contrib/pytest/plugin.py", None),  # a library's own pytest plugin is its code
        ("tests/test_add.py", "graded-test"),
        ("tests/test_core.py", "graded-test"),
        ("tests", "graded-test-parent"),
        ("conftest.py", "test-config"),
        ("tests/conftest.py", "test-config"),
        ("calc/conftest.py", "test-config"),
        ("setup.cfg", "test-config"),
        ("pyproject.toml", "test-config"),
        ("evil-0.1.dist-info/entry_points.txt", "packaging-metadata"),
        ("setup.py", "packaging-metadata"),
        ("hook.pth", "startup-hook"),
        (".local/lib/python3.11/site-packages/x.py", "startup-hook"),
        ("sitecustomize.py", "startup-hook"),
        ("calc/__pycache__/core.cpython-311.pyc", "bytecode"),
        ("tests/__pycache__/test_add.cpython-311.pyc", "bytecode"),
        (".git/config", "git-internal"),
        ("__init__.py", "import-shape"),  # pytest would import the root conftest as a package
        ("tests/__init__.py", "import-shape"),
        ("tests/helpers.py", "test-file"),
        ("calc/test_extra.py", "test-file"),
        ("test_add.py", "test-file"),
        ("textwrap.py", "path-entry"),  # the root is on sys.path: no new names there
        ("swe_sandbox_report.py", "path-entry"),
        ("newpkg/__init__.py", "outside-package"),
        ("docs/pytest_notes.md", "outside-package"),
        ("README.md", "outside-package"),
    ],
)
def test_rules(path: str, rule: str | None) -> None:
    assert rule_for(path) == rule


def test_allowed_config_paths_exempt_role_rules_only() -> None:
    assert rule_for("setup.cfg", ("setup.cfg",)) is None
    assert rule_for("tests/conftest.py", ("tests/conftest.py",)) is None
    assert rule_for("conftest.py", ("*.cfg",)) == "test-config"
    assert rule_for("tests/test_add.py", ("tests/*",)) == "graded-test"
    assert rule_for("hook.pth", ("*",)) == "startup-hook"
    assert rule_for("tests/__init__.py", ("*",)) == "import-shape"


def test_tab_in_a_quoted_name_is_part_of_the_name() -> None:
    patch = (
        'diff --git "a/calc/x\\ty.py" "b/calc/x\\ty.py"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/calc/x\\ty.py"\n@@ -0,0 +1 @@\n+x = 1\n'
        'diff --git "a/tests/test_core.py\\tz" "b/tests/test_core.py\\tz"\n'
        'new file mode 100644\n--- /dev/null\n+++ "b/tests/test_core.py\\tz"\n@@ -0,0 +1 @@\n+y\n'
    )
    sections = split_patch(patch)
    assert [s.paths for s in sections] == [("calc/x\ty.py",), ("tests/test_core.py\tz",)]
    filtered = filter_patch(patch, LAYOUT)
    assert filtered.dropped == ("tests/test_core.py\tz: test-file",)


def test_real_git_diff_is_filtered_per_file(tmp_path: Path) -> None:
    patch = git_diff(
        tmp_path,
        {
            "calc/core.py": b"x = 1\n",
            "conftest.py": b"import pytest\n",
            "tests/test_add.py": b"def test_add_positive(): pass\n",
            "calc/blob.bin": bytes(range(256)),
            "calc/odd\nname.py": b"y = 2\n",
        },
    )
    filtered = filter_patch(patch, LAYOUT)
    kept = {p for s in split_patch(filtered.patch) for p in s.paths}
    assert kept == {"calc/core.py", "calc/blob.bin", "calc/odd\nname.py"}
    assert set(filtered.dropped) == {
        "conftest.py: test-config",
        "tests/test_add.py: graded-test",
    }
    assert "GIT binary patch" in filtered.patch
    again = filter_patch(filtered.patch, LAYOUT)  # idempotent: a stored diff regrades the same
    assert (again.patch, again.dropped) == (filtered.patch, ())


def test_plain_unified_diff_is_understood() -> None:
    patch = (
        "--- a/calc/core.py\n+++ b/calc/core.py\n@@ -1,2 +1,2 @@\n"
        " def double(x):\n-    return x + x + 1\n+    return x + x\n"
        "--- a/tests/test_add.py\n+++ b/tests/test_add.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    filtered = filter_patch(patch, LAYOUT)
    assert [s.paths for s in split_patch(filtered.patch)] == [("calc/core.py",)]
    assert filtered.dropped == ("tests/test_add.py: graded-test",)


def test_detector_flags_added_lines_only() -> None:
    patch = (
        "diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n"
        "+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n-import _pytest\n"
        "+from _pytest.reports import TestReport\n+os.listdir('/proc/self/fd')\n"
    )
    flags = suspicious_references(patch)
    assert "_pytest in calc/__init__.py" in flags
    assert "TestReport in calc/__init__.py" in flags
    assert "/proc/self/fd in calc/__init__.py" in flags
    assert suspicious_references(patch.replace("+from", " from").replace("+os", " os")) == ()


def _quote(raw: bytes) -> str:
    """git's C quoting of a path (what ``core.quotePath=true`` prints)."""
    table = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
    table |= {34: '\\"', 92: "\\\\"}
    out = "".join(table.get(b, chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in raw)
    return f'"{out}"'


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_unquote_inverts_git_quoting(name: str) -> None:
    raw = name.encode("utf-8", "surrogateescape")
    assert unquote_path(_quote(raw)) == raw.decode("utf-8", "surrogateescape")


@given(st.lists(st.sampled_from(["calc/a.py", "conftest.py", "tests/test_add.py", "x y.py"])))
def test_filter_never_keeps_a_policy_path(paths: list[str]) -> None:
    patch = "".join(
        f"diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+x\n"
        for p in paths
    )
    filtered = filter_patch(patch, LAYOUT)
    kept = [p for s in split_patch(filtered.patch) for p in s.paths]
    assert all(rule_for(p) is None for p in kept)
    assert len(kept) + len(filtered.dropped) >= len(set(paths))
