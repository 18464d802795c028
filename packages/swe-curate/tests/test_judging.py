"""Pipeline 2 on real tasks: counterfactuals scored by the real sandbox grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curate_openai_server import Delay, Raw, reply_text, reply_tool_calls, serve
from curate_tasks import make_task

from swe_curate._chat import ChatClient, ChatConfig
from swe_curate._diff import make_patch
from swe_curate._judge import OfflineJudge
from swe_curate._judging import judge_task
from swe_curate._llm_judge import LLMJudge
from swe_curate._scorer import SandboxScorer
from swe_curate._verdicts import Verdict


def test_good_task_is_accepted(tmp_path: Path, scorer: SandboxScorer) -> None:
    rec = judge_task(make_task(tmp_path, "good"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.ACCEPTED, (rec.reason, rec.measurements)
    q2 = rec.measurements["q2"]
    assert q2["wrong"] >= 3
    assert q2["correct"] >= 1
    assert q2["wrong_passing"] == 0
    # The off-by-one `x <= lo` returns lo either way: an equivalent mutant, probed and discounted.
    assert q2["equivalent_suspects"] >= 1
    assert all(e["reward"] == 1 for e in rec.evidence if e["kind"] == "correct")


def test_loose_suite_is_too_loose_with_the_shortcut_as_evidence(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    rec = judge_task(make_task(tmp_path, "loose"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.TOO_LOOSE, rec.reason
    passing = [
        e
        for e in rec.evidence
        if e["kind"] == "wrong" and e["reward"] == 1 and not e.get("equivalent_suspect")
    ]
    assert "special_case_issue_example" in {e["mutator"] for e in passing}


def test_implementation_detail_suite_is_over_restrictive(
    tmp_path: Path, scorer: SandboxScorer
) -> None:
    rec = judge_task(make_task(tmp_path, "implementation"), scorer, OfflineJudge())
    assert rec.verdict is Verdict.OVER_RESTRICTIVE, rec.reason
    failing = [e for e in rec.evidence if e["kind"] == "correct" and e["reward"] == 0]
    assert failing
    assert all(
        e["tests"]["tests/test_ops.py::test_guard_is_written_as_documented"] == "failed"
        for e in failing
    )
    assert all(
        e["tests"]["tests/test_ops.py::test_clamp_matches_reference"] == "passed" for e in failing
    )


def _llm(url: str, timeout_s: float = 30.0) -> LLMJudge:
    return LLMJudge(
        ChatClient(
            ChatConfig(
                base_url=url, model="judge", timeout_s=timeout_s, max_retries=1, backoff_s=0.01
            )
        )
    )


def _shortcut_model(body: dict[str, Any]) -> Any:
    """A judge model that answers Q1 yes, proposes a hard-coding shortcut, then Q3 yes."""
    prompt = body["messages"][1]["content"]
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if prompt.startswith("Question 2"):
        if not results:
            return reply_tool_calls(("read_file", {"path": "geom/ops.py"}))
        if len(results) == 1:
            source = results[0]
            wrong = source.replace(
                '    """Clamp x into the closed interval [lo, hi]."""\n',
                '    """Clamp x into the closed interval [lo, hi]."""\n    if (x, lo, hi) == (-5, 0, 10):\n        return 0\n',
            )
            return reply_tool_calls(
                (
                    "propose_patch",
                    {
                        "kind": "wrong",
                        "patch": make_patch({"geom/ops.py": source}, {"geom/ops.py": wrong}),
                        "rationale": "hard-code",
                        "shortcut": "special_case_example",
                    },
                )
            )
        return reply_tool_calls(("done", {}))
    return reply_tool_calls(("answer", {"holds": True, "rationale": "ok"}))


def test_llm_judge_through_the_pipeline(tmp_path: Path, scorer: SandboxScorer) -> None:
    with serve(_shortcut_model) as srv:
        rec = judge_task(make_task(tmp_path, "loose"), scorer, _llm(srv.base_url))
    assert rec.verdict is Verdict.TOO_LOOSE, rec.reason
    (evidence,) = rec.evidence
    assert evidence["mutator"] == "llm"
    assert evidence["reward"] == 1
    assert rec.measurements["judge_usage"]["requests"] == len(srv.requests)


def test_judge_garbage_and_timeouts_are_recorded(tmp_path: Path, scorer: SandboxScorer) -> None:
    task = make_task(tmp_path, "good")
    with serve(lambda body: Raw(200, b"<html>502 Bad Gateway</html>")) as srv:
        garbage = judge_task(task, scorer, _llm(srv.base_url))
    assert garbage.verdict is Verdict.JUDGE_GARBAGE
    assert "not a chat completion" in garbage.reason
    with serve(lambda body: Delay(2.0, reply_text("late"))) as srv:
        slow = judge_task(task, scorer, _llm(srv.base_url, timeout_s=0.3))
    assert slow.verdict is Verdict.JUDGE_TIMEOUT
    with serve(lambda body: reply_text("looks fine to me")) as srv:
        silent = judge_task(task, scorer, _llm(srv.base_url))
    assert silent.verdict is Verdict.JUDGE_GARBAGE
    assert "no tool call" in silent.reason
