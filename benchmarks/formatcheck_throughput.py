"""Throughput and adversarial-input scaling of `swe_formatcheck.check_turn`.

Measures, in one run:
  * realistic turns (rendered Mini-SWE-Agent-Plus calls with reasoning, both dialects): turns/s and
    MB/s of `check_turn`, and the ratio against a lenient regex extractor of the kind public
    parsers use (the baseline: what strictness costs);
  * adversarial inputs (repeated opening tags, deep nesting, a flood of "<", a megabyte of "[" for
    JSON) against an ordinary turn of the same size, and each input again at twice the size: a
    linear validator keeps the doubling ratio near 2;
  * a regex parameter pattern on repeated unclosed "<parameter=" at two small sizes, to show the
    quadratic behaviour a hand-written scanner avoids.

With `--peer vllm` (inside an environment holding vllm==0.33.0) the same run also puts vLLM's
`qwen3_coder` tool parser behind its `qwen3` reasoning parser side by side with `check_turn`:
malformed corpus turns executed, valid turns executed exactly, MB per CPU-second, and CPU time
from 1 MB to 4 MB; the "peer.table" field is the package README's comparison table. Without
vllm, "peer" says why it was not run.

Prints one JSON object as its last stdout line. `--smoke` runs tiny sizes in a few seconds.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.metadata
import json
import platform
import random
import re
import time
from collections.abc import Callable
from typing import Any

from swe_formatcheck import (
    MALFORMED_CORPUS,
    TOOLSETS,
    VALID_CORPUS,
    ToolCall,
    TurnVerdict,
    check_turn,
    render_turn,
)

TOOLS = TOOLSETS["mini_swe_agent_plus"]
WORDS = [
    "the",
    "parser",
    "value",
    "file",
    "test",
    "import",
    "def",
    "return",
    "self",
    "assert",
    "patch",
    "repo",
    "fix",
    "bug",
    "line",
]

# A lenient extractor in the style of public tool parsers (non-greedy regexes, last value wins).
LENIENT_ENVELOPE = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)$", re.DOTALL)
LENIENT_FUNCTION = re.compile(r"<function=(.*?)>", re.DOTALL)
LENIENT_PARAMETER = re.compile(
    r"<parameter=(.*?)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.DOTALL
)


def lenient_parse(raw: str) -> dict[str, str]:
    """The baseline: pull out a call the way a forgiving parser does, no validation."""
    arguments: dict[str, str] = {}
    for closed, unclosed in LENIENT_ENVELOPE.findall(raw):
        body = closed or unclosed
        LENIENT_FUNCTION.search(body)
        for name, value in LENIENT_PARAMETER.findall(body):
            arguments[name] = value.strip("\n")
    return arguments


def _prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _code(rng: random.Random, n_lines: int) -> str:
    lines = [
        f"{'    ' * rng.randint(0, 3)}{_prose(rng, rng.randint(2, 10))}" for _ in range(n_lines)
    ]
    return "\n".join(lines) + "\n"


def realistic_turns(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(dialect, raw) pairs: 60 % bash, 35 % edits with code, 5 % submit; reasoning 20-400 words."""
    rng = random.Random(seed)
    turns = []
    for _ in range(n):
        pick = rng.random()
        if pick < 0.6:
            call = ToolCall("execute_bash", {"command": f"grep -rn '{_prose(rng, 2)}' src | head"})
        elif pick < 0.95:
            call = ToolCall(
                "edit_via_str_replace",
                {
                    "path": "src/pkg/module.py",
                    "old_str": _code(rng, rng.randint(3, 40)),
                    "new_str": _code(rng, rng.randint(3, 40)),
                },
            )
        else:
            call = ToolCall("submit")
        dialect = rng.choice(("qwen3_coder", "hermes"))
        turns.append(
            (dialect, render_turn(_prose(rng, rng.randint(20, 400)), call, dialect=dialect))
        )
    return turns


def best_of(repeats: int, work: Callable[[], object], min_total_s: float = 0.0) -> float:
    """Best wall time of at least `repeats` runs, going on until `min_total_s` has been spent.

    The minimum is the run least disturbed by other load on a shared machine; fast inputs get
    many runs so that one lucky or unlucky scheduling slice does not decide the figure.
    """
    best, spent, runs = float("inf"), 0.0, 0
    while runs < repeats or spent < min_total_s:
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
        best, spent, runs = min(best, elapsed), spent + elapsed, runs + 1
    return best


