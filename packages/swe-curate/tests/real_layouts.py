"""A corpus of real open-source projects, chosen for their repository layouts (Arctic-SWE §5).

The grader must not reject a correct fix, nor accept a wrong one, because of where a project
keeps its code, tests and pytest configuration. Each entry names a published sdist (fetched at
test time, sha256-pinned, never vendored: see ``real_layouts_tasks``), the layout traits it
brings, the small test files graded, the injected bug (a swe-curate mutant, pinned so no search
runs) and a *real* fix that differs from the gold patch by touching an unusual but legitimate
place: a new module, a data file, a mode bit, a rename, a deletion, a test fixture.

Every fix is an edit of a tree that already holds the original (gold) source; it fixes the bug
in its own way, so a grader that drops or breaks the unusual part makes the fix fail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def replace_once(tree: Path, path: str, old: str, new: str) -> None:
    """Replace the single occurrence of ``old`` in ``tree/path`` (the anchor must not drift)."""
    file = tree / path
    text = file.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: the fix's anchor occurs {text.count(old)} times"
    file.write_text(text.replace(old, new), encoding="utf-8")


def _parso_data_file(tree: Path) -> None:
    """The accepted version syntax moves to a data file beside the module, read via __file__."""
    (tree / "parso/version_pattern.txt").write_text(
        r"(\d+)(?:\.(\d{1,2})(?:\.\d+)?)?((a|b|rc)\d)?$"
    )
    replace_once(
        tree,
        "parso/utils.py",
        "    match = re.match(r'(\\d+)(?:\\.(\\d{1,2})(?:\\.\\d+)?)?((a|b|rc)\\d)?$', version)\n",
        "    pattern_file = os.path.join(os.path.dirname(__file__), 'version_pattern.txt')\n"
        "    with open(pattern_file, encoding='ascii') as f:\n"
        "        match = re.match(f.read().strip(), version)\n",
    )
    replace_once(tree, "parso/utils.py", "import re\n", "import os\nimport re\n")


def _mako_new_module(tree: Path) -> None:
    """url_escape delegates to a helper in a new module of the package."""
    (tree / "mako/_urlquote.py").write_text(
        "from urllib.parse import quote_plus\n\n\n"
        "def quote_utf8(string):\n"
        '    return quote_plus(string.encode("utf8"))\n'
    )
    replace_once(
        tree,
        "mako/filters.py",
        '    # convert into a list of octets\n    string = string.encode("utf8")\n'
        "    return quote_plus(string)\n",
        "    from mako._urlquote import quote_utf8\n\n    return quote_utf8(string)\n",
    )


def _pyfakefs_plugin_rewrite(tree: Path) -> None:
    """The ``fs`` fixture of the in-package pytest plugin, written another way."""
    replace_once(
        tree,
        "pyfakefs/pytest_plugin.py",
        'def fs(request):\n    """Fake filesystem."""\n'
        '    if hasattr(request, "param"):\n'
        "        # pass optional parameters via @pytest.mark.parametrize\n"
        "        patcher = Patcher(*request.param)\n"
        "    else:\n"
        "        patcher = Patcher()\n"
        "    patcher.setUp()\n"
        "    yield patcher.fs\n"
        "    patcher.tearDown()\n",
        'def fs(request):\n    """Fake filesystem."""\n'
        '    patcher = Patcher(*getattr(request, "param", ()))\n'
        "    patcher.setUp()\n"
        "    try:\n"
        "        yield patcher.fs\n"
        "    finally:\n"
        "        patcher.tearDown()\n",
    )


def _jaraco_mode_change(tree: Path) -> None:
    """The gold fix plus an executable bit on the namespace package's module."""
    (tree / "jaraco/path.py").chmod(0o755)


CONFTEST_FIXTURE = (
    'import pytest\n\n\n@pytest.fixture\ndef eight_char_password():\n    return "password"\n'
)


