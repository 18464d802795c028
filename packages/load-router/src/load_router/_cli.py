"""Command line: ``python -m load_router simulate …`` prints the routing comparison table.

Exit codes: 0 success; 2 a usage error (a bad option, or values :class:`SimConfig` refuses);
1 a runtime failure (the simulation itself failed); 130 interrupted. An error is one
``python -m load_router simulate: error: …`` line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import NoReturn

import attrs

from load_router._errors import InvalidArgumentError, RouterError
from load_router._sim_config import POLICY_NAMES, SimConfig, SimResult
from load_router._simulate import simulate

PROG = "python -m load_router"
USAGE_EXIT = 2
FAILURE_EXIT = 1

#: Help text of every simulator option (one per :class:`SimConfig` field).
OPTION_HELP: dict[str, str] = {
    "policy": "placement policy of the candidate run (the baseline is always session-hash)",
    "engines": "number of inference engines E",
    "max_resident_per_engine": "resident-rollout cap per engine for the candidate run "
    "(0 = no cap); the session-hash baseline runs uncapped, as in the paper",
    "group_size": "rollouts per group n (a group is leased whole to one engine)",
    "groups_per_update": "groups the trainer consumes per update B",
    "max_outstanding_groups": "groups queued, running or buffered at once (the orchestrator's "
    "generation budget)",
    "updates": "trainer updates to simulate",
    "warmup_updates": "leading updates left out of the figures",
    "max_off_policy": "drop groups whose lag exceeds this many versions",
    "peak_tokens_per_s": "an engine's saturated decode throughput (tokens/s)",
    "knee": "concurrency knee: per-sequence rate is peak/(decoding+knee)",
    "kv_slots": "resident rollouts an engine holds before it thrashes (preempts, recomputes)",
    "thrash_exponent": "beyond kv_slots every rate is multiplied by (kv_slots/resident)**this",
    "tasks": "size of the task pool groups are sampled from (session-hash keys on the task)",
    "task_length_sigma": "log-normal sigma of a task's length factor (hard tasks are long)",
    "turns_median": "median turns per rollout (times the task factor)",
    "turns_sigma": "log-normal sigma of turns per rollout",
    "max_turns": "turn budget per rollout",
    "tokens_median": "median generated tokens per turn",
    "tokens_sigma": "log-normal sigma of tokens per turn",
    "max_tokens_per_turn": "generated-token cap per turn",
    "tool_median_s": "median tool latency between turns (s)",
    "tool_sigma": "log-normal sigma of tool latency",
    "prompt_tokens": "initial context per rollout (re-prefilled after invalidation)",
    "observation_tokens": "tool-output tokens appended to the context per turn",
    "train_fixed_s": "fixed seconds per optimiser step",
    "train_s_per_token": "training seconds per batch token",
    "weight_load_s": "seconds for an engine to load new weights",
    "prefill_tokens_per_s": "re-prefill speed after cache invalidation (tokens/s per engine)",
    "invalidate_caches": "invalidate caches and re-prefill on refresh (paper); "
    "--no-invalidate-caches is the stale-cache ablation",
    "seed": "random seed (same seed and options -> same figures)",
}

#: (label, SimResult attribute, paper session-hash, paper least-loaded) of the comparison table.
FIGURES = (
    ("stale drops / update", "stale_drops_per_update", "27", "0.8"),
    ("mean policy lag (updates)", "mean_lag", "3.1", "2.0"),
    ("update time (s)", "update_s", "22 min", "11.6 min"),
    ("tokens/s", "tokens_per_s", "298k", "417k"),
)
EXTRA = (
    ("  waiting for groups (s)", "waiting_s"),
    ("  training (s)", "training_s"),
    ("mean lag of kept groups", "mean_kept_lag"),
    ("max lag of kept groups", "max_lag"),
    ("peak rollouts on one engine", "peak_engine_rollouts"),
    ("refresh pause per engine (s)", "refresh_pause_s"),
    ("stale-cache tokens", "stale_cache_tokens"),
)


def _finite_float(text: str) -> float:
    """An argparse type for the simulator's real-valued knobs: ``nan`` and ``inf`` parse as
    floats but have no meaning in a workload model (they deadlock or index out of range)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _add_options(parser: argparse.ArgumentParser) -> None:
    for field in attrs.fields(SimConfig):
        flag = "--" + field.name.replace("_", "-")
        default = field.default
        help_text = f"{OPTION_HELP[field.name]} (default: {default})"
        if field.name == "policy":
            parser.add_argument(flag, choices=POLICY_NAMES, default=default, help=help_text)
        elif field.type in (bool, "bool"):
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=default, help=help_text
            )
        elif field.name == "max_resident_per_engine":
            parser.add_argument(flag, type=int, default=default, help=help_text)
        else:
            kind = _finite_float if isinstance(default, float) else int
            parser.add_argument(flag, type=kind, default=default, help=help_text)


