"""The scripted expert (the RFT stage of RFT-then-RL recipes).

It solves a deck task through the same tools and the same chat format as the policy: open the
file the issue names, replace the wrong line with the expected one (the gold hunk), run the
tests, submit.

The expert is an oracle, like a human demonstrator who knows the answer: it takes the two lines
from the task's hidden fields (``DeckTask.old_line`` / ``new_line``, the manifest's record of the
gold hunk; never shown to the policy), not from the issue. So it solves both issue styles. On a
``line``-style deck its edit is a copy of the issue; on a ``behaviour``-style deck the wrong line
is in the file it just read but the right one appears nowhere in the context, so the SFT data
demonstrates the edit without showing how to infer it — what the policy learns there is the
behaviour-to-fix mapping itself, or nothing. Each turn is written with swe-formatcheck's ``render_turn`` — the exact inverse
of the validator — so every expert turn is valid by construction and the policy imitates the
format it will be checked against.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerFast

from arctic_swe.deck import DeckTask
from arctic_swe.harness import ScriptedSampler
from swe_formatcheck import ToolCall, render_turn

TEST_COMMAND = "python3 -m pytest -q"


def expert_turns(task: DeckTask) -> list[str]:
    """The four raw assistant turns that solve ``task``.

    Every copied name keeps the token context it has in the issue (after a backtick, ``./`` or
    a newline, never after a space): byte-level BPE gives ``lumen`` and `` lumen`` different ids,
    and the tiny policy learns an identity copy far more easily than that remapping (measured:
    with the path after a space, that one token held most of the warm start's failure mass).
    """
    path = task.bug_path
    return [
        render_turn(
            f"The issue names `{path}`; read it.",
            ToolCall("execute_bash", {"command": f"cat ./{path}"}),
        ),
        render_turn(
            "Replace the wrong line with the expected one.",
            ToolCall(
                "edit_via_str_replace",
                {"path": path, "old_str": task.old_line, "new_str": task.new_line},
            ),
        ),
        render_turn("Run the tests.", ToolCall("execute_bash", {"command": TEST_COMMAND})),
        render_turn("The fix is in; submit.", ToolCall("submit", {})),
    ]


def expert_sampler(tokenizer: PreTrainedTokenizerFast, task: DeckTask) -> ScriptedSampler:
    """A sampler replaying :func:`expert_turns` for ``task``."""
    return ScriptedSampler(tokenizer, expert_turns(task))
