"""The patch policy: which parts of an agent's patch are graded (Arctic-SWE §5, evaluation hacking).

The agent's change is a ``git diff`` of its whole working tree against the base commit. Before
it is applied to a pristine tree for grading, every file section that touches a path outside
the package under test (`swe_sandbox._layout.RepoLayout`: an allowlist by role derived from the
base tree) is dropped and named in the verdict as ``"<path>: <rule>"``:

========================  ============================================================
rule                      paths
========================  ============================================================
``git-internal``          any path with a ``.git`` component
``graded-test``           the task's withheld files and every file holding a graded test
``graded-test-parent``    a directory on the way to a graded file (turned into a symlink/file)
``bytecode``              ``__pycache__/``, ``*.pyc``, ``*.pyo`` (forged or unchecked bytecode)
``startup-hook``          ``*.pth``, ``sitecustomize.py``, ``usercustomize.py``, ``.local/``
``import-shape``          an ``__init__.py`` added or removed where it moves pytest's inserted
                          directory (on the way to a graded file or conftest, in a path entry)
``test-config``           ``conftest.py``, ``pytest.ini``, ``.pytest.ini``, ``tox.ini``,
                          ``setup.cfg``, ``pyproject.toml``
``packaging-metadata``    ``setup.py``, ``*.dist-info/``, ``*.egg-info/``, ``*.egg-link``
``test-file``             test modules and anything under ``test/``, ``tests/``, ``testing/``
``path-entry``            a new name directly in a directory on ``sys.path`` during the run
``outside-package``       anything else outside the package roots and top-level modules
``symlink-out``           a symlink in the package whose target is absolute or leaves it
========================  ============================================================

`TaskSpec.allowed_config_paths` (globs) exempts paths from the five role rules from
``test-config`` to ``outside-package`` for tasks
whose fix legitimately edits them (a conftest fixture, a configuration file).

The detector (`suspicious_references`) flags added lines that name test-framework internals or
the report channel; it is cheap and advisory — the canaries (`swe_sandbox._canary`) are what
catch forgery by the code under test.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

import attrs

from swe_sandbox._layout import RepoLayout
from swe_sandbox._prepare import PreparedRepo
from swe_sandbox._task import TaskSpec

#: Added-line substrings that only code tampering with the test run needs.
SUSPICIOUS_TOKENS = (
    "_pytest",
    "pytest_runtest",
    "pytest_collect",
    "pytest_report",
    "pytest_sessionfinish",
    "pytest_plugins",
    "hookwrapper",
    "TestReport",
    "CollectReport",
    "sys.modules['pytest']",
    'sys.modules["pytest"]',
    "/proc/self/fd",
    "/dev/fd",
    "swe_sandbox",
    "swe-sandbox",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
)

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote_path(text: str) -> str:
    """Undo git's C-style quoting (``"a/x\\ny"``, octal bytes); plain names pass unchanged."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    out = bytearray()
    body, i = text[1:-1], 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 >= len(body):
            out += char.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            out += char.encode()
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _split_quoted_pair(rest: str) -> tuple[str, ...]:
    """``a/X b/X`` (unquoted, same path twice) or two C-quoted names."""
    if rest.startswith('"'):
        names = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return tuple(unquote_path(n) for n in names[:2])
    half = (len(rest) - 5) // 2
    if half > 0 and rest[2 + half : 5 + half] == " b/" and rest[:2] == "a/":
        return (rest[: 2 + half], rest[3 + half :])
    return tuple(rest.split(" ", 1))


def _strip_prefix(path: str) -> str | None:
    # No cut at a tab here: git C-quotes a name holding one, and the caller already removed a
    # plain diff's tab-separated timestamp (a tab inside a quoted name is part of the name).
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def _header_name(rest: str) -> str:
    """The name of a ``---`` / ``+++`` line: one C-quoted token, else up to a tab."""
    quoted = re.match(r'"(?:[^"\\]|\\.)*"', rest)
    return unquote_path(quoted.group(0)) if quoted else rest.split("\t", 1)[0]


@attrs.frozen
class FileSection:
    """One file's part of a patch: its text, every path it names (old and new) and what it does.

    ``kind`` is ``"add"``, ``"delete"`` or ``"change"`` (renames and mode changes included);
    ``symlink`` is the target of a symlink the section creates, if any.
    """

    text: str
    paths: tuple[str, ...]
    kind: str = "change"
    symlink: str | None = None


def split_patch(patch: str) -> list[FileSection]:
    """Split a ``git diff`` (or plain unified diff) into per-file sections with their paths."""
    lines = patch.split("\n")  # only newlines end patch lines (not form feeds and the like)
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    starts: list[int] = []
    is_git = any(line.startswith("diff --git ") for line in lines)
    for n, line in enumerate(lines):
        git_start = is_git and line.startswith("diff --git ")
        plain_start = (
            not is_git
            and line.startswith("--- ")
            and n + 2 < len(lines)
            and lines[n + 1].startswith("+++ ")
            and lines[n + 2].startswith("@@")
        )
        if git_start or plain_start:
            starts.append(n)
    sections = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        sections.append(
            FileSection("".join(chunk), _paths_of(chunk), _kind_of(chunk), _symlink_of(chunk))
        )
    return sections


