"""Benchmark cispo-loss: peak memory and time of ``token_logprobs`` forward+backward.

Compares the chunked custom autograd function (``cispo_loss.token_logprobs``, default tile sizes)
with the naive full-logits path (``cispo_loss.reference.reference_token_logprobs``: ``[T, V]``
logits, ``log_softmax``, gather, entropy) at several (T, V). The objective is the same for both:
``(logprobs + entropy).sum().backward()``, so both produce gradients for the hidden states and
the LM-head weight.

Each (case, path) runs in a fresh subprocess so allocations cannot pollute each other. Peak
memory is the process's peak resident set (``VmHWM``) minus the resident set measured right
before the first forward (inputs already built, kernels already warmed up on a tiny problem), so
it counts every byte the forward+backward allocated at its high-water mark, gradients included.
Time is the median wall time of ``--repeats`` forward+backward runs after that first one.

``--smoke`` runs both paths in this process instead (torch imports once; a few seconds), so its
peak figures are polluted by each other and only show that the script works.

Targets: at the largest case peak memory <= 1/4 of naive, time <= 1.3x naive.
Prints one JSON object as the last stdout line; one line per case goes to stderr as it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

DEFAULT_CASES = "2048x32768,2048x65536,2048x151936,8192x32768"
SMOKE_CASES = "256x2048,512x4096"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()


def _peak_rss_bytes() -> int:
    """This process image's RSS high-water mark (VmHWM).

    Not ``ru_maxrss``: after fork + exec it still remembers the parent's RSS at the fork.
    """
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmHWM:"))


def worker(
    path: str, tokens: int, vocab: int, hidden: int, dtype_name: str, repeats: int
) -> dict[str, Any]:
    """Run inside the subprocess: one path, one case; return peak extra bytes and times."""
    import torch

    from cispo_loss import token_logprobs
    from cispo_loss.reference import reference_token_logprobs

    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)

    def make(t: int, v: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = (torch.randn(t, hidden, generator=gen) * 0.5).to(dtype).requires_grad_(True)
        w = (torch.randn(v, hidden, generator=gen) * 0.5).to(dtype).requires_grad_(True)
        return h, w, torch.randint(0, v, (t,), generator=gen)

    def step(h: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> None:
        if path == "naive":
            lp, ent = reference_token_logprobs(h, w, t)
        else:
            lp, ent = token_logprobs(h, w, t)
        (lp.sum() + ent.sum()).backward()
        h.grad = w.grad = None

    step(*make(8, 64))  # load kernels and libraries before the baseline
    inputs = make(tokens, vocab)
    baseline = _rss_bytes()
    start = time.perf_counter()
    step(*inputs)
    first = time.perf_counter() - start
    peak = _peak_rss_bytes() - baseline
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(*inputs)
        times.append(time.perf_counter() - start)
    return {
        "peak_extra_bytes": peak,
        "first_s": first,
        "times_s": times,
        "threads": torch.get_num_threads(),
    }


def run_case(
    path: str, tokens: int, vocab: int, hidden: int, dtype: str, repeats: int
) -> dict[str, Any]:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        path,
        str(tokens),
        str(vocab),
        str(hidden),
        dtype,
        str(repeats),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker {path} T={tokens} V={vocab} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def parse_cases(text: str) -> list[tuple[int, int]]:
    cases = []
    for item in text.split(","):
        tokens, vocab = item.lower().split("x")
        cases.append((int(tokens), int(vocab)))
    return cases


def machine() -> dict[str, Any]:
    import torch

    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(
                line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--smoke", action="store_true", help=f"tiny cases ({SMOKE_CASES}), one repeat"
    )
    parser.add_argument(
        "--cases", default=DEFAULT_CASES, help="comma-separated TxV list (default: %(default)s)"
    )
    parser.add_argument(
        "--hidden", type=int, default=256, help="hidden size H (default: %(default)s)"
    )
    parser.add_argument(
        "--dtype", default="float32", choices=["float32", "bfloat16"], help="input dtype"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="timed runs after the first (default: %(default)s)"
    )
    parser.add_argument("--worker", nargs=6, metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        path, tokens, vocab, hidden, dtype, repeats = args.worker
        print(json.dumps(worker(path, int(tokens), int(vocab), int(hidden), dtype, int(repeats))))
        return
    cases = parse_cases(SMOKE_CASES if args.smoke else args.cases)
    hidden = 64 if args.smoke else args.hidden
    repeats = 1 if args.smoke else args.repeats
    rows = []
    for tokens, vocab in cases:
        row: dict[str, Any] = {
            "tokens": tokens,
            "vocab": vocab,
            "hidden": hidden,
            "dtype": args.dtype,
        }
        for path in ("naive", "chunked"):
            if args.smoke:  # in-process: checks the plumbing fast; the peak figures mean little
                measured = worker(path, tokens, vocab, hidden, args.dtype, repeats)
            else:
                measured = run_case(path, tokens, vocab, hidden, args.dtype, repeats)
            row[f"{path}_peak_mib"] = round(measured["peak_extra_bytes"] / 2**20, 1)
            row[f"{path}_time_s"] = round(
                statistics.median(measured["times_s"] or [measured["first_s"]]), 3
            )
            row["threads"] = measured["threads"]
        row["memory_ratio"] = round(row["chunked_peak_mib"] / max(row["naive_peak_mib"], 1e-9), 4)
        row["time_ratio"] = round(row["chunked_time_s"] / max(row["naive_time_s"], 1e-9), 3)
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    largest = max(rows, key=lambda r: r["tokens"] * r["vocab"])
    summary = {
        "benchmark": "cispo_memory",
        "smoke": args.smoke,
        "machine": machine(),
        "cases": rows,
        "largest": {"tokens": largest["tokens"], "vocab": largest["vocab"]},
        "largest_memory_ratio": largest["memory_ratio"],
        "largest_time_ratio": largest["time_ratio"],
        "memory_target_met": largest["memory_ratio"] <= 0.25,
        "time_target_met": largest["time_ratio"] <= 1.3,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
