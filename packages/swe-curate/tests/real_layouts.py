"""A corpus of real open-source projects, chosen for their repository layouts (Arctic-SWE §5).

The grader must not reject a correct fix, nor accept a wrong one, because of where a project
keeps its code, tests and pytest configuration. Each entry names a published sdist (fetched at
test time, sha256-pinned, never vendored: see ``real_layouts_tasks``), the layout traits it
brings, the small test files graded, the injected bug (a swe-curate mutant, pinned so no search
runs) and a *real* fix that differs from the gold patch by touching an unusual but legitimate
place: a new module, a data file, a mode bit, a rename, a deletion, a test fixture.

The fixes themselves live in ``real_layouts_fixes``.

Not covered yet: a root conftest.py together with a conftest.py in a non-package ``tests/``
(the sdists found with it, Babel among them, need third-party test dependencies).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import real_layouts_fixes as fixes

#: Seed of the mutant order (``swe_curate._inject.mutants``); pins are looked up in it.
SEED = 0


@dataclass(frozen=True)
class MutantPin:
    """One mutant of ``mutants({path: text}, Random(SEED))``: the first with these fields."""

    path: str
    qualname: str
    mutator: str
    description: str


@dataclass(frozen=True)
class Project:
    """A published sdist, the layout traits it covers and the task built on it."""

    name: str
    version: str
    filename: str
    sha256: str
    layouts: tuple[str, ...]
    graded_files: tuple[str, ...]
    pin: MutantPin
    fix_kind: str
    fix: Callable[[Path], None]
    added_test: str = ""
    """Text appended to ``graded_files[0]`` by the task's test patch (empty: none)."""
    allowed_config_paths: tuple[str, ...] = ()
    pytest_args: str = ""
    """Extra options of the task's test command (say, the project's own plugin)."""
    slow: bool = False
    """Graded only in the nightly run (the CI budget covers the others)."""

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"


