"""Rank 0's HTTP service: the orchestrator's only door into the trainer process.

Routes (JSON in and out; errors are ``{"error": {"message", "type", "code"}}``):

* ``GET /health`` -> ``{"status", "world_size", "steps", "version"}``
* ``POST /step`` (the batch of :mod:`._wire`) -> ``{"step", "version", "weights_path",
  "stats": {...}}``: one optimizer step over all ranks, then the consolidated weights written
  once as ``RUN_DIR/weights/policy-vN/model.safetensors`` for the engines' refresh.
* ``POST /checkpoint`` -> ``{"path", "step", "version"}`` (sharded DCP + HF export)
* ``POST /shutdown`` -> ``{"status": "stopping"}``; the ranks leave and the process exits 0.
* ``POST /weight_transfer/...`` -> rank 0's side of the NCCL refresh path
  (:mod:`._transfer_routes`).

A bad body is a 400 (and a ``version`` that is not the next one a 409) and the service keeps
serving: it is refused on rank 0 before any rank is involved. Requests run one at a time on a
single worker thread (the ranks execute one command at a time). If a collective fails — a rank
died — the request answers 500 and the process exits non-zero, so torchrun and the launcher see
the failure instead of a hang.
"""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from arctic_swe.distributed._wire import batch_digest, decode_batch
from arctic_swe.distributed._worker import Worker
from arctic_swe.trainer import BatchError, VersionConflictError, check_versions

#: How long rank 0 waits for the other ranks to take the final ``exit`` command.
_RELEASE_TIMEOUT_S = 10.0


class _RanksFailedError(Exception):
    """A collective failed; the process is going down."""


class _State:
    """The service's mutable state: the one-thread executor and the failure, if any."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainer-ranks")
        self.failure: str | None = None
        self.stopping = asyncio.Event()
        self.sender: Any = None  # the weight-transfer sender (closed at exit)


def error(status: int, message: str, kind: str) -> JSONResponse:
    """An error response in the OpenAI-style shape the client reads (``error.type`` names
    the failure, ``error.code`` repeats the status)."""
    body = {"error": {"message": message, "type": kind, "code": status}}
    return JSONResponse(body, status_code=status)


def create_app(worker: Worker, *, host: str = "127.0.0.1") -> tuple[FastAPI, _State]:
    """The ASGI app over ``worker`` (rank 0) and the state the server loop watches; ``host``
    is the address engines reach rank 0's weight-transfer stores on."""
    from arctic_swe.distributed._transfer_routes import add_transfer_routes

    app = FastAPI(title="arctic-swe trainer", docs_url=None, redoc_url=None)
    state = _State(worker)
    state.sender = add_transfer_routes(app, worker, host=host)

    async def on_ranks(function: Any, *args: Any) -> Any:
        """Run a collective on the ranks' thread; a failure there is fatal for the process."""
        if state.failure is not None:
            raise _RanksFailedError(state.failure)
        try:
            return await asyncio.get_running_loop().run_in_executor(state.executor, function, *args)
        except Exception as exc:  # any failure here means the other ranks are gone
            state.failure = f"{type(exc).__name__}: {exc}"
            state.stopping.set()
            raise _RanksFailedError(state.failure) from exc

    @app.exception_handler(_RanksFailedError)
    async def failed(_request: Request, exc: Exception) -> JSONResponse:
        return error(500, f"the trainer failed and is exiting: {exc}", "InternalServerError")

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse(
            {
                "status": "failed" if state.failure else "ok",
                "world_size": worker.trainer.world_size,
                "steps": worker.trainer.steps,
                "version": worker.version,
                "pids": list(worker.pids),
            },
            status_code=500 if state.failure else 200,
        )

    @app.post("/step")
    async def step(raw: Request) -> JSONResponse:
        try:
            body = json.loads(await raw.body())
            batch = decode_batch(body, worker.trainer.vocab_size)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error(400, f"the body is not JSON: {exc}", "BadRequestError")
        except BatchError as exc:
            return error(400, str(exc), "BadRequestError")
        try:
            check_versions(batch.samples, batch.versions, batch.version, worker.version)
        except VersionConflictError as exc:
            return error(409, str(exc), "ConflictError")
        except BatchError as exc:
            return error(400, str(exc), "BadRequestError")
        result = await on_ranks(worker.run_step, batch.samples)
        stats = asdict(result.stats)
        stats["shard_tokens"] = list(result.stats.shard_tokens)
        stats["oldest_version"] = batch.oldest_version
        return JSONResponse(
            {
                "step": result.stats.step,
                "version": result.version,
                "weights_path": str(result.weights_path),
                "stats": stats,
                "batch_digest": batch_digest(batch.samples, batch.versions),
            }
        )

    @app.post("/checkpoint")
    async def checkpoint() -> JSONResponse:
        path = await on_ranks(worker.run_checkpoint)
        return JSONResponse(
            {"path": str(path), "step": worker.trainer.steps, "version": worker.version}
        )

    @app.post("/shutdown")
    async def shutdown() -> JSONResponse:
        state.stopping.set()
        return JSONResponse({"status": "stopping"})

    return app, state


async def serve(worker: Worker, host: str, port: int) -> int:
    """Serve until ``/shutdown``, a signal, or a failed collective; returns the exit code.

    Prints the ready line (the shape ``arctic-swe serve`` prints, plus ``role`` and
    ``world_size``) once the socket accepts connections."""
    import socket

    import uvicorn

    app, state = create_app(worker, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=30)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    watcher = asyncio.create_task(_stop_when(state, server))
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            ready = {
                "event": "ready",
                "role": "trainer",
                "url": f"http://{shown}:{bound}",
                "port": bound,
                "world_size": worker.trainer.world_size,
                "pid": os.getpid(),
            }
            print(json.dumps(ready), flush=True)
        await task
    finally:
        watcher.cancel()
        sock.close()
        if state.sender is not None:
            state.sender.close()
    if state.failure is not None:
        print(
            json.dumps({"event": "failed", "role": "trainer", "error": state.failure}), flush=True
        )
        state.executor.shutdown(wait=False, cancel_futures=True)
        return 1
    # The server takes no more requests: release the other ranks. After a signal they may be
    # gone already (torchrun signals every rank), so the broadcast gets a bounded wait.
    release = asyncio.get_running_loop().run_in_executor(state.executor, worker.run_exit)
    try:
        await asyncio.wait_for(release, timeout=_RELEASE_TIMEOUT_S)
    except Exception as exc:  # any failure here means the other ranks are gone
        note = {"event": "failed", "role": "trainer", "error": f"releasing the ranks: {exc!r}"}
        print(json.dumps(note), flush=True)
        state.executor.shutdown(wait=False, cancel_futures=True)
        return 1
    state.executor.shutdown(wait=True)
    return 0


async def _stop_when(state: _State, server: Any) -> None:
    await state.stopping.wait()
    await asyncio.sleep(0.05)  # let the reply that asked for it go out
    server.should_exit = True
