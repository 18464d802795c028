"""``arctic-swe serve``: one inference engine as an HTTP service (vLLM 0.33's protocol).

``--backend torch`` serves the app's torch engine in this process (uvicorn + FastAPI);
``--backend vllm`` execs the recipe's ``vllm serve`` command line (``--dry-run`` prints it).
Only the standard library is imported at module level: the parser must stay instant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

from arctic_swe._argtypes import Subparsers, non_negative_int, positive_int
from arctic_swe._execute import CommandError, user_errors


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    serve = subparsers.add_parser(
        "serve",
        help="serve one inference engine over HTTP (vLLM's completion and RL routes)",
        description="Serve a policy checkpoint as an engine service speaking vLLM 0.33's "
        "protocol: /v1/completions with token ids in and raw log-probs plus weight-version "
        "spans out, /pause?mode=keep&clear_cache=true, /resume, the weight-transfer routes "
        "(a safetensors file on CPU), /health and /metrics. When ready it prints one JSON "
        'line on stdout: {"event": "ready", "url": ...}.',
    )
    serve.add_argument(
        "--model",
        required=True,
        metavar="PATH",
        help="local Hugging Face checkpoint directory (config.json + *.safetensors), or a "
        "run checkpoint directory holding one in model/",
    )
    serve.add_argument(
        "--backend",
        choices=("torch", "vllm"),
        default="torch",
        help="torch: the app's engine in this process; vllm: exec `vllm serve` with the "
        "recipe's flags (needs a GPU and arctic-swe[vllm]) (default: %(default)s)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: %(default)s)")
    serve.add_argument(
        "--port",
        type=non_negative_int,
        default=8000,
        help="TCP port; 0 picks a free one, printed in the ready line (default: %(default)s)",
    )
    serve.add_argument(
        "--capacity",
        type=positive_int,
        default=64,
        help="cache slots: the most sequences resident at once (vllm: --max-num-seqs) "
        "(default: %(default)s)",
    )
    serve.add_argument(
        "--threads", type=positive_int, default=2, help="torch CPU threads (default: %(default)s)"
    )
    serve.add_argument(
        "--engine-id", default="engine-0", help="identity in /metrics (default: %(default)s)"
    )
    serve.add_argument(
        "--served-model-name",
        default="arctic-swe",
        help="the model name of /v1/models and completions (default: %(default)s)",
    )
    serve.add_argument(
        "--max-model-len",
        type=positive_int,
        default=None,
        help="context limit, prompt + generated (default: the checkpoint's "
        "max_position_embeddings)",
    )
    serve.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="base sampling seed for requests without their own (default: %(default)s)",
    )
    serve.add_argument(
        "--weight-version",
        type=non_negative_int,
        default=0,
        help="policy version of the checkpoint's weights (default: %(default)s)",
    )
    serve.add_argument(
        "--mamba-ssm-cache-dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="storage dtype of the Gated DeltaNet recurrent state between steps (vLLM's flag "
        "of the same name): float32 is the recipe's FP32 state, bfloat16 the 'FP32 numerics "
        "off' ablation (trainer.fp32_numerics = false) (default: %(default)s)",
    )
    serve.add_argument(
        "--admission-window-ms",
        type=_window_ms,
        default=2.0,
        help="torch backend: an idle engine waits this long after each new request for more "
        "before its first step (at most 10 windows), so a burst of concurrent requests shares "
        "one prefill; 0 steps at once (default: %(default)s)",
    )
    serve.add_argument(
        "--dry-run",
        action="store_true",
        help="vllm backend: print the `vllm serve` command line and exit",
    )
    return serve


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT / SIGTERM; exit 0 after a clean shutdown."""
    model_dir = _model_dir(Path(args.model))
    if args.backend == "vllm":
        return _run_vllm(args, model_dir)
    if args.dry_run:
        raise CommandError("--dry-run applies to --backend vllm only")
    import asyncio

    import torch

    from arctic_swe.engine import EngineConfig, EngineError, TorchEngine
    from arctic_swe.model import PolicyError, load_policy
    from arctic_swe.serve._app import create_app
    from arctic_swe.serve._state import EngineServer

    torch.set_num_threads(args.threads)
    with user_errors(PolicyError, EngineError):
        model = load_policy(model_dir)
        eos = model.config.eos_token_id
        stops = tuple(eos) if isinstance(eos, list) else () if eos is None else (int(eos),)
        config = EngineConfig(
            engine_id=args.engine_id,
            capacity=args.capacity,
            seed=args.seed,
            stop_token_ids=stops,
            max_seq_len=args.max_model_len,
            state_dtype=getattr(torch, args.mamba_ssm_cache_dtype),
            admission_window_s=args.admission_window_ms / 1000.0,
        )
        engine = TorchEngine(model, config, version=args.weight_version)
    server = EngineServer(engine, model, model_name=args.served_model_name)
    app = create_app(server, decode=_decoder(model_dir))
    ready = {"event": "ready", "backend": "torch", "engine_id": args.engine_id, "pid": os.getpid()}
    asyncio.run(_serve(app, engine, args.host, args.port, ready))
    return 0


