"""Differential probing: inputs on which the gold tree and a counterfactual tree disagree.

Used twice: Pipeline 2 discards a mutation-made "wrong" patch that no probe can tell apart from
gold (an *equivalent mutant* proves nothing about the suite), and test strengthening turns the
distinguishing inputs into new checks. Candidate inputs come from the tests themselves (every
call of a changed function with literal arguments), their perturbations (±1, ±2, 0, negation,
empty and doubled strings and lists, flipped booleans), and hypothesis-drawn values of the same
types when hypothesis is installed.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs

from swe_curate._ast_safe import literal_eval, parse_source
from swe_curate._errors import CurateError, ScorerError
from swe_curate._issue import IssueExample
from swe_curate._probe import (
    FUNCTION_PROBE,
    FUNCTION_PROBE_SOURCE,
    function_probe_command,
    parse_probe_output,
    with_file,
)
from swe_curate._scorer import Scorer
from swe_curate._source import PatchedTree
from swe_sandbox import TaskSpec


@attrs.frozen
class ProbeCase:
    """Call ``module.qualname(*literal_eval(args))``."""

    module: str
    qualname: str
    args: str

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.module, self.qualname, self.args)

    def call_source(self) -> str:
        """``qualname(arg, ...)`` as Python source."""
        args = literal_eval(self.args)
        return f"{self.qualname}({', '.join(repr(a) for a in args)})"


def module_name(path: str) -> str | None:
    """Import name of a repository file (``src/`` layouts included); ``None`` if not a module."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def candidate_cases(
    tree: PatchedTree,
    test_sources: Mapping[str, str],
    *,
    limit: int = 48,
    drawn: int = 16,
    examples: Sequence[IssueExample] = (),
    only: Collection[str] | None = None,
) -> list[ProbeCase]:
    """Inputs to call every changed module-level function on (deduplicated, at most ``limit``).

    Seeds are the issue's ``examples`` for the function when it states any, else the literal
    calls in ``test_sources``; ``only`` restricts the functions probed (by qualname).
    """
    cases: list[ProbeCase] = []
    for func in tree.changed_functions():
        module = module_name(func.path)
        if module is None or "." in func.qualname:
            continue  # methods need an instance we cannot build blindly
        if only is not None and func.qualname not in only:
            continue
        seeds = [e.arguments() for e in examples if e.function == func.node.name] or list(
            _literal_calls(func.node.name, test_sources.values())
        )
        arity = len(func.node.args.args) - len(func.node.args.defaults)
        if not seeds and arity > 0:
            seeds = [tuple(0 for _ in range(arity))]
        values: list[tuple[Any, ...]] = []
        for seed in seeds:
            values.append(seed)
            values.extend(_perturb(seed))
        values.extend(_drawn(seeds, drawn))
        seen: set[str] = set()
        for args in values:
            text = repr(tuple(args))
            if text in seen:
                continue
            try:
                literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            seen.add(text)
            cases.append(ProbeCase(module, func.qualname, text))
    return cases[:limit]


def _literal_calls(name: str, sources: Iterable[str]) -> Iterable[tuple[Any, ...]]:
    for source in sources:
        try:
            module = parse_source(source)
        except SyntaxError:
            continue
        for node in ast.walk(module):
            if not isinstance(node, ast.Call) or node.keywords:
                continue
            called = (
                node.func.id
                if isinstance(node.func, ast.Name)
                else getattr(node.func, "attr", None)
            )
            if called != name:
                continue
            try:
                yield tuple(literal_eval(arg) for arg in node.args)
            except (ValueError, TypeError, SyntaxError):
                continue


def _perturb_value(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value + 2, value - 2, 0, -value]
    if isinstance(value, float):
        return [value + 1.0, value - 1.0, 0.0, -value, value / 2]
    if isinstance(value, str):
        return ["", value + value, value.upper(), value[:-1]]
    if isinstance(value, list | tuple):
        kind = type(value)
        return [kind(), kind(reversed(value)), kind([*value, *value[:1]])]
    return []


def _perturb(seed: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for i, value in enumerate(seed):
        for other in _perturb_value(value):
            out.append((*seed[:i], other, *seed[i + 1 :]))
    return out


def _drawn(seeds: Sequence[tuple[Any, ...]], count: int) -> list[tuple[Any, ...]]:
    """``count`` hypothesis-generated argument tuples typed like the first seed (if installed)."""
    if not seeds or count <= 0:
        return []
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError:  # hypothesis is optional at run time
        return []
    strategies: list[st.SearchStrategy[Any]] = []
    for value in seeds[0]:
        if isinstance(value, bool):
            strategies.append(st.booleans())
        elif isinstance(value, int):
            strategies.append(st.integers(-1000, 1000))
        elif isinstance(value, float):
            strategies.append(st.floats(-1e3, 1e3, allow_nan=False))
        elif isinstance(value, str):
            strategies.append(st.text(max_size=8))
        else:
            strategies.append(st.just(value))
    found: list[tuple[Any, ...]] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.tuples(*strategies))
    def collect(args: tuple[Any, ...]) -> None:
        found.append(args)

    collect()
    return found


@attrs.frozen
class ProbeResult:
    """Outcome of one case on one tree: ``repr`` of the value, or the exception's type name."""

    ok: bool
    value: str

    @property
    def deterministic_literal(self) -> bool:
        """Whether a test can assert this outcome with a literal (value round-trips)."""
        if not self.ok:
            return True
        try:
            return repr(literal_eval(self.value)) == self.value
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False


def run_probe(
    scorer: Scorer,
    task: TaskSpec,
    patch: str,
    cases: Sequence[ProbeCase],
    *,
    timeout: float = 300.0,
) -> list[ProbeResult]:
    """Outcomes of ``cases`` on the buggy tree with ``patch`` applied (same order)."""
    probe_patch = with_file(patch, f"{FUNCTION_PROBE}.py", FUNCTION_PROBE_SOURCE)
    done = scorer.run(
        task, probe_patch, function_probe_command([c.as_tuple() for c in cases]), timeout=timeout
    )
    raw = parse_probe_output(done.output, truncated=done.truncated)
    if not isinstance(raw, list) or len(raw) != len(cases):
        raise ScorerError("function probe returned the wrong number of results")
    return [
        ProbeResult(True, str(r.get("repr")))
        if r.get("ok")
        else ProbeResult(False, str(r.get("exception")))
        for r in raw
    ]


def distinguishing(
    scorer: Scorer,
    task: TaskSpec,
    cases: Sequence[ProbeCase],
    patches: Sequence[str],
) -> tuple[list[ProbeResult], list[list[int]]]:
    """Gold outcomes, and per patch the indices of cases where it differs from gold.

    Gold is probed twice; cases whose gold outcome is not reproducible are never used.
    """
    if not cases:
        return [], [[] for _ in patches]
    gold = run_probe(scorer, task, task.gold_patch, cases)
    again = run_probe(scorer, task, task.gold_patch, cases)
    stable = [i for i, (a, b) in enumerate(zip(gold, again, strict=True)) if a == b]
    differing: list[list[int]] = []
    for patch in patches:
        try:
            other = run_probe(scorer, task, patch, cases)
        except CurateError:
            differing.append([])
            continue
        differing.append([i for i in stable if other[i] != gold[i]])
    return gold, differing
