"""Tests for ``arctic_swe.chat._template``: the Jinja template and its Python twin agree, and the
observation frame is exactly what the template inserts after an assistant turn."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import (
    IM_END,
    observation_text,
    render_conversation,
    tool_schemas,
    train_tokenizer,
)
from swe_formatcheck import TOOLSETS

TOOLS = TOOLSETS["mini_swe_agent_plus"]
_TOKENIZER: list[PreTrainedTokenizerFast] = []


def _tokenizer() -> PreTrainedTokenizerFast:
    if not _TOKENIZER:
        _TOKENIZER.append(train_tokenizer(["def f(x):\n    return x\n"] * 10, vocab_size=320))
    return _TOKENIZER[0]


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@given(system=texts, issue=texts, turn=texts, observation=texts, gen=st.booleans())
def test_python_rendering_equals_the_jinja_template(
    system: str, issue: str, turn: str, observation: str, gen: bool
) -> None:
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": issue},
        {"role": "assistant", "content": turn},
        {"role": "tool", "content": observation},
    ]
    jinja = _tokenizer().apply_chat_template(
        messages, tools=tool_schemas(TOOLS), add_generation_prompt=gen, tokenize=False
    )
    assert jinja == render_conversation(messages, TOOLS, add_generation_prompt=gen)


@given(turn=texts, observation=texts)
def test_observation_frame_is_what_the_template_appends(turn: str, observation: str) -> None:
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "issue"}]
    prompt = render_conversation(head, TOOLS, add_generation_prompt=True)
    full = render_conversation(
        [*head, {"role": "assistant", "content": turn}, {"role": "tool", "content": observation}],
        TOOLS,
        add_generation_prompt=True,
    )
    assert full == prompt + turn + IM_END + observation_text(observation)


def test_system_block_carries_every_tool_and_the_call_format() -> None:
    text = render_conversation([{"role": "system", "content": "S"}], TOOLS)
    assert text.startswith("<|im_start|>system\nS\n\n# Tools\n\n<tools>\n")
    for tool in TOOLS:
        assert f'"name": "{tool.name}"' in text
    assert "<function=example_function_name>" in text
    assert text.endswith("<|im_end|>\n")


@pytest.mark.parametrize("tools", [(), TOOLS])
def test_generation_prompt_opens_an_assistant_turn(tools: tuple[object, ...]) -> None:
    text = render_conversation(
        [{"role": "user", "content": "hi"}], tools, add_generation_prompt=True
    )  # type: ignore[arg-type]
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
