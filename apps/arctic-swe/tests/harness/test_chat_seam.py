"""The harness renders with the checkpoint's own chat template (``arctic_swe.chat.ChatFormat``):
an episode under the Qwen3.5-format template, in the real namespace sandbox, appends exactly the
template's prompt and observation deltas, checks turns in the template's dialect and prefill,
and its token history is the template's rendering of the whole conversation."""

import asyncio
from pathlib import Path
from typing import Any

import pytest
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import (
    IM_END,
    TEMPLATES,
    chat_format,
    encode,
    load_tokenizer,
    special_id,
    train_tokenizer,
)
from arctic_swe.deck import DeckTask, StoredDeck
from arctic_swe.engine import EngineConfig, TorchEngine
from arctic_swe.harness import (
    TINY_HARNESS,
    TOOLS,
    EngineSampler,
    HarnessConfig,
    HarnessError,
    ScriptedSampler,
    Trajectory,
    prompt_text,
    run_episode,
    run_rollouts,
)
from arctic_swe.model import init_checkpoint, load_policy
from arctic_swe.warmstart import deck_corpus, expert_turns
from swe_formatcheck import check_turn, render_turn
from swe_sandbox import NamespaceBackend, SandboxPool


@pytest.fixture(scope="module")
def qwen_tokenizer(small_deck: StoredDeck) -> PreTrainedTokenizerFast:
    corpus = list(deck_corpus(small_deck, TINY_HARNESS)) * 4
    return train_tokenizer(corpus, vocab_size=1024, chat_template=TEMPLATES["qwen3.5"])


def _turns(task: DeckTask, dialect: str, *, prefilled: bool = True) -> list[str]:
    """The expert's calls, re-rendered for a template whose prompt opens ``<think>``."""
    turns = []
    for raw in expert_turns(task):
        verdict = check_turn(raw, tools=TOOLS)
        assert verdict.call is not None
        reasoning = raw.split("</think>")[0].removeprefix("<think>\n").removesuffix("\n")
        turns.append(
            render_turn(reasoning, verdict.call, dialect=dialect, think_prefilled=prefilled)
        )
    return turns


def _run(
    task: DeckTask,
    turns: list[str],
    tokenizer: PreTrainedTokenizerFast,
    backend: NamespaceBackend,
    config: HarnessConfig = TINY_HARNESS,
) -> Trajectory:
    async def go() -> Trajectory:
        async with SandboxPool(backend, max_concurrency=1) as pool, pool.sandbox(task.spec) as box:
            sampler = ScriptedSampler(tokenizer, turns)
            return await run_episode(task.spec, sampler, box, tokenizer, config)

    return asyncio.run(go())


def _conversation(
    task: DeckTask, trajectory: Trajectory, config: HarnessConfig
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": config.system_prompt},
        {"role": "user", "content": task.spec.problem_statement.rstrip("\n")},
    ]
    for turn in trajectory.turns:
        messages.append({"role": "assistant", "content": turn.raw})
        if turn.observation is not None:
            messages.append({"role": "tool", "content": turn.observation})
    return messages


