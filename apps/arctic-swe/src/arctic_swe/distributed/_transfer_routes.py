"""Rank 0's end of the NCCL weight-transfer path (vLLM 0.33's protocol; Arctic-SWE §3.3).

With ``engine.weight_transfer = "nccl"`` the orchestrator refreshes an engine by driving two
sides of one collective at once: the engine's vLLM routes and these trainer routes, which a
:class:`~arctic_swe.distributed.RemoteWeightSender` calls:

* ``POST /weight_transfer/init_info {"engine_id"}`` -> the engine's ``init_info`` (rank 0
  hosts that engine's rendezvous store on the trainer's address);
* ``POST /weight_transfer/connect {"engine_id"}`` -> joins the engine's group as rank 0
  (answers once the engine has joined through ``/init_weight_transfer_engine``);
* ``POST /weight_transfer/update_info {"version"}`` -> ``{"names", "dtype_names", "shapes"}``;
* ``POST /weight_transfer/send {"engine_id", "version"}`` -> broadcasts (answers once the
  engine's ``/update_weights`` has received everything).

The weights sent are the full tensors rank 0 gathered for the version's step (kept in memory
for the newest version), or, for an older one (a resumed run catching engines up), the
version's published directory. Nothing here runs on the other ranks: the gather already
happened in the step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from arctic_swe.distributed._service import error
from arctic_swe.distributed._worker import Worker
from arctic_swe.transfer import (
    LocalWeightSender,
    TransferConnectionError,
    TransferProtocolError,
    TransferTimeoutError,
    VllmNcclSender,
    VllmUnavailableError,
)
from arctic_swe.weights import WeightsError, published_dir, read_weights, run_weights, weights_file


def weights_of(worker: Worker, version: int) -> Sequence[tuple[str, torch.Tensor]]:
    """``version``'s full weights in a fixed order: the newest from rank 0's memory, older
    ones from their published directory. TransferProtocolError when neither exists."""
    latest = worker.latest_weights
    if latest is not None and latest[0] == version:
        return list(latest[1].items())
    directory = published_dir(run_weights(worker.options.run_dir), version)
    if not weights_file(directory).is_file():
        raise TransferProtocolError(f"the trainer holds no weights for version {version}")
    try:
        return list(read_weights(directory, version=version).items())
    except WeightsError as exc:
        raise TransferProtocolError(f"the weights of version {version}: {exc}") from exc


def add_transfer_routes(app: FastAPI, worker: Worker, *, host: str) -> Any:
    """Mount the routes above on ``app``; returns the sender (close it at exit).

    CPU ranks speak the protocol over gloo (:class:`LocalWeightSender`, the CPU engines'
    receiver); CUDA ranks over NCCL with vLLM's own trainer-side code
    (:class:`VllmNcclSender`), which needs vLLM in the trainer's environment — without it the
    first ``init_info`` answers 409 with :class:`VllmUnavailableError`'s message."""
    sender = _sender_for(worker, host)

    async def answer(raw: Request, *fields: str) -> tuple[Any, ...] | JSONResponse:
        try:
            body = json.loads(await raw.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error(400, f"the body is not JSON: {exc}", "BadRequestError")
        kinds = {"engine_id": str, "version": int}
        if not isinstance(body, dict) or not all(
            isinstance(body.get(f), kinds[f]) and not isinstance(body.get(f), bool) for f in fields
        ):
            wanted = ", ".join(f"{f} ({kinds[f].__name__})" for f in fields)
            return error(400, f"the body must be an object with {wanted}", "BadRequestError")
        return tuple(body[f] for f in fields)

    async def send(engine_id: str, version: int) -> dict[str, str]:
        began = time.perf_counter()
        await sender.send(engine_id, version)
        seconds = round(time.perf_counter() - began, 3)
        note = {"event": "weights_sent", "engine_id": engine_id, "version": version}
        print(json.dumps({**note, "seconds": seconds}), flush=True)  # one line per broadcast
        return {"status": "ok"}

    async def connect(engine_id: str) -> dict[str, str]:
        await sender.connect(engine_id)
        return {"status": "ok"}

    # route -> (the body's fields, in call order; the call)
    routes: dict[str, tuple[tuple[str, ...], Callable[..., Awaitable[Any]]]] = {
        "init_info": (("engine_id",), sender.init_info),
        "connect": (("engine_id",), connect),
        "update_info": (("version",), sender.update_info),
        "send": (("engine_id", "version"), send),
    }
    for name, (fields, call) in routes.items():
        app.post(f"/weight_transfer/{name}")(_route(answer, fields, call))

    return sender


def _sender_for(worker: Worker, host: str) -> Any:
    def weights(version: int) -> Sequence[tuple[str, torch.Tensor]]:
        return weights_of(worker, version)

    if not torch.cuda.is_available():
        return LocalWeightSender(weights, host=host)
    try:
        device = torch.cuda.current_device()
        return VllmNcclSender(lambda v: [(n, t.to(device)) for n, t in weights(v)], host=host)
    except VllmUnavailableError as exc:
        return _Refusing(str(exc))


class _Refusing:
    """The sender of a CUDA trainer whose environment lacks vLLM: every call says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def init_info(self, *_args: object) -> dict[str, Any]:
        raise TransferProtocolError(self.reason)

    async def connect(self, *_args: object) -> None:
        raise TransferProtocolError(self.reason)

    async def update_info(self, *_args: object) -> dict[str, Any]:
        raise TransferProtocolError(self.reason)

    async def send(self, *_args: object) -> None:
        raise TransferProtocolError(self.reason)

    def close(self) -> None:
        return None


def _route(
    answer: Callable[..., Awaitable[Any]],
    fields: tuple[str, ...],
    call: Callable[..., Awaitable[Any]],
) -> Callable[[Request], Awaitable[JSONResponse]]:
    """One transfer route: the body checked for ``fields``, ``call`` run on them, transfer
    errors mapped (a protocol refusal 409, a rendezvous or broadcast that failed 504)."""

    async def handler(raw: Request) -> JSONResponse:
        args = await answer(raw, *fields)
        if isinstance(args, JSONResponse):
            return args
        try:
            return JSONResponse(await call(*args))
        except TransferProtocolError as exc:
            return error(409, str(exc), "ConflictError")
        except (TransferTimeoutError, TransferConnectionError) as exc:
            return error(504, f"weight transfer: {exc}", "GatewayTimeoutError")

    return handler
