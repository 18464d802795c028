"""`_layout`: the package under test derived from real repository shapes, and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_sandbox._layout import RepoLayout, is_test_path

SRC_LAYOUT = ("src/calc/__init__.py", "src/calc/core.py", "tests/test_core.py", "pyproject.toml")
FLAT_MODULE = ("six.py", "test_six.py", "setup.py", "tox.ini")
TEST_PACKAGE = ("urllib3/__init__.py", "urllib3/util.py", "test/__init__.py", "test/test_util.py")
NAMESPACE = ("jaraco/functools/__init__.py", "tests/test_functools.py")
TESTS_IN_NAMESPACE_DIR = ("ns/mod.py", "ns/test_mod.py")
TESTS_IN_PACKAGE = ("calc/__init__.py", "calc/tests/__init__.py", "calc/tests/test_x.py")
PLUGIN = ("faker/__init__.py", "faker/contrib/pytest/plugin.py", "tests/test_faker.py")


@pytest.mark.parametrize(
    ("files", "graded", "path", "rule"),
    [
        (SRC_LAYOUT, "tests/test_core.py", "src/calc/new_helper.py", None),
        (SRC_LAYOUT, "tests/test_core.py", "src/calc/data/words.txt", None),
        (SRC_LAYOUT, "tests/test_core.py", "src/textwrap.py", "path-entry"),  # src is on sys.path
        (SRC_LAYOUT, "tests/test_core.py", "tests/conftest.py", "test-config"),
        (FLAT_MODULE, "test_six.py", "six.py", None),  # an existing top-level module is code
        (FLAT_MODULE, "test_six.py", "six_helpers.py", "path-entry"),
        (FLAT_MODULE, "test_six.py", "tox.ini", "test-config"),
        (TEST_PACKAGE, "test/test_util.py", "urllib3/util.py", None),
        (TEST_PACKAGE, "test/test_util.py", "test/conftest.py", "test-config"),
        (TEST_PACKAGE, "test/test_util.py", "test/helpers.py", "test-file"),
        (NAMESPACE, "tests/test_functools.py", "jaraco/functools/more.py", None),
        (NAMESPACE, "tests/test_functools.py", "jaraco/text/__init__.py", None),
        (TESTS_IN_NAMESPACE_DIR, "ns/test_mod.py", "ns/mod.py", None),
        (TESTS_IN_NAMESPACE_DIR, "ns/test_mod.py", "ns/json.py", "path-entry"),  # inserted dir
        (TESTS_IN_PACKAGE, "calc/tests/test_x.py", "calc/__init__.py", None),
        (TESTS_IN_PACKAGE, "calc/tests/test_x.py", "calc/tests/helpers.py", "test-file"),
        (PLUGIN, "tests/test_faker.py", "faker/contrib/pytest/plugin.py", None),
    ],
)
def test_roles_of_real_layouts(
    files: tuple[str, ...], graded: str, path: str, rule: str | None
) -> None:
    assert RepoLayout.of(files, {graded}).rule_for(path) == rule


def test_removing_an_init_that_moves_the_inserted_directory_is_dropped() -> None:
    layout = RepoLayout.of(TESTS_IN_PACKAGE, {"calc/tests/test_x.py"})
    assert layout.removal_rule("calc/__init__.py") == "import-shape"
    assert layout.rule_for("calc/__init__.py") is None  # editing it is a fix like any other
    other = RepoLayout.of((*NAMESPACE, "jaraco/__init__.py"), {"tests/test_functools.py"})
    assert other.removal_rule("jaraco/__init__.py") is None  # no graded module below it


def test_derived_roles() -> None:
    layout = RepoLayout.of(SRC_LAYOUT, {"tests/test_core.py"})
    assert layout.import_roots == {"", "src"}
    assert layout.package_roots == {"src/calc"}
    assert layout.path_entries == {"", "src", "tests"}
    flat = RepoLayout.of(FLAT_MODULE, {"test_six.py"})
    assert flat.top_modules == {"six.py"}
    assert flat.package_roots == frozenset()


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/helpers.py", True),
        ("pkg/test_x.py", True),
        ("pkg/x_test.py", True),
        ("a/conftest.py", True),
        ("testing/util.py", True),
        ("pkg/testing/util.py", False),  # a library's own testing helpers are its code
        ("pkg/contest.py", False),
    ],
)
def test_test_paths(path: str, is_test: bool) -> None:
    assert is_test_path(path) is is_test


_names = st.sampled_from(
    [
        "calc",
        "src",
        "tests",
        "test",
        "ns",
        "__init__.py",
        "core.py",
        "test_a.py",
        "x.txt",
        "conftest.py",
    ]
)
_paths = st.lists(_names, min_size=1, max_size=4).map("/".join)


@given(st.lists(_paths, min_size=1, max_size=12), st.data())
def test_what_is_graded_never_reaches_sys_path_or_the_tests(
    files: list[str], data: st.DataObject
) -> None:
    """For any tree: graded files are never taken from the patch; a kept path is inside a
    package root or an existing top-level module; no new name lands in a ``sys.path`` entry."""
    graded = set(data.draw(st.lists(st.sampled_from(files), max_size=3)))
    layout = RepoLayout.of(files, graded)
    candidate = data.draw(_paths)
    rule = layout.rule_for(candidate)
    if candidate in graded:
        assert rule == "graded-test"
    if rule is None:
        assert layout.in_package(candidate) or candidate in layout.top_modules
        assert not is_test_path(candidate)
        if candidate not in layout.files:
            assert candidate.rsplit("/", 1)[0] not in layout.path_entries or "/" not in candidate
            assert "/" in candidate  # nothing new at the root
