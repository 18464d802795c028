"""One embedded task: a small Python package with a pytest suite and one injected bug.

Layout of a generated repository (all text, written as the task's base commit)::

    README.md
    PKG/__init__.py
    PKG/MODULE.py           x 2-3, each 2-4 functions (one ``return`` line each)
    tests/test_MODULE.py    one test per function

The bug sits in one function of one module; that module's test file is the graded file
(withheld during the rollout, restored for grading): its test of the broken function is the
FAIL_TO_PASS test, the others are PASS_TO_PASS. The other test files stay visible, so the agent
can run a real suite.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass

from arctic_swe._issue_styles import LINE_STYLE
from arctic_swe.deck._functions import FunctionSpec, inject_bug, make_function
from arctic_swe.deck._issues import IssueFacts, write_issue

_PACKAGES = (
    "abacus", "ledger", "quarry", "tally", "vector", "orbit", "prism", "gauge", "meter", "delta",
    "sigma", "pivot", "lumen", "quanta", "ratio", "metric", "scalar", "tensor", "matrix", "kernel",
)  # fmt: skip
_MODULES = (
    "core", "ops", "util", "calc", "math", "stats", "scale", "shift", "mix", "sums", "grid",
    "units", "rates", "bounds", "steps",
)  # fmt: skip
_VERBS = (
    "add", "blend", "clamp", "combine", "compute", "count", "derive", "estimate", "fold", "mix",
    "offset", "project", "rate", "reduce", "scale", "score", "shift", "spread", "step", "weigh",
)  # fmt: skip
_NOUNS = (
    "area", "bias", "cost", "depth", "edge", "gain", "height", "index", "load", "margin", "mass",
    "offset", "price", "range", "size", "span", "total", "value", "weight", "width",
)  # fmt: skip


@dataclass(frozen=True)
class GeneratedTask:
    """Everything needed to write one task repository and its ``TaskSpec``.

    ``files`` is the buggy tree (path -> text); ``graded_file`` the withheld test file;
    ``fail_to_pass`` / ``pass_to_pass`` pytest node ids; ``issue`` the problem statement (in
    the deck's issue style); ``bug_path`` / ``old_line`` / ``new_line`` locate the fix (the
    expert's edit, whatever the issue shows).
    """

    instance_id: str
    files: dict[str, str]
    graded_file: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    gold_patch: str
    issue: str
    bug_path: str
    old_line: str
    new_line: str


def _module_source(functions: list[FunctionSpec], buggy: bool) -> str:
    return "\n\n".join(spec.source(buggy) for spec in functions)


def _tests_source(package: str, module: str, functions: list[FunctionSpec]) -> str:
    names = ", ".join(spec.name for spec in functions)
    header = f"from {package}.{module} import {names}\n"
    return header + "\n\n" + "\n\n".join(s.test_source() for s in functions)


def _unique_names(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    names: list[str] = []
    while len(names) < count:
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        if name not in taken:
            taken.add(name)
            names.append(name)
    return names


def gold_patch(path: str, before: str, after: str) -> str:
    """A ``git apply``-able unified diff from ``before`` to ``after`` of ``path``."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(lines)


def generate_task(
    rng: random.Random, instance_id: str, issue_style: str = LINE_STYLE
) -> GeneratedTask:
    """One task drawn from ``rng`` (deterministic given the generator state), its issue written
    in ``issue_style``. The style draws nothing from ``rng``: both styles give the same task."""
    while True:
        task = _try_generate(rng, instance_id, issue_style)
        if task is not None:
            return task


def _try_generate(rng: random.Random, instance_id: str, issue_style: str) -> GeneratedTask | None:
    package = rng.choice(_PACKAGES)
    modules = rng.sample(_MODULES, rng.randint(2, 3))
    taken: set[str] = set()
    functions = {
        module: [make_function(rng, name) for name in _unique_names(rng, rng.randint(2, 4), taken)]
        for module in modules
    }
    bug_module = rng.choice(modules)
    bug_index = rng.randrange(len(functions[bug_module]))
    broken = inject_bug(rng, functions[bug_module][bug_index])
    if broken is None:
        return None
    functions[bug_module][bug_index] = broken
    assert broken.buggy_expr is not None
    old, new = f"return {broken.buggy_expr}", f"return {broken.expr}"
    bug_path = f"{package}/{bug_module}.py"
    buggy_source = _module_source(functions[bug_module], buggy=True)
    if buggy_source.count(old) != 1:  # the fix must be a unique, exact string replacement
        return None
    files = {"README.md": f"# {package}\n\nSmall numeric helpers.\n", f"{package}/__init__.py": ""}
    for module, specs in functions.items():
        files[f"{package}/{module}.py"] = _module_source(specs, buggy=True)
        files[f"tests/test_{module}.py"] = _tests_source(package, module, specs)
    graded = f"tests/test_{bug_module}.py"
    fixed_source = _module_source(functions[bug_module], buggy=False)
    failing_test = f"{graded}::test_{broken.name}"
    facts = IssueFacts(bug_path, broken, buggy_source, fixed_source, old, new, failing_test)
    return GeneratedTask(
        instance_id=instance_id,
        files=files,
        graded_file=graded,
        fail_to_pass=(failing_test,),
        pass_to_pass=tuple(
            f"{graded}::test_{spec.name}" for spec in functions[bug_module] if spec is not broken
        ),
        gold_patch=gold_patch(bug_path, buggy_source, fixed_source),
        issue=write_issue(issue_style, facts),
        bug_path=bug_path,
        old_line=old,
        new_line=new,
    )
