"""Tests for ``arctic_swe.chat._format``: prompts and observation deltas come from the tokenizer's
own chat template, for the app's template and the Qwen3.5-format one.

The central property: the harness's token history (prompt + each generated turn + its end token
+ each observation delta) equals, token for token, the template's rendering of the whole
conversation, over random conversations.
"""

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from transformers import PreTrainedTokenizerFast

from arctic_swe.chat import (
    IM_END,
    TEMPLATES,
    ChatFormat,
    TemplateError,
    chat_format,
    checkpoint_corpus,
    detect_dialect,
    encode,
    observation_text,
    render_conversation,
    special_id,
    train_tokenizer,
)
from swe_formatcheck import TOOLSETS, RenderError, ToolCall, ToolSpec, check_turn, render_turn

TOOLS = TOOLSETS["mini_swe_agent_plus"]
_TOKENIZERS: dict[str, PreTrainedTokenizerFast] = {}

#: A Qwen3-style template that writes hermes (JSON) calls; written for these tests.
HERMES_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' + messages[0].content + '\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    '{{- \'\\n</tools>\\n\\nCall a function as <tool_call>\\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}{%- endif %}'
    "{%- for m in messages %}"
    "{%- if m.role == 'system' %}{%- if not tools %}"
    "{{- '<|im_start|>system\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif m.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + (m.content or '') }}"
    "{%- for c in m.tool_calls or [] %}"
    '{{- \'<tool_call>\\n{"name": "\' + c.function.name + \'", "arguments": \''
    " + (c.function.arguments | tojson) + '}\\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif m.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
#: Plain role blocks, no tools and no call format at all.
PLAIN_TEMPLATE = (
    "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
#: Numbers tool results: the frame after a turn depends on its position.
NUMBERED_TEMPLATE = TEMPLATES["arctic"].replace(
    "'<|im_start|>user\\n<tool_response>\\n'",
    "'<|im_start|>user\\n<tool_response ' ~ loop.index ~ '>\\n'",
)


def _tokenizer(template: str) -> PreTrainedTokenizerFast:
    """A small tokenizer trained locally on the checkpoint corpus, with ``template``."""
    if template not in _TOKENIZERS:
        base = _TOKENIZERS.setdefault("", train_tokenizer(checkpoint_corpus(0), 1024))
        clone = train_tokenizer(checkpoint_corpus(0), 1024, chat_template=template)
        assert clone.get_vocab() == base.get_vocab()  # deterministic training
        _TOKENIZERS[template] = clone
    return _TOKENIZERS[template]


def _format(name: str) -> ChatFormat:
    return chat_format(_tokenizer(HERMES_TEMPLATE if name == "hermes" else TEMPLATES[name]), TOOLS)


def test_the_qwen35_format_is_detected_from_its_template() -> None:
    fmt = _format("qwen3.5")
    assert (fmt.dialect, fmt.think_prefilled, fmt.reasoning) == ("qwen3_coder", True, "required")
    assert fmt.prompt_text("S", "I").endswith(
        "<|im_start|>user\nI<|im_end|>\n<|im_start|>assistant\n<think>\n"
    )
    assert '"name": "edit_via_str_replace"' in fmt.prompt_text("S", "I")
    assert fmt.observation_text("out") == (
        "\n<|im_start|>user\n<tool_response>\nout\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )


def test_the_app_template_gives_its_historic_frames_bit_for_bit() -> None:
    fmt = _format("arctic")
    assert (fmt.dialect, fmt.think_prefilled, fmt.reasoning) == ("qwen3_coder", False, "required")
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "I"}]
    assert fmt.prompt_text("S", "I") == render_conversation(
        messages, TOOLS, add_generation_prompt=True
    )
    for observation in ("", "x", "a\nb", "<|im_end|>", "arctic-swe-probe-7d1c-0"):
        assert fmt.observation_text(observation) == observation_text(observation)


