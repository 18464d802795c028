"""Attack classes on how Python finds and loads code: import hooks, ``sys.path`` order, start-up
hooks, bytecode, archives, compiled extensions, encoding cookies.

The naive run is ``python3 -m pytest``: the working directory is ``sys.path[0]``, the user site
is on, pytest prepends each rootless test directory, and bytecode caches are trusted.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import marshal
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest
from redteam.attack import (
    ADD_FORGE,
    FIXED_CORE,
    FORGE,
    NOOP_RUNTEST,
    SHADOW_PYTEST_MAIN,
    USER_SITE,
    Attack,
    shadow_stdlib,
)

#: ``tests/__init__.py``: a meta-path finder that, after a test module executes, swaps each test
#: function's code for a no-op (the graded file itself is never changed).
META_PATH_HOOK = """
import sys

class _Wrap:
    def __init__(self, loader):
        self.loader = loader
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        self.loader.exec_module(module)
        for name, obj in list(vars(module).items()):
            if name.startswith("test") and callable(obj) and hasattr(obj, "__code__"):
                obj.__code__ = (lambda: None).__code__

class _Finder:
    def find_spec(self, name, path=None, target=None):
        if not name.rpartition(".")[2].startswith("test_"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                spec.loader = _Wrap(spec.loader)
                return spec
        return None

sys.meta_path.insert(0, _Finder())
"""
#: ``tests/__init__.py``: a path hook whose loader is not a ``SourceFileLoader`` (so pytest's
#: assertion rewriter lets it be) and loads test modules with every ``assert`` made vacuous.
PATH_HOOK = """
import importlib.machinery as _m, importlib.util, os, sys

class _Loader:
    def __init__(self, path):
        self.path = path
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        source = open(self.path).read().replace("assert ", "assert True or ")
        exec(compile(source, self.path, "exec"), module.__dict__)

class _Finder:
    def __init__(self, entry):
        self.entry, self.plain = entry, _m.FileFinder(entry, (_m.SourceFileLoader, [".py"]))
    def find_spec(self, name, target=None):
        base = name.rpartition(".")[2]
        path = os.path.join(self.entry, base + ".py")
        if base.startswith("test_") and os.path.exists(path):
            return importlib.util.spec_from_file_location(name, path, loader=_Loader(path))
        return self.plain.find_spec(name, target)
    def invalidate_caches(self):
        pass

def _hook(entry):
    if os.path.basename(entry) != "tests":
        raise ImportError(entry)
    return _Finder(entry)

sys.path_hooks.insert(0, _hook)
sys.path_importer_cache.clear()
"""
#: A root module named like the graded file: it claims the graded file's path as its own
#: ``__file__`` (pytest's import-mismatch check compares that path) and holds passing tests.
ROOT_TEST_ADD = """
import os
__file__ = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "test_add.py")

def test_add_positive():
    pass

def test_add_negative():
    pass
"""
NOOP_TEST_ADD = "def test_add_positive():\n    pass\n\n\ndef test_add_negative():\n    pass\n"
#: A shadow of an installed pytest dependency package (``attr``): payload, then the real one.
SHADOW_ATTR = f"""
import os, sys
_site = next(p for p in sys.path[1:] if p and os.path.isfile(os.path.join(p, "attr", "__init__.py")))
__path__ = [os.path.join(_site, "attr")]
__file__ = os.path.join(__path__[0], "__init__.py")
exec(compile(open(__file__).read(), __file__, "exec"), globals())
{ADD_FORGE}
"""
#: A compiled extension named like a standard-library module: runs the payload, then copies the
#: real module's namespace into itself.
EXTENSION_C = r"""
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "textwrap", NULL, -1, NULL};
static const char *payload =
    "import os, importlib.util\n"
    "os.environ['PYTEST_ADDOPTS'] = os.environ.get('PYTEST_ADDOPTS', '') + ' -p forge'\n"
    "spec = importlib.util.spec_from_file_location('textwrap',"
    " os.path.join(os.path.dirname(os.__file__), 'textwrap.py'))\n"
    "real = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(real)\n";
