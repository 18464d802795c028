"""The LLM judge's tool loop against a real local OpenAI-compatible server with a scripted model:
it reads files, proposes patches (a broken one gets a precise error back), answers questions;
garbage and silence become typed errors."""

from __future__ import annotations

from typing import Any

import pytest
from curate_openai_server import Delay, reply_text, reply_tool_calls, serve

from swe_curate._chat import ChatClient, ChatConfig
from swe_curate._counterfactual import Kind
from swe_curate._diff import make_patch
from swe_curate._errors import JudgeGarbageError, JudgeTimeoutError
from swe_curate._judge import JudgeContext
from swe_curate._llm_judge import LLMJudge

BUGGY = "def clamp(x, lo, hi):\n    if x > hi:\n        return hi\n    return x\n"
GOLD = "def clamp(x, lo, hi):\n    if x > hi:\n        return hi\n    if x < lo:\n        return lo\n    return x\n"
TEST = "from pkg.m import clamp\n\ndef test_low():\n    assert clamp(-5, 0, 10) == 0\n"
FILES = {"pkg/m.py": BUGGY, "tests/test_m.py": TEST}


def _ctx() -> JudgeContext:
    def read(path: str) -> str:
        if path not in FILES:
            raise FileNotFoundError(path)
        return FILES[path]

    return JudgeContext(
        instance_id="demo-1",
        problem_statement="clamp() ignores the lower bound",
        gold_patch=make_patch({"pkg/m.py": BUGGY}, {"pkg/m.py": GOLD}),
        test_patch="",
        fail_to_pass=("tests/test_m.py::test_low",),
        pass_to_pass=(),
        read_file=read,
        list_files=lambda: sorted(FILES),
        graded_files=("tests/test_m.py",),
    )


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def scripted_model(body: dict[str, Any]) -> Any:
    """A deterministic 'model' that behaves like a careful judge, turn by turn."""
    prompt = body["messages"][1]["content"]
    results = _tool_results(body)
    if prompt.startswith("Question 1"):
        if not results:
            return reply_tool_calls(("read_file", {"path": "pkg/m.py"}))
        return reply_tool_calls(("answer", {"holds": True, "rationale": "adds the lower bound"}))
    if prompt.startswith("Question 2"):
        step = len(results)
        if step == 0:
            return reply_tool_calls(("list_files", {}), ("read_file", {"path": "pkg/m.py"}))
        if step == 2:
            return reply_tool_calls(
                (
                    "propose_patch",
                    {
                        "kind": "wrong",
                        "patch": "not a diff",
                        "rationale": "x",
                        "shortcut": "partial",
                    },
                )
            )
        if step == 3:
            source = results[1]

            def proposal(kind: str, new_source: str, **extra: str) -> tuple[str, dict[str, str]]:
                patch = make_patch({"pkg/m.py": source}, {"pkg/m.py": new_source})
                return ("propose_patch", {"kind": kind, "patch": patch, "rationale": "r", **extra})

            hidden = source.replace(
                "    return x\n", "    if x == -5:\n        return 0\n    return x\n"
            )
            edge = source.replace(
                "    return x\n", "    if x < lo - 1:\n        return lo\n    return x\n"
            )
            correct = source.replace("    return x\n", "    return max(x, lo)\n")
            return reply_tool_calls(
                proposal("wrong", hidden, shortcut="special_case_example"),
                proposal("wrong", edge, shortcut="edge_case"),
                proposal("wrong", edge),
                proposal("correct", correct, varies="max() instead of an if"),
                proposal("correct", correct),
                (
                    "propose_patch",
                    {
                        "kind": "wrong",
                        "patch": make_patch({"tests/test_m.py": TEST}, {"tests/test_m.py": ""}),
                        "rationale": "cheat",
                        "shortcut": "partial",
                    },
                ),
            )
        return reply_tool_calls(("done", {}))
    if prompt.startswith("Question 3"):
        return reply_tool_calls(
            (
                "answer",
                {
                    "holds": False,
                    "rationale": "bound not stated",
                    "rewritten_issue": "clamp(x, lo, hi) must return lo when x < lo",
                },
            )
        )
    return reply_text("confused")


