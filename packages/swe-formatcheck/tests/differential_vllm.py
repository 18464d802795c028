"""Differential check of `check_turn` against vLLM's parsers, and its script mode.

The property: whenever `check_turn` accepts a turn, vLLM's serving-path parser
(``ParserManager.get_parser(...).parse``, the composition ``vllm serve`` uses) returns exactly one
call with the same name and the same arguments, and the qwen3 reasoning parser splits off the
same reasoning. Configurations, each a tool parser with and without ``--reasoning-parser qwen3``:

* ``qwen3_coder`` and ``qwen3_xml`` on qwen3_coder turns,
* ``hermes`` on hermes turns.

The tokenizer is built in code with the `tokenizers` library: the special tokens of the Qwen
tokenizers (vLLM deletes a tokenizer's special tokens from parsed text) and their non-special
added tokens ``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>``; nothing comes from a
model hub. Script mode (run inside an environment that holds vLLM)::

    python packages/swe-formatcheck/tests/differential_vllm.py --turns 100000 --seed 0

prints one JSON object with the counts per configuration and exits 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from tokenizers import AddedToken, Tokenizer, models
from transformers import PreTrainedTokenizerFast
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.parser_manager import ParserManager

from swe_formatcheck import TOOLSETS, ToolSpec, TurnVerdict, check_turn
from swe_formatcheck.strategies import GeneratedTurn, generate_turn

TOOLS: tuple[ToolSpec, ...] = TOOLSETS["mini_swe_agent_plus"]
#: One generated turn and its check options (the kit's record; the script reads raw, dialect,
#: reasoning and think_prefilled).
Turn = GeneratedTurn
QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_pad|>", "<|image_pad|>")
QWEN_ADDED = ("<think>", "</think>", "<tool_call>", "</tool_call>")
#: The ``--tool-call-parser`` names checked (vLLM 0.33 registers qwen3_coder and qwen3_xml to the
#: same class; both names are run, as a server would be started with either).
TOOL_PARSERS = ("qwen3_coder", "qwen3_xml", "hermes")


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A tiny tokenizer with the Qwen special and added tokens (all the parsers look at)."""
    core = Tokenizer(models.WordLevel({"a": 0}))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", additional_special_tokens=list(QWEN_SPECIAL)
    )
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in QWEN_ADDED])
    return tokenizer


def _request() -> ChatCompletionRequest:
    tools = [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "parameters": {
                    "type": "object",
                    "properties": {p: {"type": "string"} for p in spec.parameters},
                    "required": list(spec.required),
                },
            },
        }
        for spec in TOOLS
    ]
    return ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "x"}], tools=tools
    )


@dataclass
class Counts:
    """What one configuration saw."""

    turns: int = 0
    accepted: int = 0
    agreed: int = 0
    mismatched: int = 0
    examples: list[dict[str, str]] = field(default_factory=list)


class VllmStack:
    """The vLLM parser compositions under test, built once and reused across turns."""

    def __init__(self) -> None:
        self.tokenizer = build_tokenizer()
        self.request = _request()
        self.parsers: dict[tuple[str, bool, bool], Any] = {}
        for name in TOOL_PARSERS:
            for with_reasoning in (True, False):
                cls = ParserManager.get_parser(
                    tool_parser_name=name,
                    reasoning_parser_name="qwen3" if with_reasoning else None,
                    enable_auto_tools=True,
                    tokenizer=self.tokenizer,
                )
                for thinking in (True, False):
                    kwargs = {"chat_template_kwargs": {"enable_thinking": thinking}}
                    self.parsers[name, with_reasoning, thinking] = cls(
                        self.tokenizer, self.request.tools, **kwargs
                    )

    def configurations(self, dialect: str) -> list[str]:
        names = ["hermes"] if dialect == "hermes" else ["qwen3_coder", "qwen3_xml"]
        return [f"{n}+qwen3" for n in names] + names

    def parse(self, configuration: str, turn: Turn) -> tuple[str | None, list[Any] | None]:
        name, _, reasoning = configuration.partition("+")
        thinking = turn.reasoning != "forbidden"
        parser = self.parsers[name, bool(reasoning), thinking]
        reasoning_text, _content, calls = parser.parse(
            turn.raw, self.request, enable_auto_tools=True
        )
        return reasoning_text, calls


