"""A vLLM engine on one GPU: rollouts over HTTP, one in-flight weight update from the trainer
process, the refreshed engine's log-probs against the trainer's own forward (Arctic-SWE §3.3,
§5: engines are servers the orchestrator drives over HTTP and refreshes mid-rollout).

Stages, each timed and guarded on its own (a failure is recorded under ``stages`` and the rest
still run where they can):

1. ``checkpoint`` — the app's tokenizer (byte-level BPE trained here on a small corpus) and a
   tiny Qwen3.5 policy with random weights and the app's config, written as a local Hugging
   Face checkpoint; this process keeps the same policy as the *trainer*.
2. ``server`` — ``vllm serve`` with the recipe's flags (``arctic_swe.serve.vllm_command``) plus
   ``--enforce-eager`` and the **IPC** weight-transfer backend: trainer and engine share the one
   GPU, and NCCL refuses two ranks on one device (the NCCL backend needs the trainer on another
   GPU). ``--smoke``: ``arctic-swe serve`` (torch backend, CPU) instead.
3. ``rollouts`` — N concurrent completions of G tokens (token ids in, raw log-probs out) over
   HTTP: generated tokens/s; their log-probs against the trainer's forward (before any update).
4. ``refresh`` — a batch of N turns is started; mid-batch the trainer perturbs its weights (an
   optimizer step's stand-in) and runs vLLM's keep-mode RL flow: ``/pause?mode=keep&
   clear_cache=true`` → ``/start_weight_update`` → ``/update_weights`` (IPC handles of the
   trainer's CUDA tensors) → ``/finish_weight_update`` → ``/resume``. ``--smoke`` takes vLLM's
   reload path instead: the weights published as a directory of safetensors
   (``arctic_swe.weights.publish``), then ``/pause?mode=keep&clear_cache=true`` →
   ``/collective_rpc`` ``reload_weights`` of that directory → ``/update_weight_version`` →
   ``/resume``. Reported: seconds from pause to resumed.
5. ``check`` — a fresh batch under the new weights; the trainer's full forward (FP32 weights,
   float64 log-softmax) scores the same tokens: max |Δ log-prob| and the mismatch KL
   (k3 estimator ``E[exp(r) - 1 - r]``, ``r = log π_trainer - log π_engine``, over the
   engine's samples).

Prints one JSON object as the last stdout line (progress on stderr). Must finish in < 5 min on
one H200. On a machine without a package index, run it with the image's interpreter::

    PYTHONUNBUFFERED=1 PYTHONPATH=$(ls -d packages/*/src apps/arctic-swe/src | paste -sd:) \\
        python3 benchmarks/gpu_engine.py
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import copy
import json
import os
import pickle
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("PYTHONUNBUFFERED", "1")

import torch

#: Every stage's outcome: {"ok": bool, "seconds": float, "error": str | None}.
Stages = dict[str, dict[str, Any]]
SERVED_NAME = "arctic-swe"


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=64, help="N: concurrent rollouts")
    parser.add_argument("--prompt-len", type=int, default=64, help="P: prompt tokens each")
    parser.add_argument("--new-tokens", type=int, default=256, help="G: tokens per rollout")
    parser.add_argument("--vocab", type=int, default=2048, help="tokenizer vocabulary to train")
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.3, help="vLLM's share of the GPU"
    )
    parser.add_argument(
        "--startup-timeout", type=float, default=240.0, help="seconds for the server to answer"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="CPU: arctic-swe serve (torch backend) and the reload path (a published weights "
        "directory) instead of vLLM and IPC; tiny sizes, seconds",
    )
    args = parser.parse_args()
    if args.smoke:
        args.sequences, args.prompt_len, args.new_tokens, args.vocab = 4, 8, 8, 320
    return args


def _log(message: str) -> None:
    print(f"[gpu_engine {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _stage(stages: Stages, name: str, body: Callable[[], Any]) -> Any:
    """Run one stage; record ok/seconds/error; return its value (``None`` if it failed)."""
    _log(f"{name} ...")
    started = time.perf_counter()
    try:
        value = body()
    except Exception as exc:  # a stage's failure is data: the rest still runs
        stages[name] = {"ok": False, "seconds": round(time.perf_counter() - started, 3)}
        stages[name]["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        _log(f"{name} failed: {stages[name]['error']}")
        return None
    stages[name] = {"ok": True, "seconds": round(time.perf_counter() - started, 3), "error": None}
    _log(f"{name} ok in {stages[name]['seconds']} s")
    return value


# ------------------------------------------------------------------ 1. checkpoint
def _checkpoint(root: Path, vocab: int, device: str) -> tuple[Path, torch.nn.Module, int]:
    from arctic_swe.chat import SPECIAL_TOKENS, save_tokenizer, train_tokenizer
    from arctic_swe.model import build_policy, load_policy, policy_config, save_policy

    corpus = Path(__file__).read_text().splitlines() * 4
    tokenizer = train_tokenizer(corpus, vocab_size=vocab)
    size = len(tokenizer)
    config = policy_config(
        size, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    directory = save_policy(build_policy(config, 0, patch_numerics=False), root / "policy")
    save_tokenizer(tokenizer, directory)
    trainer = load_policy(directory, device=device)  # FP32 weights, hybrid-numerics kernels
    return directory, trainer, len(SPECIAL_TOKENS)


# ------------------------------------------------------------------ 2. server
class Server:
    """The engine process: its URL, its log, and a stop that always reaps it."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(args: argparse.Namespace, checkpoint: Path, root: Path) -> Server:
    log = root / "server.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if args.smoke:
        command = [sys.executable, "-m", "arctic_swe._cli", "serve", "--model", str(checkpoint)]
        command += ["--port", "0", "--capacity", str(args.sequences), "--threads", "1"]
        with log.open("wb") as err:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env)
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"arctic-swe serve exited: {log.read_text()[-1500:]}")
        url = json.loads(line)["url"]
    else:
        from arctic_swe.serve import VllmServeSpec, vllm_command, vllm_environment

        port = _free_port()
        spec = VllmServeSpec(
            model=str(checkpoint),
            port=port,
            max_num_seqs=args.sequences,
            max_model_len=args.prompt_len + args.new_tokens + 64,
            gpu_memory_utilization=args.gpu_memory_utilization,
            weight_transfer_backend="ipc",  # same GPU as the trainer
        )
        command = [*vllm_command(spec), "--enforce-eager"]
        executable = shutil.which("vllm")
        command = (
            [executable, *command[1:]]
            if executable
            else [sys.executable, "-m", "vllm.entrypoints.cli.main", *command[1:]]
        )
        # IPC handles travel pickled over HTTP: vLLM refuses them without this opt-in.
        env = vllm_environment(env) | {"VLLM_ALLOW_INSECURE_SERIALIZATION": "1"}
        with log.open("wb") as err:
            process = subprocess.Popen(command, stdout=err, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
    server = Server(process, url, log)
    try:
        _await_health(server, args.startup_timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _await_health(server: Server, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited ({server.process.returncode}): {server.tail()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(server.url + "/health", timeout=5).status_code == 200:
                return
        time.sleep(1.0)
    raise TimeoutError(f"server not healthy after {timeout:g} s: {server.tail()}")


# ------------------------------------------------------------------ 3./5. rollouts + check
def _prompts(n: int, length: int, low: int, vocab: int, seed: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(low, vocab, (n, length), generator=generator).tolist()


async def _complete(url: str, prompts: list[list[int]], new_tokens: int, seed: int) -> list[Any]:
    """One completion per prompt, all concurrent: (token ids, raw log-probs) each."""
    import httpx

    limits = httpx.Limits(max_connections=len(prompts) + 4)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def one(index: int, prompt: list[int]) -> tuple[list[int], list[float]]:
            body = {
                "model": SERVED_NAME,
                "prompt": prompt,
                "max_tokens": new_tokens,
                "temperature": 1.0,
                "top_p": 1.0,
                "seed": seed + index,
                "logprobs": 0,
                "ignore_eos": True,
                "return_token_ids": True,
            }
            reply = await client.post("/v1/completions", json=body)
            reply.raise_for_status()
            choice = reply.json()["choices"][0]
            return list(choice["token_ids"]), list(choice["logprobs"]["token_logprobs"])

        return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts))))


@torch.no_grad()
def _mismatch(model: torch.nn.Module, prompts: list[list[int]], turns: list[Any]) -> dict[str, Any]:
    """The trainer's full forward on every (prompt, turn): max |Δ log-prob| and mismatch KL."""
    device = next(model.parameters()).device
    deltas: list[torch.Tensor] = []
    for prompt, (ids, engine_logprobs) in zip(prompts, turns, strict=True):
        tokens = torch.tensor([prompt + ids], device=device)
        logits = model(tokens).logits[0].double()
        logprobs = torch.log_softmax(logits, dim=-1)
        targets = tokens[0, len(prompt) :]
        trainer = logprobs[len(prompt) - 1 : -1].gather(1, targets[:, None])[:, 0].cpu()
        deltas.append(trainer - torch.tensor(engine_logprobs, dtype=torch.float64))
    r = torch.cat(deltas)
    return {
        "tokens": int(r.numel()),
        "max_abs_dlogprob": float(r.abs().max()),
        "mean_abs_dlogprob": float(r.abs().mean()),
        "mismatch_kl": float((torch.exp(r) - 1 - r).mean()),  # k3, non-negative
    }


def _rollouts(args: argparse.Namespace, server: Server, trainer: Any, low: int) -> dict[str, Any]:
    vocab = trainer.config.vocab_size
    prompts = _prompts(args.sequences, args.prompt_len, low, vocab, seed=1)
    asyncio.run(_complete(server.url, prompts[:2], 4, seed=0))  # warm-up
    started = time.perf_counter()
    turns = asyncio.run(_complete(server.url, prompts, args.new_tokens, seed=100))
    elapsed = time.perf_counter() - started
    generated = sum(len(ids) for ids, _ in turns)
    return {
        "sequences": args.sequences,
        "generated_tokens": generated,
        "seconds": round(elapsed, 3),
        "tokens_per_s": round(generated / elapsed, 1),
        "before_refresh": _mismatch(trainer, prompts, turns),
    }


# ------------------------------------------------------------------ 4. refresh
def _new_weights(trainer: torch.nn.Module, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """An optimizer step's stand-in, applied to the trainer in place: seeded noise on every
    owned parameter. Returns the served names' tensors (tied aliases left out) in ``dtype``."""
    from arctic_swe.weights import weight_spec

    generator = torch.Generator().manual_seed(7)
    served = weight_spec(trainer)
    state = trainer.state_dict()
    with torch.no_grad():
        for name in served:
            tensor = state[name]
            if tensor.is_floating_point():
                noise = torch.randn(tensor.shape, generator=generator).to(tensor.device)
                tensor.add_(0.05 * tensor.abs().mean() * noise)
    return {name: state[name].detach().to(dtype).contiguous() for name in served}


def _post(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    import httpx

    reply = httpx.post(url + path, json=body, timeout=600)
    if reply.status_code >= 400:
        raise RuntimeError(f"POST {path} -> {reply.status_code}: {reply.text[:500]}")
    return reply.json()


def _reload_routes(weights: dict[str, torch.Tensor], root: Path) -> list[tuple[str, Any]]:
    """vLLM's reload path (``--smoke``): version 1 published as a directory, loaded in place by
    ``reload_weights`` and labelled by ``/update_weight_version``, inside a keep-mode pause."""
    from arctic_swe.weights import publish

    directory = publish(weights, root / "weights", 1)
    rpc = {
        "method": "reload_weights",
        "kwargs": {"weights_path": str(directory), "is_checkpoint_format": True},
    }
    return [
        ("/pause?mode=keep&clear_cache=true", None),
        ("/collective_rpc", rpc),
        ("/update_weight_version", {"new_version": "1"}),
        ("/resume", None),
    ]


def _ipc_routes(weights: dict[str, torch.Tensor]) -> list[tuple[str, Any]]:
    """vLLM's keep-mode weight-transfer flow with IPC handles of the trainer's CUDA tensors."""
    from torch.multiprocessing.reductions import reduce_tensor

    uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
    handles = [{uuid: reduce_tensor(tensor)} for tensor in weights.values()]
    info = {
        "names": list(weights),
        "dtype_names": [str(t.dtype).removeprefix("torch.") for t in weights.values()],
        "shapes": [list(t.shape) for t in weights.values()],
        "ipc_handles_pickled": base64.b64encode(pickle.dumps(handles)).decode(),
    }
    return [
        ("/pause?mode=keep&clear_cache=true", None),
        ("/start_weight_update", {"is_checkpoint_format": True}),
        ("/update_weights", {"update_info": info}),
        ("/finish_weight_update", {"weight_version": "1"}),
        ("/resume", None),
    ]


def _refresh(
    args: argparse.Namespace, server: Server, trainer: Any, root: Path, low: int, batch_s: float
) -> Any:
    """Weights updated while a batch is in flight (about a third of the way in, from the
    rollouts stage's ``batch_s``); returns the timing (the batch finishes under the new
    weights; ``mid_batch`` says whether it was still running when the update began)."""
    vocab = trainer.config.vocab_size
    dtype = torch.float32 if args.smoke else torch.bfloat16  # the served model's dtype
    weights = _new_weights(trainer, dtype)
    if not args.smoke:
        _post(server.url, "/init_weight_transfer_engine", {"init_info": {}})
    prompts = _prompts(args.sequences, args.prompt_len, low, vocab, seed=2)

    async def in_flight() -> dict[str, Any]:
        batch = asyncio.ensure_future(_complete(server.url, prompts, args.new_tokens, seed=200))
        await asyncio.sleep(min(0.3 * batch_s, 5.0))
        mid_batch = not batch.done()
        if args.smoke:
            routes = await asyncio.to_thread(_reload_routes, weights, root)
        else:
            routes = await asyncio.to_thread(_ipc_routes, weights)
        started = time.perf_counter()
        try:
            for path, body in routes[:-1]:
                await asyncio.to_thread(_post, server.url, path, body)
        finally:  # a refused update must not leave the engine paused
            await asyncio.to_thread(_post, server.url, *routes[-1])
        seconds = time.perf_counter() - started
        turns = await batch
        return {
            "refresh_seconds": round(seconds, 4),
            "mid_batch": mid_batch,
            "in_flight_tokens": sum(len(ids) for ids, _ in turns),
            "parameters": len(weights),
            "bytes": sum(t.numel() * t.element_size() for t in weights.values()),
        }

    return asyncio.run(in_flight())


def _check(
    args: argparse.Namespace, server: Server, trainer: Any, old: Any, low: int
) -> dict[str, Any]:
    """The refreshed engine against the trainer's new weights, and (the control) against the
    weights before the update: a refresh that did not land shows as a small stale figure."""
    prompts = _prompts(args.sequences, args.prompt_len, low, trainer.config.vocab_size, seed=3)
    turns = asyncio.run(_complete(server.url, prompts, args.new_tokens, seed=300))
    stale = _mismatch(old, prompts, turns) if old is not None else None
    return {**_mismatch(trainer, prompts, turns), "against_old_weights": stale}


# ------------------------------------------------------------------ main
def _figures(values: dict[str, Any]) -> dict[str, Any]:
    rollouts, refresh, check = values.get("rollouts"), values.get("refresh"), values.get("check")
    return {
        "tokens_per_s": rollouts["tokens_per_s"] if rollouts else None,
        "refresh_seconds": refresh["refresh_seconds"] if refresh else None,
        "max_abs_dlogprob": check["max_abs_dlogprob"] if check else None,
        "mismatch_kl": check["mismatch_kl"] if check else None,
    }


def main() -> None:
    args = _parse()
    started = time.perf_counter()
    stages: Stages = {}
    values: dict[str, Any] = {}
    device = "cpu" if args.smoke else "cuda"
    if not args.smoke and not torch.cuda.is_available():
        stages["gpu"] = {"ok": False, "seconds": 0.0, "error": "no CUDA device"}
    with tempfile.TemporaryDirectory(prefix="gpu-engine-") as tmp:
        root = Path(tmp)
        made = _stage(stages, "checkpoint", lambda: _checkpoint(root, args.vocab, device))
        server = None
        if made is not None:
            checkpoint, trainer, low = made
            server = _stage(stages, "server", lambda: _start_server(args, checkpoint, root))
        if server is not None:
            try:
                old = copy.deepcopy(trainer)  # the control of the check

                def _batch_s() -> float:
                    rollouts = values.get("rollouts")
                    return float(rollouts["seconds"]) if rollouts else 1.0

                for name, body in [
                    ("rollouts", lambda: _rollouts(args, server, trainer, low)),
                    ("refresh", lambda: _refresh(args, server, trainer, root, low, _batch_s())),
                    ("check", lambda: _check(args, server, trainer, old, low)),
                ]:
                    values[name] = _stage(stages, name, body)
            finally:
                if not all(stage["ok"] for stage in stages.values()):
                    values["server_log_tail"] = server.tail()
                server.stop()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    summary = {
        "benchmark": "gpu_engine",
        "engine": "arctic-swe serve (torch, CPU)" if args.smoke else "vllm serve (GPU)",
        "transfer": "reload (published directory)" if args.smoke else "ipc",
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, gpu {gpu}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "sequences": args.sequences,
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        **_figures(values),
        "details": values,
        "stages": stages,
        "all_ok": all(stage["ok"] for stage in stages.values()),
        "seconds": round(time.perf_counter() - started, 1),
        "smoke": args.smoke,
    }
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
