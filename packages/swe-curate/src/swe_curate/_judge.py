"""The judge interface of Pipeline 2 and the offline judge (no model needed).

A judge answers the three questions of Arctic-SWE §4 in dependency order. It never decides
question (2) by reading: it *writes* counterfactual patches, and Pipeline 2 scores them with the
training scorer. The only edit a judge may make to a task is a rewritten issue text (question 3).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._correct import correct_counterfactuals
from swe_curate._counterfactual import Counterfactual
from swe_curate._diff import touched_paths
from swe_curate._errors import CuratePatchApplyError, MutationError, PatchFormatError
from swe_curate._issue import issue_examples
from swe_curate._source import PatchedTree
from swe_curate._wrong import wrong_counterfactuals


@attrs.frozen
class JudgeContext:
    """Everything a judge may see about one task (the judge is *privileged*: it sees gold).

    ``read_file`` reads the buggy tree *with the graded tests restored* (repo-relative path;
    raises ``FileNotFoundError``); ``list_files`` lists that tree. ``measurements`` is the
    Pipeline 1 record (per-test outcomes, binding assertions).
    """

    instance_id: str
    problem_statement: str
    gold_patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    read_file: Callable[[str], str]
    list_files: Callable[[], list[str]]
    measurements: Mapping[str, Any] = attrs.field(factory=dict)
    graded_files: tuple[str, ...] = ()
    """The withheld test files: restored for grading, never visible to an agent."""

    def visible_sources(self, limit: int = 2000) -> dict[str, str]:
        """Python files an agent sees (the tree without the withheld tests), at most ``limit``."""
        withheld = set(self.graded_files)
        out: dict[str, str] = {}
        for path in self.list_files():
            if len(out) >= limit:
                break
            if not path.endswith(".py") or path in withheld:
                continue
            try:
                out[path] = self.read_file(path)
            except (FileNotFoundError, ValueError):
                continue
        return out

    def gold_sources(self) -> dict[str, str]:
        """Buggy-tree text of every file the gold patch touches (missing files are skipped)."""
        out: dict[str, str] = {}
        for path in touched_paths(self.gold_patch):
            try:
                out[path] = self.read_file(path)
            except FileNotFoundError:
                continue
        return out

    def test_sources(self) -> dict[str, str]:
        """Text of every test file the graded test ids name (``path::name`` ids)."""
        out: dict[str, str] = {}
        for test_id in (*self.fail_to_pass, *self.pass_to_pass):
            path = test_id.split("::", 1)[0]
            if path in out or not path.endswith(".py"):
                continue
            try:
                out[path] = self.read_file(path)
            except FileNotFoundError:
                continue
        return out


@attrs.frozen
class Finding:
    """A yes/no answer with the judge's rationale (and, for question 3, a rewritten issue)."""

    holds: bool
    rationale: str
    rewritten_issue: str | None = None


class Judge(Protocol):
    """What Pipeline 2 needs from a judge; both judges here implement it."""

    name: str

    def gold_fixes_issue(self, ctx: JudgeContext) -> Finding:
        """Question 1: does the gold patch fix the issue as stated?"""
        ...

    def counterfactuals(self, ctx: JudgeContext) -> list[Counterfactual]:
        """Question 2's probes: plausible wrong patches and correct alternatives."""
        ...

    def issue_states_tests(self, ctx: JudgeContext, evidence: str) -> Finding:
        """Question 3: does the issue state what the tests demand? Else rewrite it."""
        ...

    def usage(self) -> dict[str, int]:
        """Resources spent so far (tokens, requests) for the records."""
        ...


@attrs.define
class OfflineJudge:
    """A judge that needs no model: counterfactuals from the issue text and the visible tree.

    Wrong patches are shortcuts an agent could write without the withheld tests (parts of the
    gold fix, wrong edge handling, the issue's own example special-cased); correct ones vary
    what the issue leaves open (local names, statement order, equivalent expressions, unstated
    error messages, private helper names the issue does not mention). Question 1 is answered from execution alone (Pipeline 1 found gold passing F2P; an offline
    judge cannot read intent). Question 3 checks that the issue names at least one symbol the
    failing tests call that the gold patch changed; otherwise it appends what the tests demand,
    taken verbatim from the failing assertions.
    """

    limit_per_mutator: int = 4
    name: str = "offline"
    _probes: int = 0

    def gold_fixes_issue(self, ctx: JudgeContext) -> Finding:
        gold_ok = ctx.measurements.get("gold_fixes_f2p", True)
        return Finding(bool(gold_ok), "offline judge: execution evidence (Pipeline 1) only")

    def counterfactuals(self, ctx: JudgeContext) -> list[Counterfactual]:
        try:
            tree = PatchedTree.from_patch(ctx.gold_sources(), ctx.gold_patch)
        except (CuratePatchApplyError, PatchFormatError) as exc:
            raise MutationError(f"gold patch cannot be replayed for mutation: {exc}") from exc
        issue = ctx.problem_statement
        found = [
            *wrong_counterfactuals(
                tree, ctx.gold_patch, issue_examples(issue), self.limit_per_mutator
            ),
            *correct_counterfactuals(
                tree,
                limit_per_mutator=self.limit_per_mutator,
                issue=issue,
                others=ctx.visible_sources(),
            ),
        ]
        self._probes += len(found)
        return found

    def issue_states_tests(self, ctx: JudgeContext, evidence: str) -> Finding:
        symbols = _demanded_symbols(ctx)
        text = ctx.problem_statement
        mentioned = sorted(s for s in symbols if re.search(rf"\b{re.escape(s)}\b", text))
        if mentioned or not symbols:
            return Finding(True, f"issue names {mentioned or 'no changed symbol (none found)'}")
        demands = _failing_assertions(ctx)
        rewrite = (
            text.rstrip()
            + "\n\nThe expected behaviour, as checked by the tests:\n"
            + "\n".join(f"- `{line}`" for line in demands or [f"{s}(...)" for s in sorted(symbols)])
            + "\n"
        )
        return Finding(False, f"issue names none of {sorted(symbols)}", rewritten_issue=rewrite)

    def usage(self) -> dict[str, int]:
        return {"requests": 0, "total_tokens": 0, "probes": self._probes}


def _demanded_symbols(ctx: JudgeContext) -> set[str]:
    """Names of functions/classes the gold patch changed that the failing tests refer to."""
    try:
        tree = PatchedTree.from_patch(ctx.gold_sources(), ctx.gold_patch)
        changed = {f.qualname.rsplit(".", 1)[-1] for f in tree.changed_functions()}
    except (CuratePatchApplyError, PatchFormatError, MutationError):
        return set()
    used: set[str] = set()
    for source in ctx.test_sources().values():
        try:
            module = parse_source(source)
        except SyntaxError:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
    return changed & used


def _failing_assertions(ctx: JudgeContext) -> list[str]:
    binding = ctx.measurements.get("binding_assertions") or []
    return [str(item.get("source", "")) for item in binding if item.get("source")][:8]