def throughput(n_turns: int, repeats: int) -> dict[str, float]:
    turns = realistic_turns(n_turns)
    megabytes = sum(len(raw.encode("utf-8", "surrogatepass")) for _, raw in turns) / 1e6

    def strict() -> None:
        for dialect, raw in turns:
            if not check_turn(raw, tools=TOOLS, dialect=dialect).ok:
                raise AssertionError("a realistic turn was rejected")

    def lenient() -> None:
        for _, raw in turns:
            lenient_parse(raw)

    strict_s, lenient_s = best_of(repeats, strict), best_of(repeats, lenient)
    return {
        "turns": n_turns,
        "mean_turn_kb": round(megabytes * 1e3 / n_turns, 2),
        "turns_per_s": round(n_turns / strict_s),
        "mb_per_s": round(megabytes / strict_s, 1),
        "lenient_regex_turns_per_s": round(n_turns / lenient_s),
        "strict_over_lenient_time": round(strict_s / lenient_s, 2),
    }


def adversarial_inputs(size: int) -> dict[str, tuple[str, str]]:
    """name -> (dialect, raw) of about `size` characters each."""
    think = "<think>\nplan\n</think>\n\n"
    function = "<tool_call>\n<function=execute_bash>\n"

    def fill(unit: str) -> str:
        return unit * (size // len(unit))

    return {
        "repeated_tool_call_open": ("qwen3_coder", fill("<tool_call>")),
        "repeated_parameter_open": ("qwen3_coder", think + function + fill("<parameter=")),
        "repeated_named_parameters": (
            "qwen3_coder",
            think + function + fill("<parameter=command>\n"),
        ),
        "nested_functions": ("qwen3_coder", fill("<tool_call><function=a>")),
        "repeated_think_open": ("qwen3_coder", fill("<think>")),
        "less_than_flood_in_value": (
            "qwen3_coder",
            think + function + "<parameter=command>\n" + fill("<"),
        ),
        "json_deep_nesting": ("hermes", think + "<tool_call>" + fill("[") + "</tool_call>"),
        "json_repeated_open": ("hermes", fill("<tool_call>{")),
    }


def ordinary_input(size: int) -> tuple[str, str]:
    value = (_code(random.Random(1), size // 30 + 10))[:size]
    return "qwen3_coder", render_turn("plan", ToolCall("execute_bash", {"command": value}))


def scaling(size: int, repeats: int) -> dict[str, object]:
    min_total_s = 0.0 if repeats == 1 else 0.5

    def timed(dialect: str, raw: str) -> float:
        return best_of(
            repeats,
            lambda: check_turn(raw, tools=TOOLS, dialect=dialect),
            min_total_s,
        )

    ordinary_s = timed(*ordinary_input(size))
    rows: dict[str, object] = {"ordinary_ms": round(ordinary_s * 1e3, 2)}
    doubled = adversarial_inputs(2 * size)
    worst = 0.0
    for name, (dialect, raw) in adversarial_inputs(size).items():
        once, twice = timed(dialect, raw), timed(*doubled[name])
        worst = max(worst, twice / once)
        rows[name] = {
            "ms": round(once * 1e3, 2),
            "vs_ordinary": round(once / ordinary_s, 1),
            "doubling_ratio": round(twice / once, 2),
        }
    rows["worst_doubling_ratio"] = round(worst, 2)
    return rows


# The parameter pattern several public parsers use: a value must be closed, so on unclosed input
# every opening tag rescans the rest of the text.
CLOSED_PARAMETER = re.compile(r"<parameter=([^>]+)>(.*?)</parameter>", re.DOTALL)


def regex_quadratic(sizes: tuple[int, int]) -> dict[str, object]:
    small, large = ("<parameter=" * (size // 11) for size in sizes)
    small_s = best_of(1, lambda: CLOSED_PARAMETER.findall(small))
    large_s = best_of(1, lambda: CLOSED_PARAMETER.findall(large))
    return {
        "pattern": CLOSED_PARAMETER.pattern,
        "sizes": list(sizes),
        "ms": [round(small_s * 1e3, 1), round(large_s * 1e3, 1)],
        "doubling_ratio": round(large_s / small_s, 2),
    }


# -- the peer comparison (`--peer vllm`): the same inputs through vLLM's serving-path parser


def _vllm_parser() -> tuple[Callable[[str, bool], list[dict[str, str]]], str] | str:
    """``(parse, version)``, or why vLLM cannot be used here.

    ``parse(raw, thinking)`` returns the calls vLLM would execute, as ``{"name", "arguments"}``.
    The tokenizer is built in code with the Qwen special and added tokens (nothing from a hub).
    """
    # Imported by name: the ordinary environment (and its type checker) holds none of these.
    try:
        tokenizers = importlib.import_module("tokenizers")
        transformers = importlib.import_module("transformers")
        protocol = importlib.import_module("vllm.entrypoints.openai.chat_completion.protocol")
        manager = importlib.import_module("vllm.parser.parser_manager")
    except ImportError as exc:
        return f"vllm is not importable in this environment ({exc.name}); run inside an environment with vllm==0.33.0"
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.WordLevel({"a": 0})),
        eos_token="<|im_end|>",
        additional_special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    )
    tokenizer.add_tokens(
        [
            tokenizers.AddedToken(t, special=False, normalized=False)
            for t in ("<think>", "</think>", "<tool_call>", "</tool_call>")
        ]
    )
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
    request = protocol.ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "x"}], tools=tools
    )
    cls = manager.ParserManager.get_parser(
        tool_parser_name="qwen3_coder",
        reasoning_parser_name="qwen3",
        enable_auto_tools=True,
        tokenizer=tokenizer,
    )
    parsers = {
        thinking: cls(tokenizer, request.tools, chat_template_kwargs={"enable_thinking": thinking})
        for thinking in (True, False)
    }

    def parse(raw: str, thinking: bool) -> list[dict[str, str]]:
        _, _, calls = parsers[thinking].parse(raw, request, enable_auto_tools=True)
        return [{"name": c.name, "arguments": c.arguments} for c in calls or []]

    return parse, importlib.metadata.version("vllm")


