"""Benchmark the arctic-swe torch engine: generated tokens/s vs plain ``transformers`` generate.

For each concurrency N the same N prompts (equal length P) are decoded for exactly G new tokens
at temperature 1 with full-vocabulary sampling, twice:

* **engine** — N concurrent ``TorchEngine.generate_detailed`` calls on one asyncio loop (one
  batched prefill, then one batched decode forward per step for all N sequences, per-slot
  hybrid caches, FP32 recurrent state through hybrid-numerics);
* **baseline** — ``model.generate`` on the same ``[N, P]`` batch (``do_sample=True, top_k=0,
  top_p=1.0, temperature=1.0, min_new_tokens=max_new_tokens=G``), the stock HF cached loop.

Two workloads per N: ``uniform`` (every prompt P tokens, every turn G tokens: the baseline's best
case) and ``mixed`` (seeded prompt lengths in [P/2, 4P] and turn lengths in [G/8, 2G], as agent
turns are: the baseline left-pads the batch and decodes every row until the longest turn ends,
the engine retires each sequence at its own length). Only requested tokens count.

Both use the same model object (the tiny Qwen3.5 preset). Reported: tokens/s of each and the
ratio engine / baseline (target: >= 2x at 32 sequences). Then the cost of an
invalidating weight refresh with N sequences in mid-turn (every retained history recomputed before the next
token), with the same N parked after their turn (released: a continuing one is prefilled at its
next turn), and the stale-cache ablation (load the weights only).

**HTTP path** (``--http-concurrency``, default 32): the same model saved as a checkpoint and
served by ``arctic-swe serve`` in a subprocess with the same torch threads; the same N uniform
requests go through ``HttpEngine`` (one POST /v1/completions each, concurrent) and, alternately,
straight into an in-process ``TorchEngine``. Reported: tokens/s of each, their ratio and the HTTP
overhead (target: <= 10 % at 32 sequences).

**Paired runs** (``--paired-threads``, default ``1,2``; ``--paired-concurrency`` 32): at each
torch thread count, ``--paired-repeats`` pairs of (engine, HF generate) on the same N uniform
prompts, the order alternating between pairs, with the load average before and after; reported:
every pair's ratio HF seconds / engine seconds, their median, min and max (target: median >= 2 at
each thread count). Each side runs in its **own worker process** (started once per thread count,
model built from the same seed at one thread, then switched to the measured count; one run per
request from this process, so the two never run at once): at more than one thread every OS
thread that runs a parallel torch op owns an OpenMP team, and libgomp stops spin-waiting in
*every* team once the process manages more threads than cores — HF generate's team on the main
thread would slow the engine's team on its worker thread (and the reverse), measuring the
co-location rather than either side. What each side does: the engine records a log-prob per token and samples
by inverse CDF from one float64 uniform per token (``arctic_swe.engine._sampling``); HF runs
its stock sampling loop (``use_cache`` on by default, its own hybrid cache, SDPA attention, the
same hybrid-numerics Gated DeltaNet kernels since it is the same model object, softmax +
``torch.multinomial``, ``top_k=0, top_p=1, temperature=1``: no logits warper is applied).

Prints one JSON object as the last stdout line; progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

import attrs
import torch


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,8,32,64", help="comma-separated N values")
    parser.add_argument("--prompt-len", type=int, default=32, help="P: prompt tokens per sequence")
    parser.add_argument(
        "--new-tokens", type=int, default=64, help="G: tokens generated per sequence"
    )
    parser.add_argument("--vocab", type=int, default=4096, help="vocabulary size of the tiny model")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per case (median)")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch intra-op threads for both engine and baseline (0: torch's default)",
    )
    parser.add_argument(
        "--http-concurrency",
        type=int,
        default=32,
        help="N of the in-process vs HTTP comparison (0: skip it; it starts a server process)",
    )
    parser.add_argument(
        "--http-only",
        action="store_true",
        help="run only the in-process vs HTTP comparison (skip the HF baseline and refresh)",
    )
    parser.add_argument(
        "--paired-threads",
        default="1,2",
        help="torch thread counts of the paired engine-vs-HF runs at --paired-concurrency ('': skip)",
    )
    parser.add_argument("--paired-concurrency", type=int, default=32, help="N of the paired runs")
    parser.add_argument(
        "--paired-repeats", type=int, default=7, help="alternating engine/HF pairs per thread count"
    )
    parser.add_argument(
        "--paired-only", action="store_true", help="run only the paired comparison (no other rows)"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: a few seconds")
    parser.add_argument(
        "--paired-worker",
        choices=("engine", "hf"),
        help=argparse.SUPPRESS,  # internal: serve timed runs of one side at --threads
    )
    args = parser.parse_args()
    if args.smoke:
        args.concurrency, args.prompt_len, args.new_tokens, args.repeats = "1,4", 8, 8, 1
        args.http_concurrency = min(args.http_concurrency, 4)
        args.paired_concurrency, args.paired_repeats = 4, 2
    return args


def _prompts(n: int, length: int, vocab: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(n)
    return torch.randint(0, vocab, (n, length), generator=generator).tolist()


def _workload(
    kind: str, n: int, prompt_len: int, new_tokens: int, vocab: int
) -> tuple[list[list[int]], list[int]]:
    if kind == "uniform":
        return _prompts(n, prompt_len, vocab), [new_tokens] * n
    generator = torch.Generator().manual_seed(1000 + n)
    lengths = torch.randint(max(prompt_len // 2, 1), 4 * prompt_len + 1, (n,), generator=generator)
    turns = torch.randint(max(new_tokens // 8, 1), 2 * new_tokens + 1, (n,), generator=generator)
    prompts = [torch.randint(0, vocab, (int(k),), generator=generator).tolist() for k in lengths]
    return prompts, [int(t) for t in turns]


def _engine_run(
    model: torch.nn.Module, prompts: list[list[int]], new_tokens: int | list[int]
) -> float:
    from arctic_swe.engine import EngineConfig, TorchEngine
    from load_router import GenerateRequest

    engine = TorchEngine(model, EngineConfig(capacity=max(len(prompts), 1)))
    budgets = new_tokens if isinstance(new_tokens, list) else [new_tokens] * len(prompts)

    async def main() -> float:
        requests = [
            GenerateRequest(rollout_index=i, prompt_ids=tuple(p), max_new_tokens=g)
            for i, (p, g) in enumerate(zip(prompts, budgets, strict=True))
        ]
        started = time.perf_counter()
        turns = await asyncio.gather(*(engine.generate_detailed(r) for r in requests))
        elapsed = time.perf_counter() - started
        assert [len(t.token_ids) for t in turns] == budgets
        await engine.close()
        return elapsed

    return asyncio.run(main())


@torch.no_grad()
def _baseline_run(model: Any, prompts: list[list[int]], new_tokens: int | list[int]) -> float:
    """HF generate on the left-padded batch, decoding every row to the longest budget."""
    new_tokens = max(new_tokens) if isinstance(new_tokens, list) else new_tokens
    width = max(len(p) for p in prompts)
    batch = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    started = time.perf_counter()
    out = model.generate(
        batch,
        attention_mask=mask,
        do_sample=True,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        pad_token_id=0,
    )
    elapsed = time.perf_counter() - started
    assert out.shape[1] == width + new_tokens
    return elapsed


def _refresh_costs(
    model: torch.nn.Module, prompts: list[list[int]], new_tokens: int
) -> dict[str, Any]:
    """An invalidating refresh with N sequences in mid-turn (each history recomputed) and with
    the same N parked after their turn (released: nothing recomputed), vs the stale-cache
    ablation (weights only)."""
    from arctic_swe.engine import EngineConfig, TorchEngine
    from load_router import GenerateRequest

    weights = {k: v.clone() for k, v in model.state_dict().items()}

    async def main() -> dict[str, Any]:
        engine = TorchEngine(model, EngineConfig(capacity=len(prompts)))
        requests = [
            GenerateRequest(rollout_index=i, prompt_ids=tuple(p), max_new_tokens=new_tokens)
            for i, p in enumerate(prompts)
        ]
        turns = [asyncio.ensure_future(engine.generate_detailed(r)) for r in requests]
        halfway = len(prompts) * max(new_tokens // 2, 1)
        while engine.counters.generated_tokens < halfway and not any(t.done() for t in turns):
            await asyncio.sleep(0.001)  # every sequence is mid-turn, half its tokens out
        mid_turn = await engine.refresh_weights(weights, 1, invalidate_caches=True)
        await asyncio.gather(*turns)
        parked = await engine.refresh_weights(weights, 2, invalidate_caches=True)
        await asyncio.gather(*(engine.generate_detailed(r) for r in requests))
        stale = await engine.refresh_weights(weights, 3, invalidate_caches=False)
        await engine.close()
        return {
            "sequences": mid_turn.sequences,
            "mid_turn_reprefilled_tokens": mid_turn.reprefilled_tokens,
            "mid_turn_seconds": round(mid_turn.seconds, 4),
            "reprefill_tokens_per_s": round(mid_turn.reprefilled_tokens / mid_turn.seconds, 1),
            "parked_released": parked.released,
            "parked_seconds": round(parked.seconds, 4),
            "stale_ablation_seconds": round(stale.seconds, 4),
        }

    return asyncio.run(main())


def _http_compare(
    model: torch.nn.Module, n: int, prompt_len: int, new_tokens: int, vocab: int, repeats: int
) -> dict[str, Any]:
    """Tokens/s of N uniform turns in-process vs through ``arctic-swe serve`` + HttpEngine."""
    import subprocess
    import tempfile
    from pathlib import Path

    from arctic_swe.model import save_policy

    prompts = _prompts(n, prompt_len, vocab)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = save_policy(model, Path(tmp) / "policy")  # type: ignore[arg-type]
        command = [sys.executable, "-m", "arctic_swe._cli", "serve", "--model", str(checkpoint)]
        command += ["--port", "0", "--capacity", str(n), "--threads", str(torch.get_num_threads())]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            url = _ready_url(server)
            asyncio.run(_http_run(url, n, prompts[:2], 4))  # warm-up: connections, first step
            local, remote = [], []
            for repeat in range(repeats):
                # Paired and interleaved, the order alternating: a load spike from other jobs
                # on a shared machine hits both sides of a pair, not one side of the whole run.
                pair = [
                    lambda: local.append(_engine_run(model, prompts, new_tokens)),
                    lambda: remote.append(asyncio.run(_http_run(url, n, prompts, new_tokens))),
                ]
                for run in pair if repeat % 2 == 0 else pair[::-1]:
                    run()
                print(f"http pair {repeat}: in-process {local[-1]:.3f} s, http {remote[-1]:.3f} s",
                      file=sys.stderr)  # fmt: skip
        finally:
            server.terminate()
            server.wait(timeout=30)
    tokens = n * new_tokens
    local_rate = tokens / statistics.median(local)
    remote_rate = tokens / statistics.median(remote)
    pair_ratios = sorted(a / b for a, b in zip(local, remote, strict=True))  # http / in-process
    ratio = statistics.median(pair_ratios)
    overhead = 1.0 - ratio
    return {
        "concurrency": n,
        "tokens": tokens,
        "repeats": repeats,
        "in_process_tokens_per_s": round(local_rate, 1),
        "http_tokens_per_s": round(remote_rate, 1),
        "in_process_seconds": [round(x, 4) for x in local],
        "http_seconds": [round(x, 4) for x in remote],
        "pair_ratios_http_over_in_process": [round(r, 3) for r in pair_ratios],
        "ratio_http_over_in_process": round(ratio, 3),
        "http_overhead_pct": round(100 * overhead, 1),
        "target": "http overhead <= 10 %",
        "meets_target": overhead <= 0.10,
    }


def _ready_url(server: Any) -> str:
    """The URL from the server's ready line (its first stdout line)."""
    line = server.stdout.readline()
    if not line:
        raise SystemExit(f"arctic-swe serve exited before it was ready (code {server.poll()})")
    return str(json.loads(line)["url"])


