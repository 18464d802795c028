"""Tests for ``arctic_swe.harness._durations``: pytest's durations masked, nothing else."""

import asyncio
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.deck import StoredDeck
from arctic_swe.harness import TINY_HARNESS, HarnessConfig, mask_durations, run_tool
from swe_formatcheck import ToolCall
from swe_sandbox import NamespaceBackend, SandboxPool

OUTCOMES = ["passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed", "warning",
            "warnings", "deselected"]  # fmt: skip

counts = st.lists(
    st.tuples(st.integers(0, 9999), st.sampled_from(OUTCOMES)), min_size=1, max_size=4
).map(lambda parts: ", ".join(f"{n} {word}" for n, word in parts))
seconds = st.floats(0, 10_000, allow_nan=False).map(lambda s: f"{s:.2f}s")
clock = st.one_of(st.just(""), st.integers(0, 9).map(lambda h: f" (0{h}:01:15)"))
rule = st.sampled_from(["", "=" * 5, "=" * 31])
prose = st.text(st.characters(exclude_categories=["Cs"]), max_size=80)


def _summary(count: str, duration: str, when: str, side: str) -> str:
    line = f"{count} in {duration}{when}"
    return f"{side} {line} {side}" if side else line


@given(counts, seconds, seconds, clock, rule)
def test_two_summaries_that_differ_only_in_time_mask_to_the_same_line(
    count: str, first: str, second: str, when: str, side: str
) -> None:
    one, two = _summary(count, first, when, side), _summary(count, second, "", side)
    masked = mask_durations(one)
    assert masked == mask_durations(two)
    assert masked == (f"{side} {count} {side}" if side else count)  # the counts stay


@given(prose, counts, seconds, prose)
def test_only_the_summary_line_changes_and_masking_is_idempotent(
    before: str, count: str, duration: str, after: str
) -> None:
    before, after = before.replace("\n", " "), after.replace("\n", " ")
    text = f"{before}\n{count} in {duration}\n{after}"
    masked = mask_durations(text)
    assert masked.split("\n")[0] == mask_durations(before)
    assert masked.split("\n")[2] == mask_durations(after)
    assert masked.split("\n")[1] == count
    assert mask_durations(masked) == masked


@pytest.mark.parametrize(
    "text",
    [
        "took 0.02s in total",  # not a summary line
        "7 passed in a hurry",
        "print('3 passed in 0.5s')  # source code quoting a summary mid-line",
        "FAILED tests/test_x.py::test_y - assert 1 == 2",
        "",
    ],
)
def test_text_without_a_summary_line_is_unchanged(text: str) -> None:
    assert mask_durations(text) == text


def test_real_pytest_summaries() -> None:
    assert mask_durations(".......  [100%]\n7 passed in 0.02s") == ".......  [100%]\n7 passed"
    assert mask_durations("1 failed, 6 passed, 2 warnings in 75.10s (0:01:15)") == (
        "1 failed, 6 passed, 2 warnings"
    )
    assert mask_durations("===== no tests ran in 0.01s =====") == "===== no tests ran ====="


def test_run_tool_masks_pytest_output_in_the_embedded_preset_only(
    small_deck: StoredDeck, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    call = ToolCall("execute_bash", {"command": "python3 -m pytest -q"})

    async def observe(config: HarnessConfig) -> str:
        async with SandboxPool(backend, max_concurrency=1) as pool, pool.sandbox(task.spec) as box:
            return await run_tool(box, call, config)

    verbatim = asyncio.run(observe(HarnessConfig(observation_chars=1200)))  # the default: off
    masked = asyncio.run(observe(TINY_HARNESS))
    assert re.search(r"\d+ (passed|failed).* in \d+\.\d+s$", verbatim)  # pytest printed a time
    assert not re.search(r" in \d+\.\d+s", masked)
    assert masked == mask_durations(verbatim)  # the rest of the output is the same
