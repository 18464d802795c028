"""Canaries: known-answer tests hidden among the graded ones, against forged reports.

Code under test runs inside the test process, so it can reach anything there: pytest's objects,
the trace hook, the report channel. It cannot know the right answer to a test it has not seen.
Every grade therefore inserts a few tests with fresh names into the graded test modules
(Arctic-SWE §5, evaluation-hacking prevention):

* **must fail** — copies of a graded test whose expected value is changed: a top-level
  ``assert <expr> == <literal>`` (or ``self.assertEqual(<expr>, <literal>)``) gets a different literal (two copies per test, on either side
  of the right value), so correct code fails them. A forger that turns failures into passes,
  swaps tests for no-ops, or reads the expected value from the caller's assert line passes
  them; one that reads the module and guesses which of the look-alike tests is the real one
  is right with probability 1/3 per copied test.
* **synthetic** ones (plain arithmetic), one that must fail and one that must pass: a report
  that omits tests it does not recognise, or forges every outcome, misstates them.

The copies are placed before randomly chosen tests of the same module or class, with names
made from the words of the module's own test names (never a graded name plus a suffix). The
verdict rejects (reward 0, reason ``forged``) any report that misstates or omits one.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Mapping

import attrs

from swe_sandbox._canary_params import body_literal, is_parametrize, table_literals
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
    cases: bool = False  # a parametrized copy: its outcomes are ``nodeid[...]``, every one


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
    literals: tuple[ast.expr, ...]  # the expected value(s): one, or a parametrize column
    cases: bool  # parametrized: its node ids carry ``[case]`` suffixes

    @property
    def nodeid(self) -> str:
        return _nodeid(self.module.path, self.scope, self.node.name)


#: (0-based line index before which the block goes, rank at that index, its lines); per module.
_Inserts = dict[str, list[tuple[int, int, list[str]]]]


def plan_canaries(
    files: Mapping[str, bytes],
    graded: tuple[str, ...],
    rng: random.Random,
    *,
    fail_to_pass: tuple[str, ...] = (),
    sources: int = 3,
    copies: int = 2,
) -> CanaryPlan:
    """Insert canaries into the graded test modules `files` (path -> source bytes).

    For up to `sources` graded tests with a literal expected value — FAIL_TO_PASS tests first
    (`fail_to_pass`: the ones a forger must flip), then others — `copies` must-fail copies
    each, the right value at a uniformly random rank among its changed ones; plus one
    synthetic must-fail and one synthetic must-pass test in a module. `graded` are the graded
    node ids. Modules that are not UTF-8 Python get none; with none, the plan is empty.
    """
    modules = [m for path, data in sorted(files.items()) if (m := _parse(path, data))]
    if not modules:
        return CanaryPlan(files={}, canaries=())
    found = [s for m in modules for s in _sources(m, set(graded))]
    rng.shuffle(found)
    failing = set(fail_to_pass)
    found.sort(key=lambda s: not _covers(s, failing))  # stable: F2P sources first, shuffled
    inserts: _Inserts = {m.path: [] for m in modules}
    canaries = []
    for source in found[:sources]:
        canaries += _copies(source, rng, inserts, copies)
    home = rng.choice(modules)
    canaries += [_synthetic(home, rng, inserts, must_pass=flag) for flag in (False, True)]
    return CanaryPlan(
        files={m.path: _apply(m.lines, inserts[m.path]).encode() for m in modules},
        canaries=tuple(canaries),
    )


def _covers(source: _Source, ids: set[str]) -> bool:
    return source.nodeid in ids or any(i.startswith(source.nodeid + "[") for i in ids)


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
    """The graded tests of `module` that can be copied with a changed expected value."""
    scopes: list[tuple[tuple[str, ...], list[ast.stmt]]] = [((), module.tree.body)]
    scopes += [((n.name,), n.body) for n in module.tree.body if isinstance(n, ast.ClassDef)]
    found = []
    for scope, body in scopes:
        siblings = _tests_in(body)
        for node in siblings:
            nodeid = _nodeid(module.path, scope, node.name)
            if any(is_parametrize(d) for d in node.decorator_list):
                table = table_literals(node)
                if table and any(g.startswith(nodeid + "[") for g in graded):
                    found.append(_Source(module, scope, node, siblings, table, cases=True))
            elif nodeid in graded and (literal := body_literal(node)) is not None:
                found.append(_Source(module, scope, node, siblings, (literal,), cases=False))
    return found


_INT_STEPS = (1, 2, 3)
_FLOAT_STEPS = (0.5, 1.5, 2.5)


def _changed_values(value: object, written: str, rng: random.Random, count: int) -> list[str]:
    """`count` distinct different values written in the same style, shuffled. Numbers move by
    distinct steps to either side with the right value at a uniformly random rank among them
    (the middle one is not the tell); strings and bytes get one character changed, inserted
    or appended (prefix and quotes kept)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, bytes)):
        raise TypeError(f"not a mutable literal: {value!r}")
    if isinstance(value, (int, float)):
        steps = _INT_STEPS if isinstance(value, int) else _FLOAT_STEPS
        below = rng.randint(0, count)  # how many changed values sit below the right one
        new = [value - d for d in rng.sample(steps, below)]
        new += [value + d for d in rng.sample(steps, count - below)]
        rng.shuffle(new)
        return [repr(v) for v in new]
    made: list[str] = []
    while len(made) < count:
        text = _changed_text(written, rng)
        if text != written and text not in made:
            made.append(text)
    return made