def _validators_conftest(tree: Path) -> None:
    """The gold fix plus the fixture the task's new test uses, in a new tests/conftest.py."""
    (tree / "tests/conftest.py").write_text(CONFTEST_FIXTURE)


#: Appended to the graded test file: a new test that needs the fixture the fix adds.
VALIDATORS_NEW_TEST = (
    "\n\n"
    "def test_fixture_password_has_length_eight(eight_char_password: str):\n"
    "    assert length(eight_char_password, min_val=8, max_val=8)\n"
)


def _configobj_subpackage(tree: Path) -> None:
    """The check lookup moves into a new subpackage of the src/ package."""
    sub = tree / "src/configobj/_checks"
    sub.mkdir()
    (sub / "__init__.py").write_text(
        "def lookup(functions, name, unknown):\n"
        "    if name not in functions:\n"
        "        raise unknown(name)\n"
        "    return functions[name]\n"
    )
    replace_once(
        tree,
        "src/configobj/validate.py",
        "        try:\n            fun = self.functions[fun_name]\n"
        "        except KeyError:\n            raise VdtUnknownCheckError(fun_name)\n"
        "        else:\n            return fun(value, *fun_args, **fun_kwargs)\n",
        "        from configobj._checks import lookup\n\n"
        "        fun = lookup(self.functions, fun_name, VdtUnknownCheckError)\n"
        "        return fun(value, *fun_args, **fun_kwargs)\n",
    )


def _toolz_rename(tree: Path) -> None:
    """The gold fix plus a private module renamed (every ``import toolz`` goes through it)."""
    (tree / "toolz/_signatures.py").rename(tree / "toolz/_sigs.py")
    replace_once(
        tree,
        "toolz/functoolz.py",
        "from . import _signatures as _sigs\n",
        "from . import _sigs\n",
    )


def _boltons_delete(tree: Path) -> None:
    """The gold fix plus a module of the package deleted (nothing graded imports it)."""
    (tree / "boltons/deprutils.py").unlink()


def _idna_resources(tree: Path) -> None:
    """The range width becomes a package data file read with importlib.resources."""
    (tree / "idna/range_bits.txt").write_text("32\n")
    replace_once(
        tree,
        "idna/intranges.py",
        "    return (start << 32) | end\n",
        "    import importlib.resources\n\n"
        '    bits = int(importlib.resources.files("idna").joinpath("range_bits.txt").read_text())\n'
        "    return (start << bits) | end\n",
    )


def _faker_plugin_module(tree: Path) -> None:
    """Seeding moves to a new module beside the plugin, in the ``contrib/pytest/`` folder."""
    (tree / "faker/contrib/pytest/_seeding.py").write_text(
        "def reseed(fake, seed):\n    fake.seed_instance(seed=seed)\n    return fake\n"
    )
    replace_once(
        tree,
        "faker/contrib/pytest/plugin.py",
        "    fake.seed_instance(seed=seed)\n",
        "    from faker.contrib.pytest._seeding import reseed\n\n    reseed(fake, seed)\n",
    )


def _markdown_rewrite(tree: Path) -> None:
    """Registry.register, written another way (a non-strict deregister)."""
    replace_once(
        tree,
        "markdown/util.py",
        "        if name in self:\n            # Remove existing item of same name first\n"
        "            self.deregister(name)\n",
        "        self.deregister(name, strict=False)\n",
    )


