"""The chat template, in Qwen3.5's shape (Qwen3-Coder tool format,
ARCHITECTURE.md §3 swe-formatcheck).

The conversation is ``<|im_start|>ROLE\\n…<|im_end|>\\n`` blocks: a system block carrying the
tool specifications inside ``<tools>…</tools>`` and the call-format instructions, the user's
issue, assistant turns (reasoning in ``<think>…</think>`` then one ``<tool_call>``; the raw text
is stored verbatim as ``content`` so the template never re-renders what the model wrote) and
tool results as user blocks wrapped in ``<tool_response>…</tool_response>``. The generation
prompt is ``<|im_start|>assistant\\n``.

:func:`observation_text` is the exact text the template adds between the end of an assistant
turn (after its ``<|im_end|>``) and the next generation prompt, which lets the harness append an
observation as tokens without re-tokenising the history; a test checks the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from swe_formatcheck import ToolSpec

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
ENDOFTEXT = "<|endoftext|>"

#: Qwen3.5's special tokens (plus the Qwen3-Coder call tags the tiny vocabulary keeps whole).
SPECIAL_TOKENS: tuple[str, ...] = (
    ENDOFTEXT,
    IM_START,
    IM_END,
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)

_FORMAT_INSTRUCTIONS = (
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n"
    "value_1\n</parameter>\n</function>\n</tool_call>\n\n"
    "Reason inside <think></think> first, then make exactly one function call per turn."
)

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message.role == 'system' %}"
    "{{- '<|im_start|>system\\n' + message.content }}"
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\n' + '" + _FORMAT_INSTRUCTIONS.replace("\n", "\\n") + "' }}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content"
    " + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def tool_schemas(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI-style function schemas for ``tools`` (string parameters, all required)."""
    schemas: list[dict[str, Any]] = []
    for tool in tools:
        names = (*tool.required, *tool.optional)
        schemas.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "parameters": {
                        "type": "object",
                        "properties": {name: {"type": "string"} for name in names},
                        "required": list(tool.required),
                    },
                },
            }
        )
    return schemas


def render_conversation(
    messages: Sequence[Mapping[str, str]],
    tools: Sequence[ToolSpec] = (),
    *,
    add_generation_prompt: bool = False,
) -> str:
    """Pure-Python rendering of :data:`CHAT_TEMPLATE` (same text, no Jinja), used where the
    harness builds prompts; ``tests/chat`` checks it against the tokenizer's template."""
    parts: list[str] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            block = f"{IM_START}system\n{content}"
            if tools:
                specs = "".join("\n" + _tojson(schema) for schema in tool_schemas(tools))
                block += f"\n\n# Tools\n\n<tools>{specs}\n</tools>\n\n{_FORMAT_INSTRUCTIONS}"
            parts.append(block + f"{IM_END}\n")
        elif role == "tool":
            parts.append(observation_block(content))
        else:
            parts.append(f"{IM_START}{role}\n{content}{IM_END}\n")
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def _tojson(value: object) -> str:
    # transformers' ``tojson`` filter: json.dumps, insertion order, non-ASCII kept.
    return json.dumps(value, ensure_ascii=False)


def observation_block(observation: str) -> str:
    """The user block carrying one tool result."""
    return f"{IM_START}user\n<tool_response>\n{observation}\n</tool_response>{IM_END}\n"


def observation_text(observation: str) -> str:
    """What follows a generated turn's ``<|im_end|>`` up to the next generation prompt."""
    return "\n" + observation_block(observation) + f"{IM_START}assistant\n"