class _RouterParser(argparse.ArgumentParser):
    """Usage errors in one line, ``PROG: error: …`` and where to look, exit 2 (sub-parsers are
    built with the parent's class, so ``simulate`` gets this too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m load_router`` parser (one sub-command, ``simulate``)."""
    parser = _RouterParser(prog=PROG)
    commands = parser.add_subparsers(dest="command", required=True)
    sim = commands.add_parser(
        "simulate",
        help="compare session-hash routing with a capped candidate policy",
        description="Discrete-event simulation of asynchronous agent RL (paper §3.3). Runs the "
        "session-hash baseline (uncapped) and the candidate policy (default least-loaded with "
        "the resident cap) on the same seeded workload and prints the comparison table.",
    )
    _add_options(sim)
    sim.add_argument("--json", action="store_true", help="print both summaries as one JSON line")
    return parser


def _fmt(value: object) -> str:
    return f"{value:,.2f}" if isinstance(value, float) else str(value)


def comparison_table(baseline: SimResult, candidate: SimResult) -> str:
    """A Markdown table: baseline vs candidate on the paper's four figures, plus details."""
    head_b = "session-hash (no cap)"
    cap = candidate.config.max_resident_per_engine
    head_c = f"{candidate.config.policy} (cap {cap})" if cap else candidate.config.policy
    lines = [
        f"| figure | {head_b} | {head_c} | paper: session-hash | paper: least-loaded |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, attr, paper_b, paper_c in FIGURES:
        values = _fmt(getattr(baseline, attr)), _fmt(getattr(candidate, attr))
        lines.append(f"| {label} | {values[0]} | {values[1]} | {paper_b} | {paper_c} |")
    for label, attr in EXTRA:
        values = _fmt(getattr(baseline, attr)), _fmt(getattr(candidate, attr))
        lines.append(f"| {label} | {values[0]} | {values[1]} | | |")
    return "\n".join(lines)


def wins(baseline: SimResult, candidate: SimResult) -> dict[str, bool]:
    """Whether the candidate beats the baseline on each of the paper's four figures."""
    return {
        "stale_drops_per_update": candidate.stale_drops_per_update
        < baseline.stale_drops_per_update,
        "mean_lag": candidate.mean_lag < baseline.mean_lag,
        "update_s": candidate.update_s < baseline.update_s,
        "tokens_per_s": candidate.tokens_per_s > baseline.tokens_per_s,
    }


def run_comparison(config: SimConfig) -> tuple[SimResult, SimResult]:
    """Simulate the uncapped session-hash baseline and ``config`` on the same workload."""
    baseline = attrs.evolve(config, policy="session-hash", max_resident_per_engine=None)
    return simulate(baseline), simulate(config)


def _error(command: str, message: object, code: int) -> int:
    print(f"{PROG} {command}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m load_router``: 0 success, 2 a usage error, 1 a runtime
    failure of the simulation, 130 interrupted."""
    args = vars(build_parser().parse_args(argv))
    command = args.pop("command")
    as_json = args.pop("json")
    if args["max_resident_per_engine"] == 0:
        args["max_resident_per_engine"] = None
    try:
        config = SimConfig(**args)
    except InvalidArgumentError as exc:
        return _error(command, exc, USAGE_EXIT)
    try:
        baseline, candidate = run_comparison(config)
    except InvalidArgumentError as exc:  # a combination only the simulation can refuse
        return _error(command, exc, USAGE_EXIT)
    except (RouterError, RuntimeError) as exc:  # the simulation failed (the work, not the input)
        return _error(command, exc, FAILURE_EXIT)
    except KeyboardInterrupt:
        return _error(command, "interrupted", 130)
    verdict = wins(baseline, candidate)
    if as_json:
        summary = {"baseline": baseline.summary(), "candidate": candidate.summary()}
        print(json.dumps({**summary, "candidate_wins": verdict}))
        return 0
    print(comparison_table(baseline, candidate))
    print()
    won = sum(verdict.values())
    print(f"candidate beats session-hash on {won}/4 figures: {verdict}")
    return 0
