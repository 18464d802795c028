"""What an agent's patch may change: the package under test, derived from the base tree by role.

A denylist of file names loses to Python's import system (a new ``tests/__init__.py``, a root
``__init__.py``, a module named like a graded file or a standard-library module: each is loaded
by the grading machinery itself, before or instead of what the grader meant). So grading keeps
an **allowlist by role** (Arctic-SWE §5, evaluation-hacking prevention): from the pristine base
tree it derives the package under test, and only changes inside it are graded.

* **import roots**: the repository root, and ``src/`` when it holds code.
* **package roots**: a directory directly under an import root whose name is importable, that
  holds Python files at base (a regular or a namespace package) and is neither a test directory
  nor a documentation / example one. Inside a package root the agent may change, add, delete,
  rename or ``chmod`` anything — new modules, data files the package reads, subpackages.
* **top-level modules**: ``*.py`` directly in an import root at base (not ``setup.py``, not test
  files): they may be modified or deleted, never added.
* **path entries**: directories that are on ``sys.path`` during the graded run — the import roots
  and the directory pytest inserts for each graded test module and each base ``conftest.py`` (the
  first ancestor without ``__init__.py``). No new name may appear directly in one of them.
* **import shape**: an ``__init__.py`` on the way to a graded file, a base conftest or in a path
  entry may be edited but not added or removed (that would move pytest's inserted directory).

Everything else — test files and directories, configuration, packaging metadata, files outside
the package — is dropped from the graded patch and named in the verdict with its rule.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

import attrs

#: Directories whose content is tests or test support wherever they appear.
TEST_DIR_NAMES = frozenset({"test", "tests"})
#: Top-level directories that hold no package code even when they hold Python files.
NON_PACKAGE_DIRS = frozenset(
    {"testing", "docs", "doc", "examples", "example", "benchmarks", "bench", "build", "dist"}
)
TEST_CONFIG_NAMES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}
)
STARTUP_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
_TEST_MODULE = re.compile(r"^(test_.*|.*_test)\.py$")
_PACKAGING_SUFFIXES = (".dist-info", ".egg-info")


def is_test_path(path: str) -> bool:
    """A test module, a conftest, or anything under a ``test`` / ``tests`` directory."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    return (
        bool(_TEST_MODULE.match(name))
        or name == "conftest.py"
        or any(p in TEST_DIR_NAMES for p in parts[:-1])
        or parts[:1] == ("testing",)
    )


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def ancestors(path: str) -> list[str]:
    """Directories from `path`'s parent up to the root (``""``)."""
    found = []
    while path:
        path = _parent(path)
        found.append(path)
    return found


@attrs.frozen(kw_only=True)
class RepoLayout:
    """The roles of a base tree (see the module docstring).

    Attributes:
        files: every file and symlink of the base tree, graded files included.
        graded: withheld files and files holding graded tests (never taken from the patch).
        allowed: globs of paths the task lets the patch change beyond the package
            (`TaskSpec.allowed_config_paths`, e.g. ``tests/conftest.py`` for a new fixture).
        import_roots / package_roots / top_modules / path_entries / shape_dirs: derived.
    """

    files: frozenset[str]
    graded: frozenset[str]
    allowed: tuple[str, ...]
    import_roots: frozenset[str]
    package_roots: frozenset[str]
    top_modules: frozenset[str]
    path_entries: frozenset[str]
    shape_dirs: frozenset[str]

    @classmethod
    def of(
        cls, files: Iterable[str], graded: Iterable[str], allowed: tuple[str, ...] = ()
    ) -> RepoLayout:
        """Derive the roles from the base file list and the task's graded paths."""
        graded_set = frozenset(graded)
        all_files = frozenset(files) | graded_set
        python = [f for f in all_files if f.endswith(".py")]
        roots = {""} | ({"src"} if any(f.startswith("src/") for f in python) else set())
        packages = {
            root
            for f in python
            for root in _top_dirs(f, roots)
            if _is_package_root(root.rsplit("/", 1)[-1])
        }
        modules = {
            f
            for f in all_files
            if _parent(f) in roots
            and f.endswith(".py")
            and f.rsplit("/", 1)[-1] != "setup.py"
            and not is_test_path(f)
        }
        anchors = graded_set | {f for f in all_files if f.rsplit("/", 1)[-1] == "conftest.py"}
        entries = set(roots) | {_basedir(f, all_files) for f in anchors if f.endswith(".py")}
        shape = set(entries) | {d for f in anchors for d in ancestors(f)}
        return cls(
            files=all_files,
            graded=graded_set,
            allowed=allowed,
            import_roots=frozenset(roots),
            package_roots=frozenset(packages),
            top_modules=frozenset(modules),
            path_entries=frozenset(entries),
            shape_dirs=frozenset(shape),
        )

    def in_package(self, path: str) -> bool:
        return any(path.startswith(root + "/") for root in self.package_roots)

    def rule_for(self, path: str) -> str | None:
        """The rule that drops changes to `path`, or ``None`` when the change is graded."""
        parts = PurePosixPath(path).parts
        name = parts[-1] if parts else path
        if ".git" in parts:
            return "git-internal"
        if path in self.graded:
            return "graded-test"
        if any(g.startswith(path.rstrip("/") + "/") for g in self.graded):
            return "graded-test-parent"
        if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
            return "bytecode"
        if name in STARTUP_NAMES or name.endswith(".pth") or parts[:1] == (".local",):
            return "startup-hook"
        if name == "__init__.py" and _parent(path) in self.shape_dirs and path not in self.files:
            return "import-shape"  # also a removal: the rule is asked for both sides
        exempt = any(fnmatch.fnmatchcase(path, pattern) for pattern in self.allowed)
        if exempt:
            return None
        return self._role_rule(path, name, parts)

    def _role_rule(self, path: str, name: str, parts: tuple[str, ...]) -> str | None:
        if name in TEST_CONFIG_NAMES:
            return "test-config"
        if any(p.endswith(_PACKAGING_SUFFIXES) for p in parts) or name.endswith(".egg-link"):
            return "packaging-metadata"
        if name == "setup.py":
            return "packaging-metadata"
        if is_test_path(path):
            return "test-file"
        if path not in self.files and _parent(path) in self.path_entries:
            return "path-entry"
        if path in self.top_modules or self.in_package(path):
            return None
        return "outside-package"

    def removal_rule(self, path: str) -> str | None:
        """The rule for deleting `path` (an ``__init__.py`` that shapes imports may not go)."""
        if PurePosixPath(path).name == "__init__.py" and _parent(path) in self.shape_dirs:
            return "import-shape"
        return self.rule_for(path)


def _top_dirs(path: str, roots: set[str]) -> list[str]:
    """The directories directly under an import root that hold `path` (one or, under
    ``src/``, two: ``src/pkg`` and ``src`` itself, which `_is_package_root` refuses)."""
    parts = path.split("/")
    found = [parts[0]] if len(parts) > 1 else []
    if "src" in roots and parts[0] == "src" and len(parts) > 2:
        found.append(f"src/{parts[1]}")
    return found


def _is_package_root(name: str) -> bool:
    return name.isidentifier() and name not in TEST_DIR_NAMES | NON_PACKAGE_DIRS | {"src"}


def _basedir(path: str, files: frozenset[str]) -> str:
    """The directory pytest's prepend/append modes insert for a module: the first ancestor
    that is not a package (has no ``__init__.py``)."""
    directory = _parent(path)
    while directory and f"{directory}/__init__.py" in files:
        directory = _parent(directory)
    return directory
