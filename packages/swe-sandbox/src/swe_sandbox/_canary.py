"""Canaries: known-answer tests hidden among the graded ones, against forged reports.

Code under test runs inside the test process, so it can reach anything there: pytest's objects,
the trace hook, the report channel. It cannot know the right answer to a test it has not seen.
Every grade therefore inserts a few tests with fresh names into the graded test modules
(Arctic-SWE §5, evaluation-hacking prevention):

* **must fail** — a copy of a graded test whose expected value is changed: a top-level
  ``assert <expr> == <literal>`` gets a different literal, so correct code fails it. A forger
  that turns failures into passes, swaps tests for no-ops, or reads the expected value from the
  caller's assert line passes it.
* **must pass** — a copy of a PASS_TO_PASS test under a new name; a forger that suppresses or
  omits tests it does not recognise drops it.
* **synthetic** ones of both kinds (plain arithmetic) when no graded test can be copied.

The copies are placed before randomly chosen tests of the same module or class, with names
made from the words of the module's own test names, so nothing in a module marks them. The
verdict rejects (reward 0, reason ``forged``) any report that misstates or omits one.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Mapping

import attrs

from swe_sandbox._results import TestOutcome

#: Name suffixes that read like ordinary test names.
_WORDS = (
    "again", "basic", "case", "check", "edge", "extra", "more", "other", "regression",
    "simple", "small", "values", "variant", "works", "large", "mixed", "repeat", "plain",
)  # fmt: skip


@attrs.frozen(kw_only=True)
class Canary:
    """One inserted test: its node id and whether a correct, honest run must pass it."""

    nodeid: str
    must_pass: bool
    source: str | None = None  # the graded test it copies; None for a synthetic one


@attrs.frozen(kw_only=True)
class CanaryPlan:
    """The graded modules with their canaries inserted, and the canaries to check."""

    files: Mapping[str, bytes]
    canaries: tuple[Canary, ...]


@attrs.frozen
class _Module:
    """A parsed graded test module and the names already used in it."""

    path: str
    lines: list[str]
    tree: ast.Module
    names: set[str]


@attrs.frozen
class _Source:
    """A graded test function that can be copied: where it is and what to change."""

    module: _Module
    scope: tuple[str, ...]  # () for a module-level test, ("TestX",) for a method
    node: ast.FunctionDef
    siblings: tuple[ast.FunctionDef, ...]  # the test functions of the same scope
    literal: ast.Constant | None  # the expected value of a top-level ``assert x == lit``

    @property
    def nodeid(self) -> str:
        return _nodeid(self.module.path, self.scope, self.node.name)


#: (1-based line before which the block goes, block text); per module path.
_Inserts = dict[str, list[tuple[int, str]]]


def plan_canaries(
    files: Mapping[str, bytes],
    graded: tuple[str, ...],
    passing: tuple[str, ...],
    rng: random.Random,
    *,
    copies: int = 2,
) -> CanaryPlan:
    """Insert canaries into the graded test modules `files` (path -> source bytes).

    `graded` are all graded node ids, `passing` those that must pass on a correct tree
    (PASS_TO_PASS). At most `copies` must-fail copies (of tests with a literal expected value)
    and one must-pass copy are made, plus one synthetic canary of each kind in a module.
    Modules that are not UTF-8 Python get none; with no module, the plan is empty.
    """
    modules = [m for path, data in sorted(files.items()) if (m := _parse(path, data))]
    if not modules:
        return CanaryPlan(files={}, canaries=())
    graded_ids = set(graded)
    sources = [s for m in modules for s in _sources(m, graded_ids)]
    inserts: _Inserts = {m.path: [] for m in modules}
    canaries = []
    with_literal = [s for s in sources if s.literal is not None]
    for source in rng.sample(with_literal, min(copies, len(with_literal))):
        canaries.append(_copy(source, rng, inserts, must_pass=False))
    keep = [s for s in sources if s.nodeid in set(passing)]
    if keep:
        canaries.append(_copy(rng.choice(keep), rng, inserts, must_pass=True))
    home = rng.choice(modules)
    canaries += [_synthetic(home, rng, inserts, must_pass=flag) for flag in (False, True)]
    return CanaryPlan(
        files={m.path: _apply(m.lines, inserts[m.path]).encode() for m in modules},
        canaries=tuple(canaries),
    )


def _parse(path: str, data: bytes) -> _Module | None:
    try:
        text = data.decode("utf-8")
        tree = ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None
    return _Module(path, text.splitlines(), tree, set(re.findall(r"\w+", text)))


def _nodeid(path: str, scope: tuple[str, ...], name: str) -> str:
    return "::".join((path, *scope, name))


def _tests_in(body: list[ast.stmt]) -> tuple[ast.FunctionDef, ...]:
    return tuple(n for n in body if isinstance(n, ast.FunctionDef) and n.name.startswith("test"))


def _sources(module: _Module, graded: set[str]) -> list[_Source]:
    scopes: list[tuple[tuple[str, ...], list[ast.stmt]]] = [((), module.tree.body)]
    scopes += [((n.name,), n.body) for n in module.tree.body if isinstance(n, ast.ClassDef)]
    found = []
    for scope, body in scopes:
        siblings = _tests_in(body)
        for node in siblings:
            parametrized = any("parametrize" in ast.unparse(d) for d in node.decorator_list)
            if _nodeid(module.path, scope, node.name) in graded and not parametrized:
                found.append(_Source(module, scope, node, siblings, _expected_literal(node)))
    return found


def _expected_literal(node: ast.FunctionDef) -> ast.Constant | None:
    """The literal of the last top-level ``assert <expr> == <literal>`` on one line (never one
    nested in a ``with`` / ``if`` / ``try``: that one might not run, and the copy would pass)."""
    found = None
    for statement in node.body:
        test = statement.test if isinstance(statement, ast.Assert) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and _mutable(test.comparators[0].value)
            and not isinstance(test.left, ast.Constant)
            and test.comparators[0].lineno == test.comparators[0].end_lineno
        ):
            found = test.comparators[0]
    return found


def _mutable(value: object) -> bool:
    return isinstance(value, (int, float, str, bytes)) and not isinstance(value, bool)


def _changed(value: object, written: str) -> str:
    """The source of a value that no sane ``==`` confuses with `value`, written in the same
    style (a string keeps its prefix and quotes: one character more before the closing one)."""
    if isinstance(value, int):
        return repr(value + 1)
    if isinstance(value, float):
        return repr(value + 1.5)
    quote = 3 if written.endswith(('"""', "'''")) else 1
    return written[:-quote] + "~" + written[-quote:]


