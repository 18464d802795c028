"""Tests for ``arctic_swe.warmstart._expert`` (and ``collect_expert`` through real sandboxes)."""

import asyncio
from pathlib import Path

from transformers import PreTrainedTokenizerFast

from arctic_swe.deck import Deck
from arctic_swe.harness import TOOLS
from arctic_swe.warmstart import TEST_COMMAND, collect_expert, expert_turns
from swe_formatcheck import ToolCall, check_turn
from swe_sandbox import NamespaceBackend


def test_expert_turns_are_valid_and_make_the_gold_edit(small_deck: Deck) -> None:
    for task in small_deck:
        calls = [check_turn(turn, tools=TOOLS).call for turn in expert_turns(task)]
        assert calls == [
            ToolCall("execute_bash", {"command": f"cat {task.bug_path}"}),
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


def test_collected_expert_trajectories_all_score_one(
    small_deck: Deck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
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