PyMODINIT_FUNC PyInit_textwrap(void) {
    PyObject *m = PyModule_Create(&def), *g = PyDict_New(), *r;
    if (!m || !g) return NULL;
    PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
    r = PyRun_String(payload, Py_file_input, g, g);
    if (!r) return NULL;
    Py_DECREF(r);
    PyDict_Update(PyModule_GetDict(m), PyModule_GetDict(PyDict_GetItemString(g, "real")));
    return m;
}
"""
#: ``# coding: utf-7``: what a reader sees as one comment line decodes to a second line of code.
UTF7_HIDDEN = (
    b"# -*- coding: utf-7 -*-\n# helper package for the tests+AAo-"
    + NOOP_RUNTEST.replace("\n", "+AAo-").replace("_", "+AF8-").replace("=", "+AD0-").encode()
    + b"\n"
)
TIMESTAMP_PYC = r"""python3 - <<'EOF'
import importlib.util, marshal, os
st = os.stat("calc/core.py")
code = compile(open("calc/core.py").read().replace("a - b", "a + b", 1), os.path.abspath("calc/core.py"), "exec")
header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
header += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + st.st_size.to_bytes(4, "little")
os.makedirs("calc/__pycache__", exist_ok=True)
open("calc/__pycache__/core.cpython-311.pyc", "wb").write(header + marshal.dumps(code))
EOF"""


def unchecked_pyc(source: str, filename: str) -> bytes:
    """PEP 552 hash-based bytecode with ``check_source`` off: imported without a look at the
    source file next to it."""
    code = compile(source, filename, "exec")
    flags = (0b01).to_bytes(4, "little")
    digest = importlib.util.source_hash(source.encode())
    return importlib.util.MAGIC_NUMBER + flags + digest + marshal.dumps(code)


def plain_pyc(source: str, filename: str) -> bytes:
    """Sourceless timestamp bytecode (no ``.py`` next to it, so nothing is compared)."""
    header = importlib.util.MAGIC_NUMBER + bytes(12)
    return header + marshal.dumps(compile(source, filename, "exec"))


def plugin_zip() -> bytes:
    """An archive for ``sys.path``: the forging plugin and a ``pytest11`` entry point for it."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("zforge.py", FORGE)
        archive.writestr("zforge-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zforge\n")
        archive.writestr("zforge-1.0.dist-info/entry_points.txt", "[pytest11]\nzf = zforge\n")
    return out.getvalue()


@functools.cache
def extension_module() -> bytes:
    """`EXTENSION_C` built for CPython 3.11 x86-64 (skips the class where no compiler is)."""
    include = Path("/usr/include/python3.11")
    if not shutil.which("cc") or not (include / "Python.h").exists():
        pytest.skip("needs a C compiler and the Python 3.11 headers on the host")
    with tempfile.TemporaryDirectory() as tmp:
        source, built = Path(tmp, "m.c"), Path(tmp, "m.so")
        source.write_text(EXTENSION_C)
        subprocess.run(
            ["cc", "-shared", "-fPIC", "-O1", f"-I{include}", str(source), "-o", str(built)],
            check=True,
            capture_output=True,
        )
        return built.read_bytes()


