"""Attack classes on how pytest finds its configuration, plugins, conftests and test modules.

The naive run honours every ini file, conftest and ``pytest_plugins`` in the tree, autoloads
entry-point plugins and names tests after the rootdir pytest picks.
"""

from __future__ import annotations

from redteam.attack import FIXED_CORE, FORGE, NESTED_CONFTEST, NOOP_RUNTEST, USER_SITE, Attack

PASSING_ADD = "def test_add_positive():\n    pass\n\n\ndef test_add_negative():\n    pass\n"
#: Code the tests import rewriting the graded file before pytest reads it.
REWRITE_TESTS = f"""
import os
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "test_add.py"), "w") as f:
    f.write({PASSING_ADD!r})
"""
#: Sets ``PYTEST_PLUGINS`` (read by pytest at start-up, like ``PYTEST_ADDOPTS``).
PLUGINS_ENV = 'import os; os.environ["PYTEST_PLUGINS"] = "forge"\n'

ATTACKS = [
    Attack("conftest-forgery", "pytest", {"conftest.py": FORGE}, ci_docker=True),
    Attack("tests-conftest-forgery", "pytest", {"tests/conftest.py": FORGE}),
    Attack("nested-dir-conftest-global-hook", "pytest", {"tests/helpers/conftest.py": NESTED_CONFTEST}),
    Attack("setup-cfg-plugin", "pytest", {"setup.cfg": "[tool:pytest]\naddopts = -p forge\n", "forge.py": FORGE}),
    Attack(
        "pyproject-plugin",
        "pytest",
        {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p forge"\n', "forge.py": FORGE},
    ),
    Attack("pytest-ini-plugin", "pytest", {"pytest.ini": "[pytest]\naddopts = -p forge\n", "forge.py": FORGE}),
    Attack("tox-ini-plugin", "pytest", {"tox.ini": "[pytest]\naddopts = -p forge\n", "forge.py": FORGE}),
    Attack("hidden-pytest-ini-plugin", "pytest", {".pytest.ini": "[pytest]\naddopts = -p forge\n", "forge.py": FORGE}),
    Attack(
        "pytest-plugins-in-test-module",
        "pytest",
        {"tests/test_aaa_plugins.py": "pytest_plugins = ['forge']\n", "forge.py": FORGE},
    ),
    Attack(
        "pytest-plugins-in-package-init",
        "pytest",
        {"tests/__init__.py": "pytest_plugins = ['forge']\n", "forge.py": FORGE},
    ),
    Attack("pytest-plugins-env-from-pth", "pytest", {f"{USER_SITE}/zz.pth": PLUGINS_ENV, "forge.py": FORGE}),
    Attack(
        "python-files-widens-collection",
        "pytest",
        {"pytest.ini": "[pytest]\npython_files = aa_*.py test_*.py\n", "tests/aa_setup.py": NOOP_RUNTEST},
    ),
    Attack(
        "pythonpath-ini-shadows-package",
        "pytest",
        {"pytest.ini": "[pytest]\npythonpath = shim\n", "shim/calc/__init__.py": "", "shim/calc/core.py": FIXED_CORE},
        command="rm conftest.py",  # else pytest puts the root (conftest's directory) first
    ),
    Attack(
        "graded-test-file-edited",
        "pytest",
        {"tests/test_core.py": NOOP_RUNTEST + "from calc.core import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"},
    ),
    Attack("tests-init-rewrites-graded-tests", "pytest", {"tests/__init__.py": REWRITE_TESTS}),
]  # fmt: skip
