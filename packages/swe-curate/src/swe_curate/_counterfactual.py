"""Counterfactual patches: what the judge writes and the scorer grades (Arctic-SWE §4, Pipeline 2).

A *wrong* counterfactual is a plausible patch that does not fix the issue; if the training
scorer gives it full reward the suite is ``too_loose``. A *correct* counterfactual is a
different implementation of the same fix; if the scorer gives it zero the suite is
``over_restrictive``. Both are full patches against the buggy tree, like an agent's submission.
"""

from __future__ import annotations

import ast
import copy
import enum
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._source import ChangedFunction, PatchedTree, same_program, splice_function


class Kind(enum.StrEnum):
    """Which way a counterfactual probes the suite."""

    WRONG = "wrong"
    CORRECT = "correct"


@attrs.frozen
class Counterfactual:
    """One counterfactual patch (unified diff against the buggy tree) and how it was made."""

    kind: Kind
    mutator: str
    description: str
    patch: str
    requirement: str = ""
    """For a correct alternative: the requirement a suite that rejects it imposes, which the
    issue leaves open (e.g. "exact message 'X' not stated in the issue")."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "mutator": self.mutator,
            "description": self.description,
            "patch": self.patch,
            "requirement": self.requirement,
        }


FunctionRewrite = Callable[[ChangedFunction], Iterator[tuple[str, ast.AST]]]
"""Yields ``(description, new function node)`` variants of one changed function."""

REQUIREMENTS = {
    "rename_locals": "local variable names, which the issue leaves open",
    "reorder_independent": "the order of independent statements, which the issue leaves open",
    "equivalent_expression": "one way of writing an expression, which the issue leaves open",
}
"""The requirement a failing correct alternative reveals, per function-level mutator."""


def variants_at_sites(
    func: ChangedFunction,
    select: Callable[[ast.AST], bool],
    transform: Callable[[ast.AST], ast.AST | None],
    describe: str,
) -> Iterator[tuple[str, ast.AST]]:
    """Apply ``transform`` to each selected node of a copy of the function, one site at a time.

    ``transform`` may edit the node in place (return it) or return a replacement; returning
    ``None`` skips the site. ``describe`` may use ``{line}`` (the site's line). Sites are found by the same deterministic walk on the original and
    on the copy, so the k-th site of one is the k-th site of the other.
    """
    count = sum(1 for node in ast.walk(func.node) if select(node))
    for k in range(count):
        clone = copy.deepcopy(func.node)
        site = [node for node in ast.walk(clone) if select(node)][k]
        label = describe.format(line=getattr(site, "lineno", "?"))
        replacement = transform(site)
        if replacement is None:
            continue
        if replacement is not site and not replace_child(clone, site, replacement):
            continue
        yield label, clone


def longest_block(node: ast.AST) -> int:
    """Length of the longest statement list (``body``) under ``node``: bounds per-index loops."""
    return max(
        (len(body) for n in ast.walk(node) if isinstance(body := getattr(n, "body", None), list)),
        default=0,
    )


def replace_child(root: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    """Replace ``old`` by ``new`` wherever it hangs under ``root``; True if found."""
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list) and any(item is old for item in value):
                setattr(parent, field, [new if item is old else item for item in value])
                return True
    return False


def render_variants(
    tree: PatchedTree,
    kind: Kind,
    mutators: Mapping[str, FunctionRewrite],
    limit_per_mutator: int,
) -> list[Counterfactual]:
    """Turn function-level variants into deduplicated counterfactual patches.

    A variant is dropped when its program equals the gold or the buggy file (no information),
    or equals a variant already kept.
    """
    out: list[Counterfactual] = []
    seen: set[str] = set()
    functions = tree.changed_functions()
    for name, mutator in mutators.items():
        kept = 0
        for func in functions:
            for description, node in mutator(func):
                if kept >= limit_per_mutator:
                    break
                assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                new_text = splice_function(tree.gold[func.path], func.node, node)
                if same_program(new_text, tree.gold[func.path]):
                    continue
                if same_program(new_text, tree.buggy.get(func.path, "")):
                    continue
                key = func.path + "\0" + ast.dump(parse_source(new_text))
                if key in seen:
                    continue
                seen.add(key)
                files = {**tree.gold, func.path: new_text}
                out.append(
                    Counterfactual(
                        kind,
                        name,
                        f"{func.qualname}: {description}",
                        tree.patch_to(files),
                        REQUIREMENTS.get(name, "") if kind is Kind.CORRECT else "",
                    )
                )
                kept += 1
    return out