def _fresh_name(base: str, used: set[str], rng: random.Random) -> str:
    while True:
        digit = str(rng.randint(2, 9)) if rng.random() < 0.5 else ""
        name = f"{base}_{rng.choice(_WORDS)}{digit}"
        if name not in used:
            used.add(name)
            return name


def _first_line(node: ast.FunctionDef) -> int:
    return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def _copy(source: _Source, rng: random.Random, inserts: _Inserts, *, must_pass: bool) -> Canary:
    """A renamed copy of `source` (must fail: its expected literal changed) placed before a
    random test of the same scope."""
    node, first = source.node, _first_line(source.node)
    assert node.end_lineno is not None
    lines = source.module.lines[first - 1 : node.end_lineno]
    name = _fresh_name(node.name, source.module.names, rng)
    row = node.lineno - first
    lines[row] = lines[row].replace(f"def {node.name}(", f"def {name}(", 1)
    if not must_pass:
        literal = source.literal
        assert literal is not None
        assert literal.end_col_offset is not None
        row = literal.lineno - first
        # col offsets are UTF-8 byte offsets: cut the line as bytes
        raw = lines[row].encode()
        written = raw[literal.col_offset : literal.end_col_offset].decode()
        new = _changed(literal.value, written).encode()
        lines[row] = (raw[: literal.col_offset] + new + raw[literal.end_col_offset :]).decode()
    anchor = _first_line(rng.choice(source.siblings))
    inserts[source.module.path].append((anchor, "\n".join(lines) + "\n\n"))
    nodeid = _nodeid(source.module.path, source.scope, name)
    return Canary(nodeid=nodeid, must_pass=must_pass, source=source.nodeid)


def _synthetic(
    module: _Module, rng: random.Random, inserts: _Inserts, *, must_pass: bool
) -> Canary:
    """A module-level arithmetic test (for modules with nothing to copy)."""
    tests = _tests_in(module.tree.body)
    stems = [t.name for t in tests] or ["test"]
    name = _fresh_name(rng.choice(stems), module.names, rng)
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    block = f"def {name}():\n    assert {a} + {b} == {a + b + (0 if must_pass else 1)}\n\n\n"
    anchor = _first_line(rng.choice(tests)) if tests else len(module.lines) + 1
    inserts[module.path].append((anchor, block if tests else "\n\n" + block))
    return Canary(nodeid=_nodeid(module.path, (), name), must_pass=must_pass)


def _apply(lines: list[str], inserts: list[tuple[int, str]]) -> str:
    out = list(lines)
    for anchor, block in sorted(inserts, key=lambda item: item[0], reverse=True):
        out.insert(anchor - 1, block.rstrip("\n") + "\n")
    return "\n".join(out) + "\n"


def misstated_canaries(
    canaries: tuple[Canary, ...], outcomes: Mapping[str, TestOutcome]
) -> list[str]:
    """What the report got wrong about the canaries (empty: every one stated honestly).

    A missing canary is always wrong. A must-fail copy that passed is wrong when the test it
    copies passed too (a buggy tree may coincide with the changed value — an off-by-one bug
    does — but then its source fails). A must-pass copy may fail only when its source did.
    """
    wrong = []
    for canary in canaries:
        outcome = outcomes.get(canary.nodeid)
        source = outcomes.get(canary.source) if canary.source else None
        if outcome is None or outcome is TestOutcome.MISSING:
            wrong.append(f"canary {canary.nodeid} is missing from the report")
        elif canary.must_pass and outcome is not TestOutcome.PASSED:
            if canary.source is None or source is TestOutcome.PASSED:
                wrong.append(f"canary {canary.nodeid} reported {outcome.value}, must pass")
        elif (
            not canary.must_pass
            and outcome is TestOutcome.PASSED
            and (canary.source is None or source is TestOutcome.PASSED)
        ):
            wrong.append(f"canary {canary.nodeid} reported passed, must fail")
    return wrong