def test_hermes_is_detected_and_an_explicit_dialect_wins() -> None:
    tokenizer = _tokenizer(HERMES_TEMPLATE)
    assert detect_dialect(tokenizer, TOOLS) == "hermes"
    assert chat_format(tokenizer, TOOLS).dialect == "hermes"
    assert chat_format(_tokenizer(TEMPLATES["qwen3.5"]), TOOLS, "hermes").dialect == "hermes"
    with pytest.raises(TemplateError, match="tool dialect must be one of"):
        chat_format(tokenizer, TOOLS, "json")


def test_thinking_off_forbids_reasoning() -> None:
    tokenizer = _tokenizer(TEMPLATES["qwen3.5"])
    fmt = chat_format(tokenizer, TOOLS, enable_thinking=False)
    assert (fmt.think_prefilled, fmt.reasoning) == (False, "forbidden")
    assert fmt.observation_text("o").endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert chat_format(tokenizer, TOOLS, enable_thinking=True).think_prefilled
    # A turn without reasoning after the closed block: appended history == the whole render.
    call = ToolCall("execute_bash", {"command": "ls"})
    raw = render_turn(None, call)
    assert check_turn(raw, tools=TOOLS, reasoning="forbidden").call == call
    end_id = special_id(tokenizer, IM_END)
    history = [*fmt.prompt_ids("S", "I"), *encode(tokenizer, raw), end_id]
    history += fmt.observation_ids("a.py")
    structured = {"name": "execute_bash", "arguments": {"command": "ls"}}
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "I"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": structured}]},
        {"role": "tool", "content": "a.py"},
    ]
    assert history == encode(tokenizer, fmt.render(messages, add_generation_prompt=True))


@pytest.mark.parametrize(
    ("template", "dialect", "message"),
    [
        (PLAIN_TEMPLATE, "auto", "cannot tell the tool-call format"),
        (NUMBERED_TEMPLATE, "auto", "depends on the turn's position"),
        ("{{ raise_exception('no tools here') }}", "auto", "failed: no tools here"),
        ("{{ messages[0].content }}", "qwen3_coder", "does not append a generation prompt"),
    ],
)
def test_unsupported_templates_are_typed_errors(template: str, dialect: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        chat_format(_tokenizer(template), TOOLS, dialect)


def test_a_tokenizer_without_a_template_is_a_typed_error() -> None:
    tokenizer = train_tokenizer(["x"], 300)
    tokenizer.chat_template = None
    with pytest.raises(TemplateError, match="has no chat template"):
        chat_format(tokenizer, TOOLS)


def test_earlier_reasoning_is_dropped_but_the_delta_is_unchanged() -> None:
    """Qwen3.5 drops reasoning before the last user query; the delta never reads that part."""
    fmt = _format("qwen3.5")

    def turn(reasoning: str, command: str) -> dict[str, Any]:
        call = {
            "type": "function",
            "function": {"name": "execute_bash", "arguments": {"command": command}},
        }
        return {
            "role": "assistant",
            "content": "",
            "reasoning_content": reasoning,
            "tool_calls": [call],
        }

    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "first issue"},
        turn("EARLIER-REASONING", "ls"),
        {"role": "tool", "content": "a.py"},
        {"role": "user", "content": "a follow-up query"},
        turn("LATER-REASONING", "cat a.py"),
        {"role": "tool", "content": "print(1)"},
    ]
    text = fmt.render(messages, add_generation_prompt=True)
    assert "EARLIER-REASONING" not in text
    assert "LATER-REASONING" in text
    last_end = text.rindex(IM_END, 0, text.rindex("<tool_response>"))
    assert text[last_end + len(IM_END) :] == fmt.observation_text("print(1)")


