"""The corpus's real fixes: each edits a tree that already holds the gold source (Arctic-SWE §5).

A fix repairs the injected bug in its own way *and* touches an unusual but legitimate place, so
a grader that drops or breaks that part (a new module, a data file, a mode bit, a rename, a
deletion, a test fixture) makes the fix fail where it should score 1.
"""

from __future__ import annotations

from pathlib import Path


def replace_once(tree: Path, path: str, old: str, new: str) -> None:
    """Replace the single occurrence of ``old`` in ``tree/path`` (the anchor must not drift)."""
    file = tree / path
    text = file.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: the fix's anchor occurs {text.count(old)} times"
    file.write_text(text.replace(old, new), encoding="utf-8")


def parso_data_file(tree: Path) -> None:
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


def mako_new_module(tree: Path) -> None:
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


def pyfakefs_plugin_rewrite(tree: Path) -> None:
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


def jaraco_mode_change(tree: Path) -> None:
    """The gold fix plus an executable bit on the namespace package's module."""
    (tree / "jaraco/path.py").chmod(0o755)


CONFTEST_FIXTURE = (
    'import pytest\n\n\n@pytest.fixture\ndef eight_char_password():\n    return "password"\n'
)


def validators_conftest(tree: Path) -> None:
    """The gold fix plus the fixture the task's new test uses, in a new tests/conftest.py."""
    (tree / "tests/conftest.py").write_text(CONFTEST_FIXTURE)


#: Appended to the graded test file: a new test that needs the fixture the fix adds.
VALIDATORS_NEW_TEST = (
    "\n\n"
    "def test_fixture_password_has_length_eight(eight_char_password: str):\n"
    "    assert length(eight_char_password, min_val=8, max_val=8)\n"
)


def configobj_subpackage(tree: Path) -> None:
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


def toolz_rename(tree: Path) -> None:
    """The gold fix plus a private module renamed (every ``import toolz`` goes through it)."""
    (tree / "toolz/_signatures.py").rename(tree / "toolz/_sigs.py")
    replace_once(
        tree,
        "toolz/functoolz.py",
        "from . import _signatures as _sigs\n",
        "from . import _sigs\n",
    )


def boltons_delete(tree: Path) -> None:
    """The gold fix plus a module of the package deleted (nothing graded imports it)."""
    (tree / "boltons/deprutils.py").unlink()


def idna_resources(tree: Path) -> None:
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


def faker_plugin_module(tree: Path) -> None:
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


def markdown_rewrite(tree: Path) -> None:
    """Registry.register, written another way (a non-strict deregister)."""
    replace_once(
        tree,
        "markdown/util.py",
        "        if name in self:\n            # Remove existing item of same name first\n"
        "            self.deregister(name)\n",
        "        self.deregister(name, strict=False)\n",
    )
