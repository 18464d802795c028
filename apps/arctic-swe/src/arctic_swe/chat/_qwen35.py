"""A chat template that renders the Qwen3.5 conversation format (written for this project).

It reproduces the *rendered format* of the Qwen3.5 / Qwen3-Coder family, the behaviour a real
checkpoint's template has and the harness must cope with, so the tests exercise it without a
download:

* tools are declared in the system block: ``# Tools``, a ``<tools>`` list with one JSON schema
  per line, then an example of the XML call format (``<tool_call>`` / ``<function=NAME>`` /
  ``<parameter=P>``); the system message's own text follows after a blank line;
* an assistant message may be structured: ``reasoning_content`` and ``tool_calls`` are rendered
  by the template (a ``</think>`` inside ``content`` is split off as the reasoning);
* the reasoning of assistant turns *before the last user query* is dropped; later turns keep it
  as ``<think>\\nREASONING\\n</think>\\n\\n``;
* consecutive tool results share one ``user`` block of ``<tool_response>`` elements;
* the generation prompt opens the reasoning, ``<|im_start|>assistant\\n<think>\\n``
  (``enable_thinking=False``: an empty, closed reasoning block instead).

Because the template drops and re-normalises reasoning, re-rendering a history is not the same
as the tokens the model saw: the harness only appends tokens (see ``_format``).
"""

from __future__ import annotations

_INSTRUCTIONS = (
    "To call a function, answer with exactly this shape and nothing after it:\\n\\n"
    "<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\n"
    "value_1\\n</parameter>\\n<parameter=example_parameter_2>\\n"
    "a value may span\\nseveral lines\\n</parameter>\\n</function>\\n</tool_call>\\n\\n"
    "<IMPORTANT>\\nRules:\\n"
    "- One <function=...></function> block goes inside each <tool_call></tool_call> pair\\n"
    "- Give every required parameter\\n"
    "- Any reasoning comes BEFORE the call, never after it\\n"
    "- Without a suitable function, answer in plain text\\n"
    "</IMPORTANT>"
)

#: The Jinja source (``tokenizer.chat_template`` of a ``model init --template qwen3.5``
#: checkpoint).
QWEN35_CHAT_TEMPLATE = (
    "{%- set system_text = '' %}"
    "{%- if messages and messages[0].role == 'system' %}"
    "{%- set system_text = messages[0].content | trim %}"
    "{%- endif %}"
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n# Tools\\n\\nYou have access to the following functions:"
    "\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\n" + _INSTRUCTIONS + "' }}"
    "{%- if system_text %}{{- '\\n\\n' + system_text }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + system_text + '<|im_end|>\\n' }}"
    "{%- endif %}"
    # The last user message that is a real query (not a wrapped tool result).
    "{%- set ns = namespace(last_query=-1) %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' and not (message.content.startswith('<tool_response>')"
    " and message.content.endswith('</tool_response>')) %}"
    "{%- set ns.last_query = loop.index0 %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- for message in messages %}"
    "{%- set content = message.content if message.content is string else '' %}"
    "{%- if message.role == 'system' %}"
    "{%- if not loop.first %}"
    "{{- '<|im_start|>system\\n' + content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- elif message.role == 'user' %}"
    "{{- '<|im_start|>user\\n' + content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set reasoning = '' %}"
    "{%- if message.reasoning_content is string %}"
    "{%- set reasoning = message.reasoning_content %}"
    "{%- elif '</think>' in content %}"
    "{%- set reasoning = content.split('</think>')[0].split('<think>')[-1] %}"
    "{%- set content = content.split('</think>')[-1] %}"
    "{%- endif %}"
    "{%- set reasoning = reasoning.strip('\\n') %}"
    "{%- set content = content.lstrip('\\n') %}"
    "{%- if loop.index0 > ns.last_query %}"
    "{{- '<|im_start|>assistant\\n<think>\\n' + reasoning + '\\n</think>\\n\\n' + content }}"
    "{%- else %}"
    "{{- '<|im_start|>assistant\\n' + content }}"
    "{%- endif %}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- set call = call.function if call.function is defined else call %}"
    "{%- if not loop.first or content | trim %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n<function=' + call.name + '>\\n' }}"
    "{%- for name, value in (call.arguments or {}) | items %}"
    "{{- '<parameter=' + name + '>\\n' }}"
    "{%- if value is mapping or (value is iterable and value is not string) %}"
    "{{- value | tojson }}"
    "{%- else %}{{- value | string }}{%- endif %}"
    "{{- '\\n</parameter>\\n' }}"
    "{%- endfor %}"
    "{{- '</function>\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}"
    "{{- '<|im_start|>user' }}"
    "{%- endif %}"
    "{{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}"
    "{%- endif %}"
)
