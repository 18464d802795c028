"""One engine and one trainer rank on one GPU, refreshed by both of vLLM 0.33's weight paths
through the project's own engine client (Arctic-SWE §3.3).

Stages, each timed and guarded on its own (a failure is recorded under ``stages`` and the
later stages still run where they can):

1. ``checkpoint`` — a tiny Qwen3.5 policy and the app's tokenizer written as a Hugging Face
   checkpoint (``gpu_engine``'s helper); this process keeps the same policy on the GPU as the
   *trainer* rank.
2. ``server`` — one ``vllm serve`` engine with the recipe's flags
   (``arctic_swe.serve.vllm_command``: NCCL weight-transfer config, ``--generation-config
   vllm``) plus ``--enforce-eager``. Its seconds are the time to ready.
3. ``baseline`` — a batch of rollouts (``HttpEngine.generate``) at version 0, scored by the
   trainer's forward.
4. ``nccl_1`` .. ``nccl_3`` (after ``nccl_sender``, which builds the trainer side; the
   first refresh includes joining the engine's group) — the trainer perturbs its weights (an
   optimizer step's stand-in) and refreshes the engine by the NCCL path:
   ``HttpEngine(weight_transfer="nccl")`` with a ``VllmNcclSender`` (vLLM's own trainer-side
   PyNccl endpoint and packed broadcast); then a batch of rollouts scored by the trainer. NCCL may refuse two ranks on one device: the error
   is recorded, the remaining NCCL stages are skipped, the reload stages still run.
5. ``reload_4`` .. ``reload_6`` — the same by the reload path: the weights published as a
   directory (``arctic_swe.weights.publish``), ``/collective_rpc reload_weights``,
   ``/update_weight_version``.

Reported per update: refresh seconds, the label the engine serves and the tokens carry, max
|Δ log-prob| and the mismatch KL (k3, ``E[exp(r) - 1 - r]``, ``r = log π_trainer -
log π_engine``) of the batch after it. The last stdout line is one JSON object; progress goes
to stderr. Must finish in < 5 min on one H200.

``--dry-run`` (alias ``--smoke``): the same flow on the CPU with ``arctic-swe serve`` as the
engine and ``LocalWeightSender`` (gloo) as the trainer side, tiny sizes (what CI runs).
Run it through ``benchmarks/gpu_cluster_smoke.sh`` on a machine without a package index.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("PYTHONUNBUFFERED", "1")

import gpu_engine  # benchmarks/ is on sys.path when a benchmark runs
import torch

Stages = dict[str, dict[str, Any]]
ENGINE_ID = "engine-0"


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        """The stage list as written, and every option's default."""

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=Formatter)
    parser.add_argument(
        "--sequences", type=int, default=16, help="rollouts per batch (also the capacity)"
    )
    parser.add_argument("--prompt-len", type=int, default=32, help="prompt tokens per rollout")
    parser.add_argument("--new-tokens", type=int, default=64, help="most tokens per rollout")
    parser.add_argument("--vocab", type=int, default=2048, help="tokenizer vocabulary to train")
    parser.add_argument("--updates", type=int, default=3, help="refreshes per path")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.3, help="vLLM's share of the GPU"
    )
    parser.add_argument(
        "--startup-timeout", type=float, default=240.0, help="seconds for the engine to answer"
    )
    parser.add_argument(
        "--refresh-timeout",
        type=float,
        default=90.0,
        help="seconds one refresh (and each weight route, each rendezvous) may take",
    )
    parser.add_argument(
        "--dry-run",
        "--smoke",
        dest="dry_run",
        action="store_true",
        help="CPU: arctic-swe serve as the engine and LocalWeightSender (gloo) as the "
        "trainer side; tiny sizes (sequences 4, prompt 8, new tokens 8, vocab 320)",
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        args.sequences, args.prompt_len, args.new_tokens, args.vocab = 4, 8, 8, 320
    if min(args.sequences, args.prompt_len, args.new_tokens, args.updates) < 1:
        parser.error("--sequences, --prompt-len, --new-tokens and --updates must be >= 1")
    return args


def _log(message: str) -> None:
    print(f"[gpu_cluster_smoke {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr)


async def _stage(stages: Stages, name: str, body: Callable[[], Awaitable[Any]]) -> Any:
    """Run one stage; record ok/seconds/error; return its value (``None`` if it failed)."""
    _log(f"{name} ...")
    started = time.perf_counter()
    try:
        value = await body()
    except Exception as exc:  # a stage's failure is data: the rest still runs
        error = f"{type(exc).__name__}: {exc}"[:2000]
        stages[name] = {"ok": False, "seconds": _since(started), "error": error}
        _log(f"{name} failed: {error}")
        return None
    stages[name] = {"ok": True, "seconds": _since(started), "error": None}
    _log(f"{name} ok in {stages[name]['seconds']} s")
    return value


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


# ------------------------------------------------------------------ the engine
def _start_engine(args: argparse.Namespace, checkpoint: Path, root: Path) -> Any:
    if args.dry_run:  # gpu_engine's smoke server: arctic-swe serve on the CPU
        smoke = argparse.Namespace(
            smoke=True, sequences=args.sequences, startup_timeout=args.startup_timeout
        )
        return gpu_engine._start_server(smoke, checkpoint, root)
    import subprocess

    from arctic_swe.serve import VllmServeSpec, vllm_command, vllm_environment

    port = gpu_engine._free_port()
    spec = VllmServeSpec(
        model=str(checkpoint),
        port=port,
        max_num_seqs=args.sequences,
        max_model_len=args.prompt_len + args.new_tokens + 64,
        gpu_memory_utilization=args.gpu_memory_utilization,
        weight_transfer_backend="nccl",
    )
    # This interpreter's vLLM (the versions reported), whatever `vllm` is on PATH.
    command = [sys.executable, "-m", "vllm.entrypoints.cli.main"]
    command += [*vllm_command(spec)[1:], "--enforce-eager"]
    log = root / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=vllm_environment(os.environ)
        )
    server = gpu_engine.Server(process, f"http://127.0.0.1:{port}", log)
    try:
        gpu_engine._await_health(server, args.startup_timeout)
    except BaseException:
        server.stop()
        raise
    return server


class _AwaitedInitInfo:
    """A sender whose ``init_info`` may still be synchronous, seen through the awaitable
    ``WeightSender`` protocol ``HttpEngine`` drives."""

    def __init__(self, sender: Any) -> None:
        self._sender = sender

    async def init_info(self, engine_id: str) -> dict[str, Any]:
        info = self._sender.init_info(engine_id)
        return dict(await info if inspect.isawaitable(info) else info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sender, name)


def _sender(args: argparse.Namespace, weights: dict[int, dict[str, torch.Tensor]]) -> Any:
    def pairs(version: int) -> list[tuple[str, torch.Tensor]]:
        return list(weights[version].items())

    if args.dry_run:
        from arctic_swe.transfer import LocalWeightSender

        return _AwaitedInitInfo(LocalWeightSender(pairs, timeout_s=args.refresh_timeout))
    try:
        from arctic_swe.transfer import VllmNcclSender  # type: ignore[attr-defined]
    except ImportError:  # not yet re-exported by the package
        from arctic_swe.transfer._vllm_sender import VllmNcclSender

    return VllmNcclSender(pairs, device=torch.cuda.current_device(), timeout_s=args.refresh_timeout)


# ------------------------------------------------------------------ rollouts and updates
async def _score(
    args: argparse.Namespace, engine: Any, trainer: Any, low: int, version: int
) -> dict[str, Any]:
    """A batch of rollouts at ``version``: the trainer's forward scores every token; the
    engine's label and every token's version must be ``version``."""
    from load_router import GenerateRequest

    vocab = trainer.config.vocab_size
    prompts = gpu_engine._prompts(args.sequences, args.prompt_len, low, vocab, seed=version)
    requests = [
        GenerateRequest(
            rollout_index=i,
            prompt_ids=p,
            max_new_tokens=args.new_tokens,
            seed=1000 * version + i,
        )
        for i, p in enumerate(prompts)
    ]
    results = await asyncio.gather(*(engine.generate(r) for r in requests))
    served = await engine.weight_version()
    labels = sorted({v for r in results for v in r.token_versions})
    if served != version or labels != [version]:
        raise RuntimeError(f"expected version {version}: served {served}, tokens carry {labels}")
    turns = [(list(r.token_ids), list(r.logprobs)) for r in results]
    figures = await asyncio.to_thread(gpu_engine._mismatch, trainer, prompts, turns)
    return {"version": version, "served_version": served, **figures}


async def _update(
    args: argparse.Namespace,
    engine: Any,
    trainer: Any,
    low: int,
    weights: dict[int, dict[str, torch.Tensor]],
    path: str,
    version: int,
    root: Path,
) -> dict[str, Any]:
    """The trainer's step (noise on its weights), the refresh to ``version`` by ``path``,
    then a scored batch."""
    from arctic_swe.weights import publish

    dtype = torch.float32 if args.dry_run else torch.bfloat16  # the engine's dtype
    weights.clear()  # only the newest version is kept (on the GPU for NCCL)
    weights[version] = gpu_engine._new_weights(trainer, dtype)
    reference = "unused-by-nccl"
    if path == "reload":
        on_cpu = {name: tensor.cpu() for name, tensor in weights[version].items()}
        reference = str(await asyncio.to_thread(publish, on_cpu, root / "weights", version))
    started = time.perf_counter()
    await asyncio.wait_for(engine.refresh(reference, version), args.refresh_timeout)
    seconds = _since(started)
    scored = await _score(args, engine, trainer, low, version)
    return {"path": path, "refresh_seconds": seconds, **scored}


# ------------------------------------------------------------------ main
async def _flow(args: argparse.Namespace, root: Path, stages: Stages) -> dict[str, Any]:
    from arctic_swe.engine import HttpEngine, HttpEngineConfig

    device = "cpu" if args.dry_run else "cuda"
    values: dict[str, Any] = {"updates": []}
    made = await _stage(
        stages,
        "checkpoint",
        lambda: asyncio.to_thread(gpu_engine._checkpoint, root, args.vocab, device),
    )
    if made is None:
        return values
    checkpoint, trainer, low = made
    server = await _stage(
        stages, "server", lambda: asyncio.to_thread(_start_engine, args, checkpoint, root)
    )
    if server is None:
        return values
    values["seconds_to_ready"] = stages["server"]["seconds"]
    weights: dict[int, dict[str, torch.Tensor]] = {}
    sender: Any = None
    timeouts = {"control_timeout_s": args.refresh_timeout, "retries": 2}
    engines: dict[str, Any] = {}
    try:
        engines["reload"] = HttpEngine(
            ENGINE_ID, server.url, capacity=args.sequences, config=HttpEngineConfig(**timeouts)
        )

        async def baseline() -> dict[str, Any]:
            return await _score(args, engines["reload"], trainer, low, 0)

        values["baseline"] = await _stage(stages, "baseline", baseline)

        async def make_sender() -> None:
            nonlocal sender
            sender = _sender(args, weights)
            config = HttpEngineConfig(weight_transfer="nccl", **timeouts)
            engines["nccl"] = HttpEngine(
                ENGINE_ID, server.url, capacity=args.sequences, config=config, weight_sender=sender
            )

        await _stage(stages, "nccl_sender", make_sender)
        plan = [("nccl", v) for v in range(1, args.updates + 1)]
        plan += [("reload", v) for v in range(args.updates + 1, 2 * args.updates + 1)]
        for path, version in plan:
            name = f"{path}_{version}"
            failed = [n for n, st in stages.items() if n.startswith(path) and not st["ok"]]
            if path == "nccl" and failed:  # a broken group stays broken: the reload path runs
                stages[name] = {
                    "ok": False,
                    "seconds": 0.0,
                    "error": f"skipped: {failed[0]} failed",
                }
                continue

            async def body(path: str = path, version: int = version) -> dict[str, Any]:
                engine = engines[path]
                return await _update(args, engine, trainer, low, weights, path, version, root)

            update = await _stage(stages, name, body)
            if update is not None:
                values["updates"].append(update)
    finally:
        for engine in engines.values():
            await engine.close()
        if sender is not None:
            sender.close()
        if not all(stage["ok"] for stage in stages.values()):
            values["server_log_tail"] = server.tail()
        await asyncio.to_thread(server.stop)
    return values


def _versions() -> dict[str, str | None]:
    try:
        from importlib.metadata import version

        vllm: str | None = version("vllm")
    except Exception:  # not installed (the dry run)
        vllm = None
    return {"python": platform.python_version(), "torch": torch.__version__, "vllm": vllm}


def _summary(args: argparse.Namespace, values: dict[str, Any], stages: Stages) -> dict[str, Any]:
    updates = values.get("updates", [])

    def per_path(key: str) -> dict[str, list[Any]]:
        return {p: [u[key] for u in updates if u["path"] == p] for p in ("nccl", "reload")}

    baseline = values.get("baseline") or {}
    paths_ok = {
        path: sum(1 for u in updates if u["path"] == path) == args.updates
        for path in ("nccl", "reload")
    }
    return {
        "benchmark": "gpu_cluster_smoke",
        "dry_run": args.dry_run,
        "engine": "arctic-swe serve (torch, CPU)" if args.dry_run else "vllm serve (GPU)",
        "trainer_side": "LocalWeightSender (gloo)" if args.dry_run else "VllmNcclSender (NCCL)",
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "versions": _versions(),
        "sequences": args.sequences,
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        "seconds_to_ready": values.get("seconds_to_ready"),
        "refresh_seconds": per_path("refresh_seconds"),
        "max_abs_dlogprob": {
            "baseline": baseline.get("max_abs_dlogprob"),
            **per_path("max_abs_dlogprob"),
        },
        "mismatch_kl": {"baseline": baseline.get("mismatch_kl"), **per_path("mismatch_kl")},
        "baseline": values.get("baseline"),
        "updates": updates,
        "paths_ok": paths_ok,
        "stages": stages,
        "all_ok": all(stage["ok"] for stage in stages.values()),
        **({"server_log_tail": values["server_log_tail"]} if "server_log_tail" in values else {}),
    }


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    started = time.perf_counter()
    stages: Stages = {}
    if not args.dry_run and not torch.cuda.is_available():
        stages["gpu"] = {"ok": False, "seconds": 0.0, "error": "no CUDA device (try --dry-run)"}
    values: dict[str, Any] = {}
    if not stages:
        with tempfile.TemporaryDirectory(prefix="gpu-cluster-smoke-") as tmp:
            values = asyncio.run(_flow(args, Path(tmp), stages))
    summary = _summary(args, values, stages)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(summary, default=str), flush=True)
    # A collective stuck on a vanished peer lives in a daemon thread: nothing left to wait for.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