def _changed_text(written: str, rng: random.Random) -> str:
    quote = 3 if written.endswith(('"""', "'''")) else 1
    opening = written.index(written[-1]) + quote  # after the prefix and the opening quote(s)
    body = written[opening:-quote]
    at = rng.randint(0, len(body))
    if body[at : at + 1] == "\\":  # never split an escape sequence
        at = len(body)
    letter = rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
    keep = 0 if at == len(body) or rng.random() < 0.5 else 1  # insert, or replace one char
    if body[at : at + 1] == letter:
        keep = 0
    return written[:opening] + body[:at] + letter + body[at + keep :] + written[-quote:]


def _fresh_name(module: _Module, rng: random.Random, avoid: str = "") -> str:
    """A new test name made of words from the module's own test names, topped up with common
    ones (never `avoid` plus a suffix, so no name marks itself as the copy of another)."""
    words = {w for n in module.names if n.startswith("test_") for w in n.split("_")[1:] if w}
    pool = sorted(words | set(rng.sample(_WORDS, 4))) if len(words) < 4 else sorted(words)
    for attempt in range(1000):
        picked = rng.sample(pool, min(rng.randint(2, 3), len(pool)))
        name = "test_" + "_".join(picked) + (str(attempt) if attempt > 100 else "")
        if name not in module.names and not (avoid and name.startswith(avoid)):
            module.names.add(name)
            return name
    raise AssertionError("unreachable: 1000 numbered names all taken")


def _first_line(node: ast.FunctionDef) -> int:
    return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def _copies(source: _Source, rng: random.Random, inserts: _Inserts, count: int) -> list[Canary]:
    """`count` renamed copies of `source`, each with its expected value(s) changed to
    different ones (must fail, every case), each placed in a random slot of its scope."""
    node, first = source.node, _first_line(source.node)
    assert node.end_lineno is not None
    values = []  # per literal: its `count` changed spellings
    for literal in source.literals:
        raw = source.module.lines[literal.lineno - 1].encode()  # col offsets count UTF-8 bytes
        assert literal.end_col_offset is not None
        written = raw[literal.col_offset : literal.end_col_offset].decode()
        values.append(_changed_values(ast.literal_eval(literal), written, rng, count))
    made = []
    for copy in range(count):
        lines = source.module.lines[first - 1 : node.end_lineno]
        # right to left within a line: earlier column offsets stay valid
        order = sorted(range(len(source.literals)), key=lambda i: _position(source.literals[i]))
        for index in reversed(order):
            literal = source.literals[index]
            assert literal.end_col_offset is not None
            row = literal.lineno - first
            raw = lines[row].encode()
            new = values[index][copy].encode()
            lines[row] = (raw[: literal.col_offset] + new + raw[literal.end_col_offset :]).decode()
        name = _fresh_name(source.module, rng, avoid=node.name)
        head = node.lineno - first
        lines[head] = lines[head].replace(f"def {node.name}(", f"def {name}(", 1)
        _place(source.module, source.siblings, lines, rng, inserts)
        nodeid = _nodeid(source.module.path, source.scope, name)
        made.append(
            Canary(nodeid=nodeid, must_pass=False, source=source.nodeid, cases=source.cases)
        )
    return made