CORPUS: tuple[Project, ...] = (
    Project(
        "parso", "0.8.7", "parso-0.8.7.tar.gz",
        "eaaac4c9fdd5e9e8852dc778d2d7405897ec510f2a298071453e5e3a07914bb1",
        ("root-conftest", "top-level-test-package", "pytest.ini-usefixtures-doctest-modules",
         "filterwarnings-error", "testpaths"),
        ("test/test_utils.py",),
        MutantPin("parso/utils.py", "_parse_version", "invert_condition",
                  "inverted condition at line 164"),
        "data file read via __file__", fixes.parso_data_file,
    ),
    Project(
        "mako", "1.1.6", "Mako-1.1.6.tar.gz",
        "4e9e345a41924a954251b95b4b28e14a301145b544901332e658907a7464b6b2",
        ("top-level-test-package", "setup.cfg-python_files", "addopts-W-error"),
        ("test/test_filters.py",),
        MutantPin("mako/filters.py", "url_escape", "drop_statement",
                  "dropped statement 1 of a changed block"),
        "new module in the package", fixes.mako_new_module,
    ),
    Project(
        "pyfakefs", "6.3.2", "pyfakefs-6.3.2.tar.gz",
        "7c67bdf4c11b42903c7cb6c74fa63432485afc697ad6f89ecce6fb0a4e4f24ed",
        ("pytest-plugin-in-package", "tests-inside-package", "conftest-imports-plugin",
         "nested-conftest", "*_test.py-files"),
        ("pyfakefs/pytest_tests/pytest_plugin_test.py",
         "pyfakefs/pytest_tests/pytest_fixture_test.py"),
        MutantPin("pyfakefs/pytest_plugin.py", "fs", "drop_statement",
                  "dropped statement 2 of a changed block"),
        "rewrite of the in-package pytest plugin", fixes.pyfakefs_plugin_rewrite,
    ),
    Project(
        "jaraco-path", "3.7.2", "jaraco_path-3.7.2.tar.gz",
        "1263c4bb481002e83a96e9253915b33241ac3e1ed6219a2793d3121f65159107",
        ("namespace-package", "non-package-tests", "pytest.ini-import-mode-importlib",
         "doctest-modules"),
        ("tests/test_path.py",),
        MutantPin("jaraco/path.py", "is_hidden", "drop_statement",
                  "dropped statement 1 of a changed block"),
        "mode change", fixes.jaraco_mode_change,
    ),
    Project(
        "validators", "0.34.0", "validators-0.34.0.tar.gz",
        "647fe407b45af9a74d245b943b18e6a816acf4926974278f6dd617778e1e781f",
        ("src-layout", "pyproject-pythonpath", "non-package-tests"),
        ("tests/test_length.py",),
        MutantPin("src/validators/length.py", "length", "invert_condition",
                  "inverted condition at line 42"),
        "new tests/conftest.py fixture (allowed)", fixes.validators_conftest,
        added_test=fixes.VALIDATORS_NEW_TEST,
        allowed_config_paths=("tests/conftest.py",),
    ),
    Project(
        "configobj", "5.0.9", "configobj-5.0.9.tar.gz",
        "03c881bbf23aa07bccf1b837005975993c4ab4427ba57f959afdd9d1a2386848",
        ("src-layout", "tests-under-src", "setup.cfg-python_files-with-path", "tests-conftest",
         "two-top-level-packages"),
        ("src/tests/test_validate_errors.py",),
        MutantPin("src/configobj/validate.py", "Validator._check_value", "drop_statement",
                  "dropped statement 0 of a changed block"),
        "new subpackage", fixes.configobj_subpackage,
    ),
    Project(
        "toolz", "1.2.0", "toolz-1.2.0.tar.gz",
        "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        ("tests-inside-package", "strict-markers", "strict-config", "testpaths",
         "filterwarnings-error", "xfail_strict"),
        ("toolz/tests/test_dicttoolz.py",),
        MutantPin("toolz/dicttoolz.py", "merge", "weaken_condition",
                  "removed the guard at line 33"),
        "rename within the package", fixes.toolz_rename,
    ),
    Project(
        "boltons", "26.2.0", "boltons-26.2.0.tar.gz",
        "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
        ("tests-package-with-conftest", "pyproject-doctest-flags"),
        ("tests/test_mathutils.py",),
        MutantPin("boltons/mathutils.py", "Bits.from_bytes", "drop_statement",
                  "dropped statement 0 of a changed block"),
        "module deleted", fixes.boltons_delete,
    ),
    Project(
        "idna", "3.21", "idna-3.21.tar.gz",
        "13c8b14853c5c336eaab526f3390817e9c8fcd8fa175abdd1a7480a5c94f99cb",
        ("flat-package", "tests-package"),
        ("tests/test_intranges.py",),
        MutantPin("idna/intranges.py", "_encode_range", "drop_statement",
                  "dropped statement 0 of a changed block"),
        "data file via importlib.resources", fixes.idna_resources,
        slow=True,
    ),
    Project(
        "markdown", "3.11.3", "markdown-3.11.3.tar.gz",
        "81eb91631dc97ad1efbc76019ef0f80fe90ca49ddf81546752d79989c3bfff3e",
        ("nested-test-packages",),
        ("tests/test_meta.py", "tests/test_syntax/inline/test_entities.py"),
        MutantPin("markdown/util.py", "Registry.register", "invert_condition",
                  "inverted condition at line 381"),
        "equivalent rewrite", fixes.markdown_rewrite,
        slow=True,
    ),
    Project(
        "faker", "40.63.0", "faker-40.63.0.tar.gz",
        "6c5a09bfb17b3a5fa29f349a2ea86ec5af959df95ec71adc831268adfccc9d62",
        ("pytest-plugin-in-package", "path-component-named-pytest", "tests/pytest-folder",
         "conftests-at-several-levels", "setup.cfg-python_files"),
        ("tests/pytest/test_manual_injection.py", "tests/pytest/test_autouse_faker_seed.py",
         "tests/pytest/test_autouse_faker_locale.py"),
        MutantPin("faker/contrib/pytest/plugin.py", "faker", "drop_statement",
                  "dropped statement 2 of a changed block"),
        "new module in the package's contrib/pytest/ folder", fixes.faker_plugin_module,
        # The plugin is loaded by module name: the grader does not auto-load entry points
        # (here, the in-tree Faker.egg-info's pytest11), so the task names it.
        pytest_args="-p no:faker -p faker.contrib.pytest.plugin",
    ),
)  # fmt: skip

BY_NAME = {project.name: project for project in CORPUS}
