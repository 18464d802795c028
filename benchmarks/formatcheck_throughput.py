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

Prints one JSON object as its last stdout line. `--smoke` runs tiny sizes in a few seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import time
from collections.abc import Callable

from swe_formatcheck import TOOLSETS, ToolCall, check_turn, render_turn

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
            if not check_turn(raw, tools=TOOLS, dialect=dialect).ok:  # type: ignore[arg-type]
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
            lambda: check_turn(raw, tools=TOOLS, dialect=dialect),  # type: ignore[arg-type]
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument("--turns", type=int, default=2000, help="realistic turns to time")
    parser.add_argument("--size-mb", type=float, default=1.0, help="adversarial input size (MB)")
    parser.add_argument("--repeats", type=int, default=3, help="best-of repeats per timing")
    args = parser.parse_args()
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
    print(json.dumps(result))


if __name__ == "__main__":
    main()