def _position(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _place(
    module: _Module,
    siblings: tuple[ast.FunctionDef, ...],
    block: list[str],
    rng: random.Random,
    inserts: _Inserts,
) -> None:
    """Put `block` in a random slot among `siblings` — before any of them or after the last —
    with as many blank lines between it and its neighbours as the scope puts between its
    tests, so neither its place nor its spacing marks it."""
    if not siblings:  # a module with no test function of its own: at the very end
        inserts[module.path].append((len(module.lines), 1, ["", "", *block]))
        return
    gaps = [_blank_lines_above(module.lines, _first_line(s) - 1) for s in siblings]
    gap = max(set(gaps[1:]), key=gaps[1:].count) if len(gaps) > 1 else gaps[0]
    slot = rng.randint(0, len(siblings))
    if slot < len(siblings):
        at = _first_line(siblings[slot]) - 1  # 0-based index of its first line
        inserts[module.path].append((at, 0, [*block, *[""] * gap]))
    else:
        last = siblings[-1]
        assert last.end_lineno is not None
        inserts[module.path].append((last.end_lineno, 0, [*[""] * gap, *block]))


def _blank_lines_above(lines: list[str], at: int) -> int:
    count = 0
    while at - count - 1 >= 0 and not lines[at - count - 1].strip():
        count += 1
    return count


def _synthetic(
    module: _Module, rng: random.Random, inserts: _Inserts, *, must_pass: bool
) -> Canary:
    """A module-level arithmetic test (for modules with nothing to copy)."""
    name = _fresh_name(module, rng)
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    block = [f"def {name}():", f"    assert {a} + {b} == {a + b + (0 if must_pass else 1)}"]
    _place(module, _tests_in(module.tree.body), block, rng, inserts)
    return Canary(nodeid=_nodeid(module.path, (), name), must_pass=must_pass)


def _apply(lines: list[str], inserts: list[tuple[int, int, list[str]]]) -> str:
    """`lines` with each block inserted before its 0-based index, bottom up; at one index a
    block of a later rank (the module's end) goes after those of rank 0 (a class's end)."""
    out = list(lines)
    for at, _rank, block in sorted(inserts, key=lambda item: item[:2], reverse=True):
        out[at:at] = block
    return "\n".join(out) + "\n"


def misstated_canaries(
    canaries: tuple[Canary, ...], outcomes: Mapping[str, TestOutcome]
) -> list[str]:
    """What the report got wrong about the canaries (empty: every one stated honestly).

    A missing canary is always wrong. A must-fail copy that passed (a parametrized one: any of
    its cases) is wrong when the test it copies passed too (every case): a buggy tree may
    coincide with a changed value — an off-by-one bug does — but then its source fails.
    A synthetic must-pass canary must pass.
    """
    wrong = []
    for canary in canaries:
        found = _outcomes_of(canary.nodeid, canary.cases, outcomes)
        source = _outcomes_of(canary.source, canary.cases, outcomes) if canary.source else []
        source_passed = bool(source) and all(o is TestOutcome.PASSED for o in source)
        if not found or TestOutcome.MISSING in found:
            wrong.append(f"canary {canary.nodeid} is missing from the report")
        elif canary.must_pass and any(o is not TestOutcome.PASSED for o in found):
            wrong.append(f"canary {canary.nodeid} reported {found[0].value}, must pass")
        elif (
            not canary.must_pass
            and TestOutcome.PASSED in found
            and (canary.source is None or source_passed)
        ):
            wrong.append(f"canary {canary.nodeid} reported passed, must fail")
    return wrong


def _outcomes_of(
    nodeid: str, cases: bool, outcomes: Mapping[str, TestOutcome]
) -> list[TestOutcome]:
    if not cases:
        return [outcomes[nodeid]] if nodeid in outcomes else []
    return [o for k, o in outcomes.items() if k.startswith(nodeid + "[")]
