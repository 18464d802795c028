"""Tests for ``arctic_swe.warmstart._expert`` (and ``collect_expert`` through real sandboxes)."""

import asyncio
from pathlib import Path

from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import encode
from arctic_swe.deck import DeckConfig, StoredDeck, write_deck
from arctic_swe.harness import TOOLS
from arctic_swe.warmstart import TEST_COMMAND, collect_expert, expert_turns
from swe_formatcheck import ToolCall, check_turn
from swe_sandbox import NamespaceBackend


def test_expert_turns_are_valid_and_make_the_gold_edit(small_deck: StoredDeck) -> None:
    for task in small_deck:
        calls = [check_turn(turn, tools=TOOLS).call for turn in expert_turns(task)]
        assert calls == [
            ToolCall("execute_bash", {"command": f"cat ./{task.bug_path}"}),
            ToolCall(
                "edit_via_str_replace",
                {"path": task.bug_path, "old_str": task.old_line, "new_str": task.new_line},
            ),
            ToolCall("execute_bash", {"command": TEST_COMMAND}),
            ToolCall("submit", {}),
        ]
        buggy = Path(task.spec.repo.location, task.bug_path).read_text()
        removed = [
            line[1:] for line in task.spec.gold_patch.splitlines() if line.startswith("-    ")
        ]
        added = [line[1:] for line in task.spec.gold_patch.splitlines() if line.startswith("+    ")]
        assert removed == [f"    {task.old_line}"]
        assert added == [f"    {task.new_line}"]
        assert buggy.count(task.old_line) == 1


def _span(ids: list[int], tokenizer: PreTrainedTokenizerFast, text: str) -> list[int]:
    """The shortest run of ``ids`` that decodes to exactly ``text``."""
    found = [
        ids[i:j]
        for i in range(len(ids))
        for j in range(i + 1, len(ids) + 1)
        if tokenizer.decode(ids[i:j]) == text
    ]
    assert found, text
    return min(found, key=len)


def _count(ids: list[int], span: list[int]) -> int:
    return sum(ids[i : i + len(span)] == span for i in range(len(ids)))


def test_copied_names_keep_their_issue_tokens(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast
) -> None:
    """The path and both lines are written with exactly the token ids they have in the issue,
    so the policy copies ids instead of remapping ``name`` to `` name``."""
    for task in small_deck:
        issue = encode(deck_tokenizer, task.spec.problem_statement)
        path = _span(issue, deck_tokenizer, task.bug_path)
        read, edit, _, _ = (encode(deck_tokenizer, turn) for turn in expert_turns(task))
        assert _count(read, path) == 2  # reasoning and command
        assert _count(edit, path) == 1
        for line in (task.old_line, task.new_line):
            assert _count(edit, _span(issue, deck_tokenizer, line)) == 1


def test_collected_expert_trajectories_all_score_one(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    tasks = small_deck.split("warmstart")
    done: list[str] = []
    trajectories = asyncio.run(
        collect_expert(
            tasks, deck_tokenizer, backend, grade=True, on_done=lambda t: done.append(t.task_id)
        )
    )
    assert [t.task_id for t in trajectories] == [t.instance_id for t in tasks]
    assert sorted(done) == sorted(t.instance_id for t in tasks)
    assert [t.reward for t in trajectories] == [1.0] * len(tasks)


def test_the_expert_solves_behaviour_style_tasks(
    deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend, tmp_path: Path
) -> None:
    """The issue no longer quotes the fix; the expert (an oracle reading the task's hidden fix
    fields) still submits a solving edit, so the warm start has SFT data on such a deck."""
    config = DeckConfig(5, pool_size=1, heldout_size=0, warmstart_size=2, issue_style="behaviour")
    tasks = write_deck(tmp_path / "deck", config).split("warmstart")
    assert all(task.new_line not in task.spec.problem_statement for task in tasks)
    trajectories = asyncio.run(collect_expert(tasks, deck_tokenizer, backend, grade=True))
    assert [t.termination for t in trajectories] == ["submitted"] * len(tasks)
    assert [t.reward for t in trajectories] == [1.0] * len(tasks)