def mismatch(
    turn: Turn,
    verdict: TurnVerdict,
    parsed: tuple[str | None, list[Any] | None],
    *,
    reasoning_parser: bool,
) -> str | None:
    """Why vLLM's reading differs from the accepted verdict, or None when it is the same."""
    reasoning, calls = parsed
    assert verdict.call is not None
    if not calls or len(calls) != 1:
        return f"{len(calls or [])} calls"
    call = calls[0]
    if call.name != verdict.call.name:
        return f"name {call.name!r}"
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return "arguments are not JSON"
    if arguments != verdict.call.arguments:
        return f"arguments {ascii(arguments)[:300]}"
    if reasoning_parser and _split_reasoning(turn, reasoning) != verdict.reasoning:
        return f"reasoning {ascii(reasoning)[:300]}"
    return None


def _split_reasoning(turn: Turn, reasoning: str | None) -> str | None:
    """vLLM's reasoning read with this package's rule: leading whitespace before ``<think>`` and
    one canonical newline on each side (the leading one is in the prompt when pre-filled) go."""
    if turn.reasoning == "forbidden":
        return reasoning or None
    text = reasoning or ""
    if not turn.think_prefilled:
        if not turn.raw.lstrip(" \t\n\r").startswith("<think>"):
            return None if not text.strip(" \t\n\r") else text
        text = text[len(turn.raw) - len(turn.raw.lstrip(" \t\n\r")) :]
        text = text.removeprefix("\n")
    return text.removesuffix("\n")


def check(turn: Turn) -> TurnVerdict:
    return check_turn(
        turn.raw,
        tools=TOOLS,
        dialect=turn.dialect,  # type: ignore[arg-type]
        reasoning=turn.reasoning,  # type: ignore[arg-type]
        think_prefilled=turn.think_prefilled,
    )


def run(
    stack: VllmStack,
    rng: random.Random,
    dialect: str,
    turns: int,
    counts: dict[str, Counts],
    progress: Any = None,
) -> None:
    """Generate `turns` turns of `dialect`; compare every accepted one in every configuration."""
    for _ in range(turns):
        turn = generate_turn(rng, dialect)
        verdict = check(turn)
        for configuration in stack.configurations(dialect):
            seen = counts.setdefault(configuration, Counts())
            seen.turns += 1
            if not verdict.ok:
                continue
            seen.accepted += 1
            why = mismatch(
                turn,
                verdict,
                stack.parse(configuration, turn),
                reasoning_parser="+" in configuration,
            )
            if why is None:
                seen.agreed += 1
                continue
            seen.mismatched += 1
            if len(seen.examples) < 5:
                seen.examples.append({"raw": ascii(turn.raw)[:600], "why": why})
        if progress is not None:
            progress()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Differential check of swe-formatcheck against vLLM's tool and reasoning parsers."
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=100_000,
        help="generated turns per dialect (qwen3_coder turns feed qwen3_coder and qwen3_xml, hermes turns feed hermes)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the turn generator")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    stack = VllmStack()
    counts: dict[str, Counts] = {}
    started = time.perf_counter()
    # rich comes with vLLM's environment; the bar goes to stderr so stdout stays one JSON object.
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        for dialect in ("qwen3_coder", "hermes"):
            task = bar.add_task(dialect, total=args.turns)
            rng = random.Random(f"{args.seed}:{dialect}")
            run(stack, rng, dialect, args.turns, counts, lambda task=task: bar.advance(task))
    result = {
        "vllm": version("vllm"),
        "swe_formatcheck": version("swe-formatcheck"),
        "transformers": version("transformers"),
        "regex": version("regex"),
        "python": sys.version.split()[0],
        "seed": args.seed,
        "turns_per_dialect": args.turns,
        "wall_s": round(time.perf_counter() - started, 1),
        "configurations": {name: vars(seen) for name, seen in counts.items()},
    }
    print(json.dumps(result))
    return 1 if any(seen.mismatched for seen in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
