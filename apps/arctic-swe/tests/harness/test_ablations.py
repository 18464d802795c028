"""Tests for ``arctic_swe.harness._ablations``: the lenient verdict (in the run's dialect), the ungated gate, and both
ablations end to end through the real namespace sandbox."""

import asyncio

from hypothesis import given
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe.deck import DeckTask, StoredDeck
from arctic_swe.harness import (
    TOOLS,
    HarnessConfig,
    ScriptedSampler,
    Trajectory,
    run_episode,
)
from arctic_swe.harness._ablations import lenient_verdict
from arctic_swe.warmstart import expert_turns
from swe_formatcheck import ToolCall, check_turn, parse_lenient, render_turn
from swe_sandbox import NamespaceBackend, SandboxPool

SUBMIT = render_turn("Submit.", ToolCall("submit", {}))
# Values without markup or edge newlines: what a strict render round-trips exactly.
VALUES = st.text(
    st.characters(blacklist_characters="<>\r", blacklist_categories=("Cs",)), min_size=1
).filter(lambda v: v.strip("\n") == v and v.strip() != "")


@given(command=VALUES)
def test_lenient_call_reads_every_valid_turn_like_the_strict_check(command: str) -> None:
    raw = render_turn("Run it.", ToolCall("execute_bash", {"command": command}))
    strict = check_turn(raw, tools=TOOLS)
    assert strict.ok
    assert parse_lenient(raw, tools=TOOLS) == strict.call


@given(old=VALUES, new=VALUES, tail=st.sampled_from(["", "</function>", "</parameter>"]))
def test_lenient_call_repairs_an_unclosed_envelope(old: str, new: str, tail: str) -> None:
    """Cut after the last value: public parsers still run it, the strict check does not."""
    call = ToolCall("edit_via_str_replace", {"path": "a.py", "old_str": old, "new_str": new})
    raw = render_turn("Fix.", call)
    cut = raw[: raw.rindex("</parameter>")] + tail
    assert not check_turn(cut, tools=TOOLS).ok
    assert parse_lenient(cut, tools=TOOLS) == call


def test_lenient_call_last_duplicate_wins_and_unknown_tools_are_refused() -> None:
    raw = render_turn("ls", ToolCall("execute_bash", {"command": "ls"})).replace(
        "</function>", "<parameter=command>\nrm -rf tests\n</parameter>\n</function>"
    )
    strict = check_turn(raw, tools=TOOLS)
    assert strict.codes == ("duplicate_parameter",)
    verdict = lenient_verdict(strict, raw, TOOLS, "qwen3_coder")
    assert verdict.ok
    assert verdict.call == ToolCall("execute_bash", {"command": "rm -rf tests"})
    assert (
        parse_lenient("<tool_call>\n<function=rm_all>\n</function>\n</tool_call>", tools=TOOLS)
        is None
    )
    missing = "<tool_call>\n<function=edit_via_str_replace>\n<parameter=path>\na\n</parameter>"
    assert parse_lenient(missing, tools=TOOLS) is None  # a required parameter is absent
    assert parse_lenient("no call at all", tools=TOOLS) is None
    assert (
        lenient_verdict(check_turn("plain", tools=TOOLS), "plain", TOOLS, "qwen3_coder").call
        is None
    )


def test_lenient_verdict_repairs_in_the_dialect_the_turn_was_checked_in() -> None:
    """Under hermes the lenient ablation reads JSON (it used to read XML only, so a repairable
    hermes turn was refused exactly as the strict check refuses it)."""
    call = ToolCall("execute_bash", {"command": "ls"})
    cut = render_turn("ls", call, dialect="hermes").removesuffix("\n</tool_call>")
    strict = check_turn(cut, tools=TOOLS, dialect="hermes")
    assert strict.codes == ("envelope_unclosed",)
    assert lenient_verdict(strict, cut, TOOLS, "hermes").call == call
    # the other dialect's forgiving parser finds nothing in it: the dialect must be the run's
    assert lenient_verdict(strict, cut, TOOLS, "qwen3_coder") is strict