CORPUS: tuple[Project, ...] = (
    Project(
        "parso", "0.8.7", "parso-0.8.7.tar.gz",
        "eaaac4c9fdd5e9e8852dc778d2d7405897ec510f2a298071453e5e3a07914bb1",
        ("root-conftest", "top-level-test-package", "pytest.ini-usefixtures-doctest-modules",
         "filterwarnings-error", "testpaths"),
        ("test/test_utils.py",),
        MutantPin("parso/utils.py", "_parse_version", "invert_condition",
                  "inverted condition at line 164"),
        "data file read via __file__", _parso_data_file,
    ),
    Project(
        "mako", "1.1.6", "Mako-1.1.6.tar.gz",
        "4e9e345a41924a954251b95b4b28e14a301145b544901332e658907a7464b6b2",
        ("top-level-test-package", "setup.cfg-python_files", "addopts-W-error"),
        ("test/test_filters.py",),
        MutantPin("mako/filters.py", "url_escape", "drop_statement",
                  "dropped statement 1 of a changed block"),
        "new module in the package", _mako_new_module,
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
        "rewrite of the in-package pytest plugin", _pyfakefs_plugin_rewrite,
    ),
    Project(
        "jaraco-path", "3.7.2", "jaraco_path-3.7.2.tar.gz",
        "1263c4bb481002e83a96e9253915b33241ac3e1ed6219a2793d3121f65159107",
        ("namespace-package", "non-package-tests", "pytest.ini-import-mode-importlib",
         "doctest-modules"),
        ("tests/test_path.py",),
        MutantPin("jaraco/path.py", "is_hidden", "drop_statement",
                  "dropped statement 1 of a changed block"),
        "mode change", _jaraco_mode_change,
    ),
    Project(
        "validators", "0.34.0", "validators-0.34.0.tar.gz",
        "647fe407b45af9a74d245b943b18e6a816acf4926974278f6dd617778e1e781f",
        ("src-layout", "pyproject-pythonpath", "non-package-tests"),
        ("tests/test_length.py",),
        MutantPin("src/validators/length.py", "length", "invert_condition",
                  "inverted condition at line 42"),
        "new tests/conftest.py fixture (allowed)", _validators_conftest,
        added_test=VALIDATORS_NEW_TEST,
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
        "new subpackage", _configobj_subpackage,
        slow=True,
    ),
    Project(
        "toolz", "1.2.0", "toolz-1.2.0.tar.gz",
        "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        ("tests-inside-package", "strict-markers", "strict-config", "testpaths",
         "filterwarnings-error", "xfail_strict"),
        ("toolz/tests/test_dicttoolz.py",),
        MutantPin("toolz/dicttoolz.py", "merge", "weaken_condition",
                  "removed the guard at line 33"),
        "rename within the package", _toolz_rename,
    ),
    Project(
        "boltons", "26.2.0", "boltons-26.2.0.tar.gz",
        "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
        ("tests-package-with-conftest", "pyproject-doctest-flags"),
        ("tests/test_mathutils.py",),
        MutantPin("boltons/mathutils.py", "Bits.from_bytes", "drop_statement",
                  "dropped statement 0 of a changed block"),
        "module deleted", _boltons_delete,
    ),
    Project(
        "idna", "3.21", "idna-3.21.tar.gz",
        "13c8b14853c5c336eaab526f3390817e9c8fcd8fa175abdd1a7480a5c94f99cb",
        ("flat-package", "tests-package"),
        ("tests/test_intranges.py",),
        MutantPin("idna/intranges.py", "_encode_range", "drop_statement",
                  "dropped statement 0 of a changed block"),
        "data file via importlib.resources", _idna_resources,
        slow=True,
    ),
    Project(
        "markdown", "3.11.3", "markdown-3.11.3.tar.gz",
        "81eb91631dc97ad1efbc76019ef0f80fe90ca49ddf81546752d79989c3bfff3e",
        ("nested-test-packages",),
        ("tests/test_meta.py", "tests/test_syntax/inline/test_entities.py"),
        MutantPin("markdown/util.py", "Registry.register", "invert_condition",
                  "inverted condition at line 381"),
        "equivalent rewrite", _markdown_rewrite,
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
        "new module in the package's contrib/pytest/ folder", _faker_plugin_module,
        # The plugin is loaded by module name: the grader does not auto-load entry points
        # (here, the in-tree Faker.egg-info's pytest11), so the task names it.
        pytest_args="-p no:faker -p faker.contrib.pytest.plugin",
    ),
)  # fmt: skip

BY_NAME = {project.name: project for project in CORPUS}
