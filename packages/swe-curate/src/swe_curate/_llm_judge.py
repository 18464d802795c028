"""The LLM judge: any OpenAI-compatible chat model, driven through tool calls.

Per question the model gets the task and a small tool belt — ``read_file``, ``list_files``,
``propose_patch`` (question 2: counterfactual patches, validated against the buggy tree before
they are accepted) and ``answer`` / ``done`` to finish. Question 2 holds the model to the
offline judge's contract: a wrong patch names its ``shortcut`` (``partial``,
``special_case_example``, ``edge_case``) and may not hard-code literals found only in the
withheld tests; a correct alternative names what it ``varies`` among the things the issue leaves
open, which becomes the requirement an ``over_restrictive`` verdict names. Malformed turns are answered with a
precise error so the model can recover; a judge that keeps producing garbage, or never answers
within ``max_turns``, raises :class:`JudgeGarbageError` and the task is recorded as such.
"""

from __future__ import annotations

import ast
import contextlib
import json
from collections.abc import Callable
from typing import Any

import attrs

from swe_curate._ast_safe import parse_source
from swe_curate._chat import ChatClient, ChatToolCall, Message
from swe_curate._counterfactual import Counterfactual, Kind
from swe_curate._diff import apply_patch, touched_paths
from swe_curate._errors import CuratePatchApplyError, JudgeGarbageError, PatchFormatError
from swe_curate._judge import Finding, JudgeContext
from swe_curate._source import PatchedTree

_MAX_FILE_CHARS = 20_000

SYSTEM_PROMPT = """\
You audit one software-engineering RL task: an issue, a gold patch and a test suite that grades
submissions. You see everything, including the gold patch. Work only through tool calls.
"""

Q1 = """\
Question 1: does the gold patch fix the issue as stated?
Issue:
{issue}

Gold patch:
{gold}

Pipeline 1 measurements: {measurements}
Call `answer` with holds=true/false and a one-paragraph rationale."""

Q2 = """\
Question 2: do the tests grade what the issue asks? Do NOT answer by reading: write
counterfactual patches against the buggy tree; they will be scored with the training grader.
Propose with `propose_patch`, then call `done`:
- at least one WRONG patch: a shortcut an agent could write from the issue text and the visible
  repository alone, never from the withheld tests ({withheld}). Set `shortcut` to one of
  `partial` (implements only part of the stated behaviour), `special_case_example` (hard-codes
  the example the issue states) or `edge_case` (gets an edge case the issue specifies wrong).
  A patch that merely differs from gold where the issue says nothing is not wrong. Literals that
  appear only in the withheld tests are refused.
- at least one CORRECT alternative: a real fix that differs from gold only in what the issue
  leaves open (error-message text it does not state, helper structure, inlining or renaming
  private helpers it does not name, an equivalent algorithm). Set `varies` to what it varies,
  e.g. "exact message 'not a duration' not stated in the issue".
Graded tests: {tests}

Issue:
{issue}

Gold patch:
{gold}"""

Q3 = """\
Question 3: does the issue state what the tests demand? Evidence from scoring:
{evidence}

Issue:
{issue}

Tests: {tests}
Call `answer` with holds=true if a competent engineer could pass the tests from the issue alone;
otherwise holds=false and `rewritten_issue`: the issue rewritten to state the tested behaviour
(do not reveal the implementation)."""


