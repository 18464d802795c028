"""A small seeded text corpus for training a checkpoint's tokenizer without a deck.

``arctic-swe model init`` writes a self-contained checkpoint, so its tokenizer cannot be trained
on a deck's repositories; it learns from what an agent episode is made of instead: the rendered
system block of each chat template (tool schemas and call instructions), canonical tool-call
turns of both dialects (swe-formatcheck's ``render_turn``), shell commands, Python source lines
and tool output. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from arctic_swe.chat._qwen35 import QWEN35_CHAT_TEMPLATE
from arctic_swe.chat._template import CHAT_TEMPLATE, render_conversation
from swe_formatcheck import TOOLSETS, ToolCall, render_turn

#: Chat templates ``model init --template`` can write, by name.
TEMPLATES: dict[str, str] = {"qwen3.5": QWEN35_CHAT_TEMPLATE, "arctic": CHAT_TEMPLATE}

_TOOLS = TOOLSETS["mini_swe_agent_plus"]
_FILES = ("src/app/core.py", "src/app/utils.py", "tests/test_core.py", "setup.cfg", "README.md")
_COMMANDS = (
    "ls -la",
    "cat {f}",
    "grep -n 'def ' {f}",
    "python -m pytest -q tests",
    "sed -n 1,40p {f}",
    "git diff",
)
_CODE = (
    "def {n}(value, limit=10):\n    if value > limit:\n        return limit\n    return value\n",
    "class {N}:\n    def __init__(self, items):\n        self.items = list(items)\n",
    "import os\nfrom pathlib import Path\n\nROOT = Path(__file__).parent\n",
    "    for index, item in enumerate(items):\n        total += item * index\n",
    "assert {n}(3) == 3\nassert {n}(30) == 10\n",
)
_REASONS = (
    "Let me look at the repository first.",
    "The test fails because the bound is off by one; I will fix the comparison.",
    "Run the tests to check the fix.",
    "The change is done and the tests pass, so I submit.",
)
_NAMES = ("clamp", "parse_args", "load_config", "total_of", "render")


def checkpoint_corpus(seed: int = 0, conversations: int = 48) -> Iterator[str]:
    """Texts to train a small byte-level BPE on (see the module docstring)."""
    rng = random.Random(seed)
    yield from TEMPLATES.values()  # the template source carries every literal it renders
    for _ in range(conversations):
        name = rng.choice(_NAMES)
        path = rng.choice(_FILES)
        code = rng.choice(_CODE).format(n=name, N=name.title().replace("_", ""))
        command = rng.choice(_COMMANDS).format(f=path)
        calls = [
            ToolCall("execute_bash", {"command": command}),
            ToolCall("edit_via_str_replace", {"path": path, "old_str": code, "new_str": code}),
            ToolCall("submit", {}),
        ]
        for call in calls:
            reason = rng.choice(_REASONS)
            yield render_turn(reason, call)
            yield render_turn(reason, call, think_prefilled=True)
            yield render_turn(reason, call, dialect="hermes")
        yield code
        yield f"{path}:3: {name}\n{rng.randint(1, 40)} passed in 0.{rng.randint(10, 99)}s\n"
    yield render_conversation(
        [{"role": "system", "content": "You are a software engineer."}], _TOOLS
    )