async def _serve(app: Any, engine: Any, host: str, port: int, ready: dict[str, Any]) -> None:
    """Run uvicorn on a socket bound here (so port 0 works and the real port is known), print
    the ready line once it accepts connections, and close the engine on the way out."""
    import asyncio
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = _listen_socket(host, port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        http="httptools",  # C parser (a dependency); h11's pure-Python parsing costs ~1 ms a request
        timeout_keep_alive=30,
        timeout_graceful_shutdown=2,  # SIGTERM: in-flight completions get 2 s, then exit
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            line = {**ready, "url": f"http://{shown}:{bound}", "port": bound}
            print(json.dumps(line), flush=True)
        await task
    finally:
        await engine.close()
        sock.close()


def _listen_socket(host: str, port: int) -> Any:
    """A bound TCP socket for uvicorn (``CommandError`` if the address is taken)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets whose proto says TCP
    # (an accepted socket inherits the listener's proto 0 otherwise), and without it Nagle's
    # algorithm holds each response's body behind its headers until the client's delayed ACK
    # — 40 ms on every kept-alive request on Linux.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CommandError(f"cannot bind {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def _run_vllm(args: argparse.Namespace, model_dir: Path) -> int:  # noqa: RET503 (exec)
    from arctic_swe.serve._vllm import VllmServeSpec, shell_line, vllm_command, vllm_environment

    spec = VllmServeSpec(
        model=str(model_dir),
        host=args.host,
        port=args.port,
        served_model_name=args.served_model_name,
        max_num_seqs=args.capacity,
        max_model_len=args.max_model_len,
        seed=args.seed,
        mamba_ssm_cache_dtype=args.mamba_ssm_cache_dtype,
    )
    command = vllm_command(spec)
    if args.dry_run:
        print(shell_line(command), flush=True)
        return 0
    if args.port == 0:
        raise CommandError("--backend vllm needs an explicit --port (vllm serve cannot pick one)")
    executable = shutil.which("vllm")
    if executable is None:
        raise CommandError("vllm is not installed: install the extra, arctic-swe[vllm]")
    _exec(executable, command, vllm_environment(os.environ))


def _exec(executable: str, command: list[str], env: dict[str, str]) -> NoReturn:
    sys.stdout.flush()
    os.execve(executable, command, env)


def _window_ms(text: str) -> float:
    """``--admission-window-ms``: a finite number of milliseconds in [0, 1000]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1000.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be in [0, 1000] ms, got {text}")
    return value


def _model_dir(path: Path) -> Path:
    if (path / "config.json").is_file():
        return path
    if (path / "model" / "config.json").is_file():
        return path / "model"
    raise CommandError(f"{path} is not a checkpoint directory (no config.json in it or in model/)")


def _decoder(model_dir: Path) -> Any:
    """The checkpoint's ``tokenizer.json`` decoder for the ``text`` field, if it has one."""
    file = model_dir / "tokenizer.json"
    if not file.is_file():
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(file))
    return lambda ids: tokenizer.decode(list(ids), skip_special_tokens=False)