def _cpu_seconds(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def _cpu_each(work: Callable[[str], object], inputs: dict[int, str]) -> dict[int, float]:
    """CPU seconds of `work` on each input, keyed like `inputs` (by size)."""
    return {size: _cpu_seconds(functools.partial(work, raw)) for size, raw in inputs.items()}


def _ours(raw: str, reasoning: str = "required", prefilled: bool = False) -> TurnVerdict:
    return check_turn(raw, tools=TOOLS, reasoning=reasoning, think_prefilled=prefilled)  # type: ignore[arg-type]


def _executes_exactly(calls: list[dict[str, str]], call: ToolCall) -> bool:
    return (
        len(calls) == 1
        and calls[0]["name"] == call.name
        and json.loads(calls[0]["arguments"]) == call.arguments
    )


def _flood(size: int) -> str:
    return "<think>\nplan\n</think>\n\n<tool_call>\n<function=execute_bash>\n" + "<parameter=" * (
        size // 11
    )


def peer_vllm(n_turns: int, *, smoke: bool) -> dict[str, object]:
    """Malformed turns executed, valid turns executed exactly, MB per CPU-second and scaling,
    for `check_turn` and vLLM's ``qwen3_coder`` tool parser behind its ``qwen3`` reasoning parser."""
    found = _vllm_parser()
    if isinstance(found, str):
        return {"peer": "vllm", "available": False, "reason": found}
    parse, vllm_version = found
    malformed = [c for c in MALFORMED_CORPUS if c.dialect == "qwen3_coder"]
    executed = sum(bool(parse(c.raw, c.reasoning != "forbidden")) for c in malformed)
    ours_executed = sum(
        c.stopped and _ours(c.raw, c.reasoning, c.think_prefilled).ok for c in malformed
    )
    valid = [
        (c.raw, c.call, c.reasoning_mode, c.think_prefilled)
        for c in VALID_CORPUS
        if c.dialect == "qwen3_coder"
    ]
    rng = random.Random(7)
    for _ in range(n_turns):
        call = ToolCall("execute_bash", {"command": _code(rng, rng.randint(1, 30))})
        valid.append(
            (render_turn(_prose(rng, rng.randint(20, 400)), call), call, "required", False)
        )
    exact = sum(
        _executes_exactly(parse(raw, mode != "forbidden"), call) for raw, call, mode, _ in valid
    )
    ours_exact = sum(_ours(raw, mode, pre).call == call for raw, call, mode, pre in valid)
    megabytes = sum(len(raw.encode("utf-8", "surrogatepass")) for raw, *_ in valid) / 1e6
    ours_cpu = _cpu_seconds(lambda: [_ours(raw, mode, pre) for raw, _, mode, pre in valid])
    vllm_cpu = _cpu_seconds(lambda: [parse(raw, mode != "forbidden") for raw, _, mode, _ in valid])
    big = 20_000 if smoke else 1_000_000
    ordinary = {n: ordinary_input(n)[1] for n in (big, 4 * big)}
    floods = {n: _flood(n) for n in (big, 4 * big)}
    small = (500, 2_000) if smoke else (2_000, 8_000)
    vllm_floods = {n: _flood(n) for n in small}

    def ratio(times: dict[int, float]) -> float:
        low, high = sorted(times)
        return round(times[high] / times[low], 1)

    def vllm(raw: str) -> object:
        return parse(raw, True)

    ours_ordinary, vllm_ordinary = _cpu_each(_ours, ordinary), _cpu_each(vllm, ordinary)
    ours_flood, vllm_flood = _cpu_each(_ours, floods), _cpu_each(vllm, vllm_floods)
    result: dict[str, object] = {
        "peer": "vllm",
        "available": True,
        "vllm": vllm_version,
        "parser": "qwen3_coder tool parser + qwen3 reasoning parser (ParserManager.get_parser(...).parse)",
        "malformed_turns": len(malformed),
        "malformed_executed": {"swe_formatcheck": ours_executed, "vllm": executed},
        "valid_turns": len(valid),
        "valid_executed_exactly": {"swe_formatcheck": ours_exact, "vllm": exact},
        "mb": round(megabytes, 2),
        "mb_per_cpu_s": {
            "swe_formatcheck": round(megabytes / ours_cpu, 2),
            "vllm": round(megabytes / vllm_cpu, 2),
        },
        "speedup_per_cpu_s": round(vllm_cpu / ours_cpu, 1),
        "ordinary_turn_cpu_s": {
            "sizes": [big, 4 * big],
            "swe_formatcheck": [round(t, 4) for t in ours_ordinary.values()],
            "vllm": [round(t, 4) for t in vllm_ordinary.values()],
        },
        "parameter_flood_cpu_s": {
            "swe_formatcheck_sizes": [big, 4 * big],
            "swe_formatcheck": [round(t, 4) for t in ours_flood.values()],
            "vllm_sizes": list(small),
            "vllm": [round(t, 4) for t in vllm_flood.values()],
        },
    }
    result["table"] = _peer_table(
        result, ratio(ours_ordinary), ratio(vllm_ordinary), ratio(ours_flood), ratio(vllm_flood)
    )
    return result


def _peer_table(
    r: dict[str, Any], ord_ours: float, ord_vllm: float, flood_ours: float, flood_vllm: float
) -> str:
    """The README comparison table, from one run's figures."""
    flood = r["parameter_flood_cpu_s"]
    big = r["ordinary_turn_cpu_s"]["sizes"][0]
    rows = [
        "| measure | swe-formatcheck | vLLM " + r["vllm"] + " `qwen3_coder` + `qwen3` |",
        "|---|---|---|",
        f"| malformed qwen3_coder turns executed (of {r['malformed_turns']}) | {r['malformed_executed']['swe_formatcheck']} | {r['malformed_executed']['vllm']} |",
        f"| valid turns executed exactly (of {r['valid_turns']}) | {r['valid_executed_exactly']['swe_formatcheck']} | {r['valid_executed_exactly']['vllm']} |",
        f"| MB per CPU-second ({r['mb']} MB of turns) | {r['mb_per_cpu_s']['swe_formatcheck']} | {r['mb_per_cpu_s']['vllm']} ({r['speedup_per_cpu_s']}x slower) |",
        f"| ordinary turn {big / 1e6:g} MB → {4 * big / 1e6:g} MB (CPU-time ratio; 4 = linear) | x{ord_ours} | x{ord_vllm} |",
        f"| `<parameter=` flood {big / 1e6:g} MB → {4 * big / 1e6:g} MB | x{flood_ours} ({flood['swe_formatcheck'][0]:.2f} s → {flood['swe_formatcheck'][1]:.2f} s) | not measured (too slow); {flood['vllm_sizes'][0] / 1e3:g} KB → {flood['vllm_sizes'][1] / 1e3:g} KB: x{flood_vllm} ({flood['vllm'][0]:.2f} s → {flood['vllm'][1]:.2f} s) |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--turns", type=int, default=2000, help="realistic turns to time")
    parser.add_argument("--size-mb", type=float, default=1.0, help="adversarial input size (MB)")
    parser.add_argument("--repeats", type=int, default=3, help="best-of repeats per timing")
    parser.add_argument(
        "--peer",
        choices=["vllm"],
        help="also run the same inputs through a public parser (vllm: vLLM's qwen3_coder tool "
        "parser behind its qwen3 reasoning parser; needs vllm installed) and add the README "
        "comparison table (malformed executed, valid exact, MB/CPU-s, 1 MB -> 4 MB scaling)",
    )
    args = parser.parse_args()
    for name in ("turns", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.size_mb <= 0:
        parser.error("--size-mb must be positive")
    if args.smoke:
        args.turns, args.size_mb, args.repeats = 50, 0.02, 1
    size = int(args.size_mb * 1_000_000)
    regex_sizes = (2_000, 4_000) if args.smoke else (16_000, 32_000)
    result = {
        "benchmark": "formatcheck_throughput",
        "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}".strip(),
        "smoke": args.smoke,
        "realistic": throughput(args.turns, args.repeats),
        "adversarial_size_chars": size,
        "adversarial": scaling(size, args.repeats),
        "regex_baseline_repeated_parameter_open": regex_quadratic(regex_sizes),
    }
    if args.peer == "vllm":
        result["peer"] = peer_vllm(50 if args.smoke else 1000, smoke=args.smoke)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