def _tool(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


READ = _tool(
    "read_file",
    "Read a file of the buggy tree (tests restored).",
    {"path": {"type": "string"}},
    ["path"],
)
LIST = _tool("list_files", "List the files of the buggy tree.", {}, [])
ANSWER = _tool(
    "answer",
    "Answer the current question.",
    {
        "holds": {"type": "boolean"},
        "rationale": {"type": "string"},
        "rewritten_issue": {"type": "string"},
    },
    ["holds", "rationale"],
)
SHORTCUTS = ("partial", "special_case_example", "edge_case")
PROPOSE = _tool(
    "propose_patch",
    "Propose a counterfactual patch (unified diff against the buggy tree).",
    {
        "kind": {"type": "string", "enum": ["wrong", "correct"]},
        "patch": {"type": "string"},
        "rationale": {"type": "string"},
        "shortcut": {"type": "string", "enum": list(SHORTCUTS)},
        "varies": {"type": "string"},
    },
    ["kind", "patch", "rationale"],
)
DONE = _tool("done", "Finish proposing counterfactual patches.", {}, [])


@attrs.define
class LLMJudge:
    """Judge backed by a chat model; see the module docstring for the protocol."""

    client: ChatClient
    max_turns: int = 16
    max_garbage: int = 3
    name: str = "llm"

    def gold_fixes_issue(self, ctx: JudgeContext) -> Finding:
        prompt = Q1.format(
            issue=ctx.problem_statement,
            gold=ctx.gold_patch,
            measurements=json.dumps(dict(ctx.measurements), default=str)[:4000],
        )
        return self._ask(ctx, prompt)

    def issue_states_tests(self, ctx: JudgeContext, evidence: str) -> Finding:
        tests = ", ".join(ctx.fail_to_pass)
        return self._ask(
            ctx, Q3.format(evidence=evidence, issue=ctx.problem_statement, tests=tests)
        )

    def counterfactuals(self, ctx: JudgeContext) -> list[Counterfactual]:
        proposals: list[Counterfactual] = []
        prompt = Q2.format(
            withheld=", ".join(ctx.graded_files) or "none",
            tests=", ".join((*ctx.fail_to_pass, *ctx.pass_to_pass)),
            issue=ctx.problem_statement,
            gold=ctx.gold_patch,
        )

        def propose(args: dict[str, Any]) -> str:
            return self._propose(ctx, args, proposals)

        self._loop(ctx, prompt, [READ, LIST, PROPOSE, DONE], {"propose_patch": propose}, "done")
        return proposals

    def usage(self) -> dict[str, int]:
        return self.client.usage.to_json()

    # -- the tool loop ---------------------------------------------------------------------

    def _ask(self, ctx: JudgeContext, prompt: str) -> Finding:
        answers: list[Finding] = []

        def answer(args: dict[str, Any]) -> str:
            holds = args.get("holds")
            if not isinstance(holds, bool):
                return "error: `holds` must be a boolean"
            rewrite = args.get("rewritten_issue")
            answers.append(
                Finding(holds, str(args.get("rationale", "")), str(rewrite) if rewrite else None)
            )
            return "recorded"

        self._loop(ctx, prompt, [READ, LIST, ANSWER], {"answer": answer}, "answer", answers)
        return answers[-1]

    def _loop(
        self,
        ctx: JudgeContext,
        prompt: str,
        tools: list[dict[str, Any]],
        handlers: dict[str, Callable[[dict[str, Any]], str]],
        finisher: str,
        finished: list[Finding] | None = None,
    ) -> None:
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ]
        garbage = 0
        for _turn in range(self.max_turns):
            reply = self.client.complete(messages, tools)
            messages.append(reply.message | {"role": "assistant"})
            if not reply.tool_calls:
                garbage += 1
                if garbage > self.max_garbage:
                    raise JudgeGarbageError(f"judge made no tool call {garbage} times in a row")
                messages.append(
                    {
                        "role": "user",
                        "content": f"Reply with a tool call; finish with `{finisher}`.",
                    }
                )
                continue
            done = False
            for call in reply.tool_calls:
                result = self._dispatch(ctx, call, handlers)
                if result.startswith("error:"):
                    garbage += 1
                else:
                    garbage = 0
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                if call.name == finisher and not result.startswith("error:"):
                    done = True
            if garbage > self.max_garbage:
                raise JudgeGarbageError(f"judge sent {garbage} unusable tool calls in a row")
            if done and (finished is None or finished):
                return
        raise JudgeGarbageError(f"judge did not call `{finisher}` within {self.max_turns} turns")

    def _dispatch(
        self,
        ctx: JudgeContext,
        call: ChatToolCall,
        handlers: dict[str, Callable[[dict[str, Any]], str]],
    ) -> str:
        if "__invalid__" in call.arguments:
            return f"error: arguments of {call.name} are not a JSON object"
        if call.name == "read_file":
            try:
                return ctx.read_file(str(call.arguments.get("path", "")))[:_MAX_FILE_CHARS]
            except (FileNotFoundError, IsADirectoryError, PermissionError, ValueError) as exc:
                return f"error: {exc}"
        if call.name == "list_files":
            return "\n".join(ctx.list_files()[:2000])
        if call.name == "done":
            return "finished"
        handler = handlers.get(call.name)
        if handler is None:
            return f"error: unknown tool {call.name!r}"
        return handler(call.arguments)

    @staticmethod
    def _propose(ctx: JudgeContext, args: dict[str, Any], out: list[Counterfactual]) -> str:
        kind_raw, patch = args.get("kind"), args.get("patch")
        if kind_raw not in ("wrong", "correct") or not isinstance(patch, str):
            return "error: need kind in {wrong, correct} and a patch string"
        shortcut, varies = args.get("shortcut"), str(args.get("varies") or "").strip()
        if kind_raw == "wrong" and shortcut not in SHORTCUTS:
            return f"error: a wrong patch needs `shortcut` in {list(SHORTCUTS)}"
        if kind_raw == "correct" and not varies:
            return "error: a correct alternative needs `varies`: what the issue leaves open"
        graded_files = {t.split("::", 1)[0] for t in (*ctx.fail_to_pass, *ctx.pass_to_pass)}
        try:
            paths = touched_paths(patch)
            if (graded_files | set(ctx.graded_files)) & set(paths):
                return "error: counterfactuals may not edit graded test files"
            files: dict[str, str] = {}
            for path in paths:
                files[path] = ctx.read_file(path)
            patched = apply_patch(files, patch)
        except (PatchFormatError, CuratePatchApplyError, FileNotFoundError) as exc:
            return f"error: patch rejected: {exc}"
        if kind_raw == "wrong" and (leaked := withheld_literals(ctx, files, patched)):
            return (
                f"error: patch rejected: it hard-codes {leaked}, which appear only in the "
                "withheld tests (an agent cannot see them); derive wrong patches from the issue"
            )
        out.append(
            Counterfactual(
                Kind(kind_raw),
                "llm",
                f"{shortcut or 'correct'}: {str(args.get('rationale', ''))[:500]}",
                patch,
                f"{varies} (left open by the issue)" if kind_raw == "correct" else "",
            )
        )
        return f"accepted as {kind_raw} counterfactual #{len(out)}"