# --- the round trip: appended tokens == the template's rendering of the whole conversation ---

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
# A model's reasoning as the template keeps it: no leading/trailing whitespace (templates strip
# it, which is one reason the harness never re-renders), and not empty: after a prefilled
# ``<think>\n`` an empty reasoning starts the turn with ``\n``, which byte-level BPE merges with
# the prompt's ``\n`` when the whole text is tokenised at once, while the engine's tokens stay
# split (the text still matches; the token ids legitimately differ).
_reasoning = _text.map(str.strip).filter(bool)
_value = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<"), max_size=30)


@st.composite
def _calls(draw: st.DrawFn) -> ToolCall:
    tool: ToolSpec = draw(st.sampled_from(TOOLS))
    return ToolCall(tool.name, {name: draw(_value) for name in tool.required})


@st.composite
def _conversations(draw: st.DrawFn) -> tuple[str, str, list[tuple[str, ToolCall, str]]]:
    turns = draw(st.lists(st.tuples(_reasoning, _calls(), _text), min_size=1, max_size=4))
    return draw(_text), draw(_text), turns


def _assistant_message(
    fmt: ChatFormat, reasoning: str, call: ToolCall, raw: str, structured: bool
) -> dict[str, Any]:
    if not structured:
        return {"role": "assistant", "content": raw}  # the raw text as content
    function = {"name": call.name, "arguments": dict(call.arguments)}
    calls = [{"type": "function", "function": function}]
    if fmt.dialect == "hermes":  # this template has no reasoning field: the text before the call
        return {
            "role": "assistant",
            "content": raw[: raw.index("<tool_call>")],
            "tool_calls": calls,
        }
    return {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": calls}


@pytest.mark.parametrize(
    ("name", "structured"),
    [("arctic", False), ("qwen3.5", False), ("qwen3.5", True), ("hermes", False), ("hermes", True)],
)
@settings(max_examples=60, deadline=None)
@given(conversation=_conversations())
def test_history_equals_the_whole_conversation_rendered(
    name: str, structured: bool, conversation: tuple[str, str, list[tuple[str, ToolCall, str]]]
) -> None:
    fmt = _format(name)
    system, issue, turns = conversation
    end_id = special_id(fmt.tokenizer, IM_END)
    history = fmt.prompt_ids(system, issue)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": issue},
    ]
    for reasoning, call, observation in turns:
        try:
            raw = render_turn(
                reasoning, call, dialect=fmt.dialect, think_prefilled=fmt.think_prefilled
            )
        except RenderError:
            assume(False)
        verdict = check_turn(
            raw, tools=TOOLS, dialect=fmt.dialect, think_prefilled=fmt.think_prefilled
        )
        assert verdict.call == call
        history += [*encode(fmt.tokenizer, raw), end_id]  # what the engine generated
        history += fmt.observation_ids(observation)
        messages.append(_assistant_message(fmt, reasoning, call, raw, structured))
        messages.append({"role": "tool", "content": observation})
    whole = fmt.render(messages, add_generation_prompt=True)
    assert fmt.tokenizer.decode(history, skip_special_tokens=False) == whole
    assert history == encode(fmt.tokenizer, whole)


def test_named_templates_and_a_missing_end_token() -> None:
    """A dict of named templates (transformers picks ``tool_use`` when tools are given) works;
    a vocabulary without ``<|im_end|>`` is a typed error."""
    tokenizer = train_tokenizer(checkpoint_corpus(0), 1024)
    tokenizer.chat_template = {"default": PLAIN_TEMPLATE, "tool_use": TEMPLATES["qwen3.5"]}
    assert chat_format(tokenizer, TOOLS).think_prefilled

    class NoEndToken:  # a tokenizer whose vocabulary lacks the end-of-turn token
        chat_template = TEMPLATES["arctic"]
        name_or_path = "no-end"

        def get_vocab(self) -> dict[str, int]:
            return {"<|im_start|>": 1}

    fake: Any = NoEndToken()
    with pytest.raises(TemplateError, match=r"no-end has no <\|im_end\|> token"):
        chat_format(fake, TOOLS)