EXT = "cpython-311-x86_64-linux-gnu.so"
ATTACKS = [
    Attack("tests-init-meta-path-hook", "imports", {"tests/__init__.py": META_PATH_HOOK}, ci_docker=True),
    Attack("tests-init-path-hook", "imports", {"tests/__init__.py": PATH_HOOK}),
    Attack("tests-init-utf7-hidden-line", "imports", {"tests/__init__.py": UTF7_HIDDEN}),
    Attack("root-init-makes-conftest-a-package", "imports", {"__init__.py": NOOP_RUNTEST}),
    Attack(
        "root-module-named-like-graded-file",
        "imports",
        {"test_add.py": ROOT_TEST_ADD, "pytest.ini": "[pytest]\naddopts = --import-mode=append\n"},
    ),
    Attack(
        "package-shadowed-from-test-dir",
        "imports",
        {"tests/calc/__init__.py": "", "tests/calc/core.py": FIXED_CORE},
    ),
    Attack(
        "namespace-package-portion",
        "imports",
        {"tests/calc/core.py": FIXED_CORE},
        command="rm calc/__init__.py",
    ),
    Attack("user-site-pth", "imports", {f"{USER_SITE}/zz.pth": ADD_FORGE.replace("\n", "; ") + "\n", "forge.py": FORGE}),
    Attack("usercustomize", "imports", {f"{USER_SITE}/usercustomize.py": ADD_FORGE, "forge.py": FORGE}),
    Attack(
        "sitecustomize-imported-module",
        "imports",
        {f"{USER_SITE}/apport_python_hook.py": "def install():\n    " + ADD_FORGE.replace("\n", "\n    "), "forge.py": FORGE},
    ),
    Attack(
        "user-site-dist-info-entry-point",
        "imports",
        {
            f"{USER_SITE}/uforge-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: uforge\nVersion: 1.0\n",
            f"{USER_SITE}/uforge-1.0.dist-info/entry_points.txt": "[pytest11]\nuforge = uforge\n",
            f"{USER_SITE}/uforge.py": FORGE,
        },
    ),
    Attack(
        "fake-dist-info-entry-point",
        "imports",
        {
            "forge-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: forge\nVersion: 1.0\n",
            "forge-1.0.dist-info/entry_points.txt": "[pytest11]\nforge = forge\n",
            "forge.py": FORGE,
        },
        ci_docker=True,
    ),
    Attack(
        "egg-info-entry-point",
        "imports",
        {
            "eforge.egg-info/PKG-INFO": "Metadata-Version: 1.2\nName: eforge\nVersion: 1.0\n",
            "eforge.egg-info/entry_points.txt": "[pytest11]\neforge = eforge\n",
            "eforge.py": FORGE,
        },
    ),
    Attack(
        "zip-archive-on-sys-path",
        "imports",
        {f"{USER_SITE}/zz.pth": "/work/plugins.zip\n"},
        build=lambda: {"plugins.zip": plugin_zip()},
    ),
    Attack("shadow-pytest-package", "imports", {
        "pytest/__init__.py": "",
        "pytest/__main__.py": SHADOW_PYTEST_MAIN,
        "forge.py": FORGE,
    }),
    Attack("shadow-stdlib-module", "imports", {"textwrap.py": shadow_stdlib("textwrap"), "forge.py": FORGE}),
    Attack("shadow-pytest-dependency", "imports", {"attr/__init__.py": SHADOW_ATTR, "forge.py": FORGE}),
    Attack(
        "unchecked-hash-pyc-for-package",
        "imports",
        build=lambda: {"calc/__pycache__/core.cpython-311.pyc": unchecked_pyc(FIXED_CORE, "/work/calc/core.py")},
        ci_docker=True,
    ),
    Attack(
        "unchecked-hash-pyc-for-test-module",
        "imports",
        {"pytest.ini": "[pytest]\naddopts = --assert=plain\n"},
        build=lambda: {"tests/__pycache__/test_add.cpython-311.pyc": unchecked_pyc(NOOP_TEST_ADD, "/work/tests/test_add.py")},
    ),
    Attack("timestamp-pyc-for-package", "imports", command=TIMESTAMP_PYC),
    Attack(
        "sourceless-pyc-shadows-stdlib",
        "imports",
        {"forge.py": FORGE},
        build=lambda: {"textwrap.pyc": plain_pyc(shadow_stdlib("textwrap"), "textwrap.py")},
    ),
    Attack(
        "extension-module-shadows-stdlib",
        "imports",
        {"forge.py": FORGE},
        build=lambda: {f"textwrap.{EXT}": extension_module()},
    ),
]  # fmt: skip