_TRIVIAL = frozenset({0, 1, -1, 2, ""})


def _constants(files: dict[str, str]) -> set[tuple[str, Any]]:
    """Every number and string literal of the Python files (``-5`` counts as ``-5``)."""
    found: set[tuple[str, Any]] = set()
    for path, text in files.items():
        if not path.endswith(".py"):
            continue
        try:
            module = parse_source(text)
        except SyntaxError:
            continue
        negated: set[int] = set()
        for node in ast.walk(module):
            if (
                isinstance(node, ast.UnaryOp)
                and isinstance(node.op, ast.USub)
                and isinstance(node.operand, ast.Constant)
                and isinstance(node.operand.value, int | float)
            ):
                negated.add(id(node.operand))
                found.add((type(node.operand.value).__name__, -node.operand.value))
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, int | float | str)
                and id(node) not in negated
            ):
                found.add((type(node.value).__name__, node.value))
    return found


def withheld_literals(
    ctx: JudgeContext, before: dict[str, str], after: dict[str, str]
) -> list[str]:
    """Literals a patch adds that the withheld tests hold but neither the issue, the patched
    files before the patch, nor the gold patch does: knowledge an agent cannot have."""
    withheld: dict[str, str] = {}
    for path in ctx.graded_files:
        try:
            withheld[path] = ctx.read_file(path)
        except (FileNotFoundError, ValueError):
            continue
    added = _constants(after) - _constants(before)
    hidden = _constants(withheld) - _constants(before)
    with contextlib.suppress(CuratePatchApplyError, PatchFormatError):
        hidden -= _constants(PatchedTree.from_patch(ctx.gold_sources(), ctx.gold_patch).gold)
    issue = ctx.problem_statement
    return sorted(
        repr(value)
        for _, value in added & hidden
        if value not in _TRIVIAL and repr(value) not in issue and str(value) not in issue
    )
