"""The patch policy: which parts of an agent's patch are graded (Arctic-SWE §5, evaluation hacking).

The agent's change is a ``git diff`` of its whole working tree against the base commit. Before
it is applied to a pristine tree for grading, every file section that touches something the
grader owns is dropped and named in the verdict:

========================  ============================================================
rule                      paths
========================  ============================================================
``git-internal``          any path with a ``.git`` component
``graded-test``           the task's withheld files and every file holding a graded test
``graded-test-parent``    a directory on the way to a graded file (turned into a symlink/file)
``test-config``           ``conftest.py``, ``pytest.ini``, ``.pytest.ini``, ``tox.ini``,
                          ``setup.cfg``, ``pyproject.toml`` (unless allowed)
``packaging-metadata``    ``setup.py``, ``*.dist-info/``, ``*.egg-info/``, ``*.egg-link``
                          (fake entry points; unless allowed)
``startup-hook``          ``*.pth``, ``sitecustomize.py``, ``usercustomize.py``, ``.local/``
``bytecode``              ``__pycache__/``, ``*.pyc``, ``*.pyo`` (forged compiled tests)
``framework-shadow``      a module or package named ``pytest``, ``_pytest``, ``pluggy``,
                          ``py`` or ``iniconfig`` anywhere in the tree
========================  ============================================================

`TaskSpec.allowed_config_paths` (glob patterns) exempts paths from ``test-config`` and
``packaging-metadata`` for tasks whose fix legitimately edits them.

The detector (`suspicious_references`) flags added lines that name test-framework internals or
the report channel; it is cheap and advisory (see the README's residual-risk section).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

import attrs

_TEST_CONFIG = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}
)
_STARTUP = frozenset({"sitecustomize.py", "usercustomize.py"})
_FRAMEWORK = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig"})
_PACKAGING_SUFFIXES = (".dist-info", ".egg-info")
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
    path = path.split("\t", 1)[0]
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


@attrs.frozen
class FileSection:
    """One file's part of a patch: its text and every path it names (old and new)."""

    text: str
    paths: tuple[str, ...]


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
        sections.append(FileSection("".join(chunk), _paths_of(chunk)))
    return sections


def _paths_of(chunk: list[str]) -> tuple[str, ...]:
    found: list[str | None] = []
    for line in chunk:
        body = line.rstrip("\n")
        if body.startswith("diff --git "):
            found += [_strip_prefix(p) for p in _split_quoted_pair(body[len("diff --git ") :])]
        elif body.startswith(("--- ", "+++ ")):
            found.append(_strip_prefix(unquote_path(body[4:].split("\t", 1)[0])))
        elif body.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            found.append(unquote_path(body.split(" ", 2)[2]))
        elif body.startswith(("@@", "GIT binary patch")):
            break  # hunks follow: no more header lines
    return tuple(dict.fromkeys(p for p in found if p))


def graded_paths(withheld: Iterable[str], graded_tests: Iterable[str]) -> frozenset[str]:
    """Withheld files plus every file that holds a graded test (the part before ``::``)."""
    return frozenset(withheld) | frozenset(t.split("::", 1)[0] for t in graded_tests if t)


def rule_for(path: str, graded: frozenset[str], allowed: tuple[str, ...] = ()) -> str | None:
    """The policy rule that drops changes to `path`, or ``None`` when they are graded."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    if ".git" in parts:
        return "git-internal"
    if path in graded:
        return "graded-test"
    if any(g.startswith(path.rstrip("/") + "/") for g in graded):
        return "graded-test-parent"
    if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
        return "bytecode"
    if name in _STARTUP or name.endswith(".pth") or parts[:1] == (".local",):
        return "startup-hook"
    if any(p.removesuffix(".py") in _FRAMEWORK for p in parts):
        return "framework-shadow"
    exempt = any(fnmatch.fnmatchcase(path, pattern) for pattern in allowed)
    if not exempt and name in _TEST_CONFIG:
        return "test-config"
    if not exempt and (
        any(p.endswith(_PACKAGING_SUFFIXES) for p in parts)
        or name.endswith(".egg-link")
        or name == "setup.py"
    ):
        return "packaging-metadata"
    return None


@attrs.frozen(kw_only=True)
class FilteredPatch:
    """The graded patch and what the policy dropped (``"<path>: <rule>"``)."""

    patch: str
    dropped: tuple[str, ...]


def filter_patch(
    patch: str, graded: frozenset[str], allowed: tuple[str, ...] = ()
) -> FilteredPatch:
    """Drop every file section of `patch` that touches a path a policy rule owns.

    A section is dropped whole (a rename out of a graded file drops both sides). Text before the
    first section is discarded. Idempotent: filtering a filtered patch drops nothing more.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for section in split_patch(patch):
        rules = [(p, rule_for(p, graded, allowed)) for p in section.paths]
        hits = [f"{p}: {r}" for p, r in rules if r is not None]
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