def _paths_of(chunk: list[str]) -> tuple[str, ...]:
    found: list[str | None] = []
    for line in chunk:
        body = line.rstrip("\n")
        if body.startswith("diff --git "):
            found += [_strip_prefix(p) for p in _split_quoted_pair(body[len("diff --git ") :])]
        elif body.startswith(("--- ", "+++ ")):
            found.append(_strip_prefix(_header_name(body[4:])))
        elif body.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            found.append(unquote_path(body.split(" ", 2)[2]))
        elif body.startswith(("@@", "GIT binary patch")):
            break  # hunks follow: no more header lines
    return tuple(dict.fromkeys(p for p in found if p))


def _kind_of(chunk: list[str]) -> str:
    for line in chunk:
        if line.startswith("new file mode"):
            return "add"
        if line.startswith("deleted file mode"):
            return "delete"
        if line.startswith(("@@", "GIT binary patch")):
            break
    return "change"


def _symlink_of(chunk: list[str]) -> str | None:
    """The target of a symlink the section creates (mode 120000 on the new side)."""
    header = [line for line in chunk if not line.startswith(("@@", "+", "-", " "))]
    if not any(line.startswith(("new file mode 120000", "new mode 120000")) for line in header):
        return None
    hunk = False
    for line in chunk:
        hunk = hunk or line.startswith("@@")
        if hunk and line.startswith("+") and not line.startswith("+++"):
            return line[1:].rstrip("\n")
    return None


def graded_paths(withheld: Iterable[str], graded_tests: Iterable[str]) -> frozenset[str]:
    """Withheld files plus every file that holds a graded test (the part before ``::``)."""
    return frozenset(withheld) | frozenset(t.split("::", 1)[0] for t in graded_tests if t)


def task_layout(task: TaskSpec, prepared: PreparedRepo) -> RepoLayout:
    """The roles of the task's base tree: its files plus the graded ones it withholds."""
    graded = graded_paths(task.withheld_paths, task.graded_tests)
    restored = {p for p, data in prepared.restore_files.items() if data is not None}
    return RepoLayout.of((*prepared.files, *restored), graded, task.allowed_config_paths)


def section_rules(section: FileSection, layout: RepoLayout) -> list[str]:
    """``"<path>: <rule>"`` for every reason to drop `section` (empty: it is graded)."""
    hits = []
    for path in section.paths:
        removed = section.kind == "delete" or (path == section.paths[0] and len(section.paths) > 1)
        rule = layout.removal_rule(path) if removed else layout.rule_for(path)
        if rule is not None:
            hits.append(f"{path}: {rule}")
    if section.symlink is not None and not _link_stays_inside(
        section.paths[-1], section.symlink, layout
    ):
        hits.append(f"{section.paths[-1]}: symlink-out")
    return hits


def _link_stays_inside(path: str, target: str, layout: RepoLayout) -> bool:
    """A relative target that resolves inside the package root holding the link."""
    if target.startswith("/"):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    root = next((r for r in layout.package_roots if path.startswith(r + "/")), None)
    return root is not None and resolved.startswith(root + "/")


@attrs.frozen(kw_only=True)
class FilteredPatch:
    """The graded patch and what the policy dropped (``"<path>: <rule>"``)."""

    patch: str
    dropped: tuple[str, ...]


def filter_patch(patch: str, layout: RepoLayout) -> FilteredPatch:
    """Drop every file section of `patch` that touches a path outside the package under test.

    A section is dropped whole (a rename out of a graded file drops both sides). Text before the
    first section is discarded. Idempotent: filtering a filtered patch drops nothing more.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for section in split_patch(patch):
        hits = section_rules(section, layout)
        if hits or not section.paths:
            dropped += hits or ["<unnamed section>: malformed"]
        else:
            kept.append(section.text)
    text = "".join(kept)
    if text and not text.endswith("\n"):
        text += "\n"
    return FilteredPatch(patch=text, dropped=tuple(dict.fromkeys(dropped)))


def suspicious_references(patch: str) -> tuple[str, ...]:
    """``"<token> in <path>"`` for each suspicious token on an added line of `patch`."""
    flags: list[str] = []
    for section in split_patch(patch):
        added = [
            line[1:]
            for line in section.text.split("\n")
            if line.startswith("+") and not line.startswith("+++")
        ]
        body = "\n".join(added)
        path = section.paths[-1] if section.paths else "?"
        flags += [f"{token} in {path}" for token in SUSPICIOUS_TOKENS if token in body]
    return tuple(dict.fromkeys(flags))