def _judge(url: str, **kw: Any) -> LLMJudge:
    client = ChatClient(ChatConfig(base_url=url, model="fake-judge", backoff_s=0.01, **kw))
    return LLMJudge(client)


def test_three_questions_through_tool_calls() -> None:
    with serve(scripted_model) as srv:
        judge = _judge(srv.base_url)
        q1 = judge.gold_fixes_issue(_ctx())
        cfs = judge.counterfactuals(_ctx())
        q3 = judge.issue_states_tests(_ctx(), "wrong patch passed")
    assert q1.holds
    # Refused: not a diff, a literal only the withheld tests hold, no `shortcut`, no `varies`,
    # an edit of a graded test file.
    assert [cf.kind for cf in cfs] == [Kind.WRONG, Kind.CORRECT]
    assert "if x < lo - 1" in cfs[0].patch
    assert cfs[0].description.startswith("edge_case:")
    assert cfs[1].requirement == "max() instead of an if (left open by the issue)"
    assert not q3.holds
    assert q3.rewritten_issue == "clamp(x, lo, hi) must return lo when x < lo"
    q2_requests = [r for r in srv.requests if r["messages"][1]["content"].startswith("Question 2")]
    errors = [c for c in _tool_results(q2_requests[-1]) if c.startswith("error:")]
    assert any("not a unified diff" in e for e in errors)
    assert any("graded test files" in e for e in errors)
    assert any("hard-codes ['-5'], which appear only in the withheld tests" in e for e in errors)
    assert any("needs `shortcut`" in e for e in errors)
    assert any("needs `varies`" in e for e in errors)
    assert (
        "never from the withheld tests (tests/test_m.py)"
        in q2_requests[0]["messages"][1]["content"]
    )
    tool_ids = {m["tool_call_id"] for m in q2_requests[-1]["messages"] if m["role"] == "tool"}
    assert tool_ids == {f"call_{i}" for i in range(6)}
    assert {t["function"]["name"] for t in q2_requests[0]["tools"]} == {
        "read_file",
        "list_files",
        "propose_patch",
        "done",
    }
    usage = judge.usage()
    assert usage["requests"] == len(srv.requests)
    assert usage["total_tokens"] == 18 * len(srv.requests)


def test_a_judge_that_never_calls_tools_is_garbage() -> None:
    with (
        serve(lambda body: reply_text("I think it is fine.")) as srv,
        pytest.raises(JudgeGarbageError, match="no tool call"),
    ):
        _judge(srv.base_url).gold_fixes_issue(_ctx())
    assert len(srv.requests) == 4  # max_garbage (3) + 1


def test_invalid_arguments_and_unknown_tools_get_feedback_then_give_up() -> None:
    calls = iter(
        [
            ("answer", "{oops"),
            ("rm_rf", {}),
            ("answer", {"holds": "yes"}),
            ("answer", {"holds": "no"}),
        ]
    )
    with (
        serve(lambda body: reply_tool_calls(next(calls))) as srv,
        pytest.raises(JudgeGarbageError, match="unusable"),
    ):
        _judge(srv.base_url).gold_fixes_issue(_ctx())
    feedback = _tool_results(srv.requests[-1])
    assert feedback[0] == "error: arguments of answer are not a JSON object"
    assert feedback[1] == "error: unknown tool 'rm_rf'"
    assert feedback[2] == "error: `holds` must be a boolean"


def test_a_judge_that_never_finishes_runs_out_of_turns() -> None:
    with serve(lambda body: reply_tool_calls(("list_files", {}))) as srv:
        judge = _judge(srv.base_url)
        judge.max_turns = 3
        with pytest.raises(JudgeGarbageError, match="within 3 turns"):
            judge.counterfactuals(_ctx())


def test_a_judge_that_times_out_is_a_timeout() -> None:
    with (
        serve(lambda body: Delay(1.0, reply_text("late"))) as srv,
        pytest.raises(JudgeTimeoutError),
    ):
        _judge(srv.base_url, timeout_s=0.2, max_retries=1).gold_fixes_issue(_ctx())