def _episode(
    task: DeckTask, turns: list[str], tok: PreTrainedTokenizerFast, config: HarnessConfig,
    backend: NamespaceBackend,
) -> Trajectory:  # fmt: skip
    async def go() -> Trajectory:
        async with SandboxPool(backend, max_concurrency=1) as pool, pool.sandbox(task.spec) as box:
            return await run_episode(task.spec, ScriptedSampler(tok, turns), box, tok, config)

    return asyncio.run(go())


def _unclosed(turn: str) -> str:
    """The expert's edit with its envelope cut short (a turn a lenient parser still runs)."""
    return turn[: turn.rindex("</parameter>")]


def test_lenient_format_runs_a_repaired_edit_and_records_its_codes(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    read, edit, _, _ = expert_turns(task)
    turns = [read, _unclosed(edit), SUBMIT]
    strict = _episode(task, turns, deck_tokenizer, HarnessConfig(max_turns=8), backend)
    assert (strict.termination, strict.reward, strict.raw_reward) == ("invalid_format", 0.0, None)
    lenient_config = HarnessConfig(max_turns=8, strict_format=False)
    lenient = _episode(task, turns, deck_tokenizer, lenient_config, backend)
    assert (lenient.termination, lenient.reward) == ("submitted", 1.0)
    repaired = lenient.turns[1]
    assert repaired.codes
    assert repaired.tool == "edit_via_str_replace"
    assert repaired.observation is not None
    assert "Edited" in repaired.observation


def _in_hermes(turn: str) -> str:
    verdict = check_turn(turn, tools=TOOLS)
    assert verdict.call is not None
    return render_turn(verdict.reasoning, verdict.call, dialect="hermes")


def test_lenient_format_under_hermes_runs_a_repaired_edit(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    """The run's dialect reaches the lenient ablation: under hermes a cut-short JSON edit is
    refused by the strict check and repaired (and run) by the lenient one."""
    task = small_deck.split("pool")[0]
    read, edit, _, submit = (_in_hermes(turn) for turn in expert_turns(task))
    turns = [read, edit.removesuffix("\n</tool_call>"), submit]
    hermes = HarnessConfig(max_turns=8, tool_dialect="hermes")
    strict = _episode(task, turns, deck_tokenizer, hermes, backend)
    assert (strict.termination, strict.reward) == ("invalid_format", 0.0)
    lenient_config = HarnessConfig(max_turns=8, tool_dialect="hermes", strict_format=False)
    lenient = _episode(task, turns, deck_tokenizer, lenient_config, backend)
    assert (lenient.termination, lenient.reward) == ("submitted", 1.0)
    repaired = lenient.turns[1]
    assert repaired.codes == ("envelope_unclosed",)
    assert repaired.tool == "edit_via_str_replace"
    assert repaired.observation is not None
    assert "Edited" in repaired.observation


def test_ungated_reward_grades_the_final_state_whatever_ended_the_episode(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[1]
    read, edit, test, _ = expert_turns(task)
    config = HarnessConfig(max_turns=5, gated_reward=False)
    # an invalid turn and a repeated call do not end it; the turn budget does; the fix is graded
    turns = [read, "not a tool call", read, edit, test]
    ungated = _episode(task, turns, deck_tokenizer, config, backend)
    assert ungated.termination == "turn_budget"
    assert (ungated.raw_reward, ungated.reward) == (1.0, 1.0)
    feedback = ungated.turns[1]
    assert feedback.tool is None
    assert feedback.codes
    assert feedback.observation is not None
    assert feedback.observation.startswith("Error:")
    gated = _episode(task, turns, deck_tokenizer, HarnessConfig(max_turns=5), backend)
    assert (gated.termination, gated.reward, len(gated.turns)) == ("invalid_format", 0.0, 2)


def test_an_edit_of_a_missing_file_is_an_observation(
    small_deck: StoredDeck, deck_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[2]
    call = ToolCall(
        "edit_via_str_replace", {"path": "nope/none.py", "old_str": "a", "new_str": "b"}
    )
    trajectory = _episode(
        task, [render_turn("Edit.", call), SUBMIT], deck_tokenizer, HarnessConfig(), backend
    )
    assert trajectory.termination == "submitted"
    observation = trajectory.turns[0].observation
    assert observation is not None
    assert observation.startswith("Error: nope/none.py")