async def _http_run(url: str, n: int, prompts: list[list[int]], new_tokens: int) -> float:
    from arctic_swe.engine import HttpEngine
    from load_router import GenerateRequest

    engine = HttpEngine("bench", url, capacity=n)
    requests = [
        GenerateRequest(rollout_index=i, prompt_ids=tuple(p), max_new_tokens=new_tokens)
        for i, p in enumerate(prompts)
    ]
    # Open the pool's connections first (one-token turns, untimed): the loop's client is
    # long-lived and reuses kept-alive connections, so TCP set-up is not per-turn cost.
    # Reversed prompts: no timed turn can reuse a warm-up's cached prefix.
    warm = [attrs.evolve(r, prompt_ids=r.prompt_ids[::-1], max_new_tokens=1) for r in requests]
    await asyncio.gather(*(engine.generate(r) for r in warm))
    started = time.perf_counter()
    results = await asyncio.gather(*(engine.generate(r) for r in requests))
    elapsed = time.perf_counter() - started
    assert all(len(r.token_ids) == new_tokens for r in results)
    await engine.close()
    return elapsed


class _Worker:
    """One side of the paired runs in its own process: ``run()`` times one generate there."""

    def __init__(self, side: str, threads: int, args: argparse.Namespace) -> None:
        import subprocess

        command = [sys.executable, __file__, "--paired-worker", side, "--threads", str(threads)]
        command += ["--prompt-len", str(args.prompt_len), "--new-tokens", str(args.new_tokens)]
        command += ["--vocab", str(args.vocab), "--paired-concurrency"]
        command += [str(args.paired_concurrency)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._reply()  # ready: model built, warmed up

    def _reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"paired worker exited (code {self.process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return float(self._reply()["seconds"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _worker_main(args: argparse.Namespace) -> None:
    """The worker process: build the model at one thread (no OpenMP team on this thread yet),
    switch to ``--threads``, warm up, then answer each ``run`` line with the run's seconds."""
    from arctic_swe.model import build_policy, policy_config

    torch.set_num_threads(1)
    model = build_policy(policy_config(args.vocab), 0)
    prompts = _prompts(args.paired_concurrency, args.prompt_len, args.vocab)
    torch.set_num_threads(args.threads)
    side = _engine_run if args.paired_worker == "engine" else _baseline_run
    side(model, prompts[:2], 4)
    print(json.dumps({"ready": True}), flush=True)
    for _ in sys.stdin:
        print(json.dumps({"seconds": side(model, prompts, args.new_tokens)}), flush=True)


def _paired(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Engine vs HF generate on N uniform sequences, per torch thread count, each side in its
    own worker process: the two runs alternate (engine first in even pairs, HF first in odd
    ones), so load from other jobs hits both sides of a pair; the figure is the median of the
    per-pair ratios HF s / engine s."""
    tokens = args.paired_concurrency * args.new_tokens
    rows = []
    for threads in [int(t) for t in args.paired_threads.split(",") if t]:
        workers = {side: _Worker(side, threads, args) for side in ("engine", "hf")}
        load_before = [round(x, 2) for x in os.getloadavg()]
        times: dict[str, list[float]] = {"engine": [], "hf": []}
        for repeat in range(args.paired_repeats):
            for side in ("engine", "hf") if repeat % 2 == 0 else ("hf", "engine"):
                times[side].append(workers[side].run())
            print(f"paired threads {threads} pair {repeat}: engine {times['engine'][-1]:.3f} s, "
                  f"hf {times['hf'][-1]:.3f} s", file=sys.stderr)  # fmt: skip
        for worker in workers.values():
            worker.close()
        engine_s, hf_s = times["engine"], times["hf"]
        ratios = sorted(h / e for e, h in zip(engine_s, hf_s, strict=True))
        rows.append(
            {
                "threads": threads,
                "isolation": "one worker process per side",
                "concurrency": args.paired_concurrency,
                "tokens": tokens,
                "pairs": args.paired_repeats,
                "engine_seconds": [round(x, 4) for x in engine_s],
                "hf_generate_seconds": [round(x, 4) for x in hf_s],
                "engine_tokens_per_s_median": round(tokens / statistics.median(engine_s), 1),
                "hf_generate_tokens_per_s_median": round(tokens / statistics.median(hf_s), 1),
                "pair_ratios": [round(r, 3) for r in ratios],
                "ratio_median": round(statistics.median(ratios), 3),
                "ratio_min": round(ratios[0], 3),
                "ratio_max": round(ratios[-1], 3),
                "load_before": load_before,
                "load_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
        print(json.dumps({"paired": rows[-1]}), file=sys.stderr)
    return rows


def _engine_vs_baseline(
    model: torch.nn.Module, sizes: list[int], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Both workloads at every N: engine vs HF generate tokens/s."""
    _baseline_run(model, _prompts(2, args.prompt_len, args.vocab), 4)  # warm-up
    results = []
    for kind in ("uniform", "mixed"):
        for n in sizes:
            prompts, budgets = _workload(kind, n, args.prompt_len, args.new_tokens, args.vocab)
            engine_s = statistics.median(
                _engine_run(model, prompts, budgets) for _ in range(args.repeats)
            )
            baseline_s = statistics.median(
                _baseline_run(model, prompts, budgets) for _ in range(args.repeats)
            )
            tokens = sum(budgets)
            row = {
                "workload": kind,
                "concurrency": n,
                "tokens": tokens,
                "engine_tokens_per_s": round(tokens / engine_s, 1),
                "hf_generate_tokens_per_s": round(tokens / baseline_s, 1),
                "ratio": round(baseline_s / engine_s, 2),
            }
            print(json.dumps(row), file=sys.stderr)
            results.append(row)
    return results


def main() -> None:
    args = _parse()
    if args.paired_worker:
        _worker_main(args)
        return
    paired = [] if args.http_only else _paired(args)  # in worker processes: first, on idle cores
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from arctic_swe.model import build_policy, numerics_installed, policy_config

    config = policy_config(args.vocab)
    try:
        model = build_policy(config, 0)
    except ValueError as exc:  # hybrid-numerics without its Qwen3.5 patch yet
        print(f"numerics patch unavailable ({exc}); using stock numerics", file=sys.stderr)
        model = build_policy(config, 0, patch_numerics=False)
    sizes = [int(n) for n in args.concurrency.split(",")]
    warm = _prompts(2, args.prompt_len, args.vocab)
    _engine_run(model, warm, 4)
    results: list[dict[str, Any]] = []
    refresh = None
    if args.paired_only:
        args.http_concurrency = 0
    if not (args.http_only or args.paired_only):
        results = _engine_vs_baseline(model, sizes, args)
        refresh = _refresh_costs(
            model, _prompts(max(sizes), args.prompt_len, args.vocab), args.new_tokens
        )
        print(json.dumps({"refresh": refresh}), file=sys.stderr)
    http = None
    if args.http_concurrency > 0:
        http = _http_compare(
            model, args.http_concurrency, args.prompt_len, args.new_tokens, args.vocab,
            max(args.repeats, 1),
        )  # fmt: skip
        print(json.dumps({"http": http}), file=sys.stderr)
    at_32 = next(
        (r["ratio"] for r in results if r["concurrency"] == 32 and r["workload"] == "uniform"), None
    )
    summary = {
        "benchmark": "engine_throughput",
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, torch threads {torch.get_num_threads()}",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],  # shared machine
        "model": {
            "preset": "tiny",
            "vocab": args.vocab,
            "parameters": sum(p.numel() for p in model.parameters()),
            "hybrid_numerics_patched": numerics_installed(model),
        },
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "results": results,
        "refresh": refresh,
        "http": http,
        "paired": paired,
        "target": "paired median ratio >= 2.0 at every paired thread count (32 uniform)",
        "meets_target": (
            all(row["ratio_median"] >= 2.0 for row in paired)
            if paired
            else (None if at_32 is None else at_32 >= 2.0)
        ),
        "smoke": args.smoke,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