def test_a_qwen35_episode_appends_exactly_the_templates_tokens(
    small_deck: StoredDeck, qwen_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[0]
    trajectory = _run(task, _turns(task, "qwen3_coder"), qwen_tokenizer, backend)
    assert (trajectory.termination, trajectory.reward) == ("submitted", 1.0)
    assert all(not turn.codes for turn in trajectory.turns)
    fmt = chat_format(qwen_tokenizer, TOOLS)
    prompt = prompt_text(task.spec, TINY_HARNESS, qwen_tokenizer)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")
    assert list(trajectory.token_ids[: trajectory.prompt_length]) == encode(qwen_tokenizer, prompt)
    for turn in trajectory.turns[:-1]:
        frame = trajectory.token_ids[turn.observation_start : turn.observation_end]
        assert list(frame) == fmt.observation_ids(turn.observation or "")
    # The last turn (submit) ends the episode: no observation, the history ends on <|im_end|>.
    messages = _conversation(task, trajectory, TINY_HARNESS)
    whole = fmt.render(messages, add_generation_prompt=False)
    assert list(trajectory.token_ids) == encode(qwen_tokenizer, whole.removesuffix("\n"))


def test_turns_are_checked_in_the_templates_prefill_and_dialect(
    small_deck: StoredDeck, qwen_tokenizer: PreTrainedTokenizerFast, backend: NamespaceBackend
) -> None:
    task = small_deck.split("pool")[1]
    # A turn that opens <think> again after the prefilled one is a format violation here.
    doubled = _run(task, _turns(task, "qwen3_coder", prefilled=False), qwen_tokenizer, backend)
    assert doubled.termination == "invalid_format"
    assert doubled.turns[0].codes
    # An explicit dialect overrides the detected one: hermes turns are then the valid ones.
    hermes = HarnessConfig(
        max_turns=8,
        max_tokens=3072,
        max_new_tokens=200,
        observation_chars=1200,
        tool_dialect="hermes",
    )
    solved = _run(task, _turns(task, "hermes"), qwen_tokenizer, backend, hermes)
    assert (solved.termination, solved.reward) == ("submitted", 1.0)
    with pytest.raises(HarnessError, match="tool_dialect"):
        HarnessConfig(tool_dialect="json")
    # Thinking off: the prompt closes an empty reasoning block; turns carry no reasoning.
    silent = HarnessConfig(
        max_turns=8, max_tokens=3072, max_new_tokens=200, observation_chars=1200,
        enable_thinking=False,
    )  # fmt: skip
    plain = [render_turn(None, check_turn(raw, tools=TOOLS).call) for raw in expert_turns(task)]  # type: ignore[arg-type]
    quiet = _run(task, plain, qwen_tokenizer, backend, silent)
    assert (quiet.termination, quiet.reward) == ("submitted", 1.0)
    assert prompt_text(task.spec, silent, qwen_tokenizer).endswith("<think>\n\n</think>\n\n")
    with pytest.raises(HarnessError, match="enable_thinking"):
        HarnessConfig(enable_thinking="yes")  # type: ignore[arg-type]


def test_a_model_init_checkpoint_is_the_policy_of_real_rollouts(
    small_deck: StoredDeck, backend: NamespaceBackend, tmp_path: Path
) -> None:
    """Policy, tokenizer and template all from one ``model init`` directory: the torch engine
    generates, the harness appends the engine's ids and the template's deltas (ungated, so the
    random policy's invalid turns get an error observation and the episode goes on)."""
    directory = init_checkpoint(tmp_path / "tiny-qwen35", seed=2)
    tokenizer = load_tokenizer(directory)
    model = load_policy(directory)
    fmt = chat_format(tokenizer, TOOLS)
    harness = HarnessConfig(max_turns=2, max_tokens=4096, max_new_tokens=12, gated_reward=False)
    tasks = [task.spec for task in small_deck.split("pool")[:2]]
    stop = special_id(tokenizer, IM_END)

    async def go() -> list[Trajectory]:
        engine = TorchEngine(model, EngineConfig(capacity=2, seed=5, stop_token_ids=(stop,)))
        try:
            async with SandboxPool(backend, max_concurrency=2) as pool:
                return await run_rollouts(
                    tasks, lambda i, _t: EngineSampler(engine, tokenizer, i), pool, tokenizer,
                    harness, grade=False,
                )  # fmt: skip
        finally:
            await engine.close()

    for task, trajectory in zip(tasks, asyncio.run(go()), strict=True):
        ids = list(trajectory.token_ids)
        assert ids[: trajectory.prompt_length] == fmt.prompt_ids(
            harness.system_prompt, task.problem_statement.rstrip("\n")
        )
        assert trajectory.turns[0].observation is not None  # an observation was appended
        for turn in trajectory.turns:
            assert turn.end > turn.start
            assert all(trajectory.loss_mask[turn.start : turn.end])
            assert all(lp < 0 for lp in trajectory.logprobs[turn.start : turn.end])
            if turn.observation is not None:
                frame = ids[turn.observation_start : turn.observation_end]
                assert frame == fmt.observation_ids(turn.observation)
