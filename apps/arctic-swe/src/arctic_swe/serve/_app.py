"""The FastAPI application: vLLM 0.33's completion, pause and weight-transfer routes over an
:class:`EngineServer` (Arctic-SWE §3.3).

Every error is an OpenAI-style JSON body: 400 for bad input or a call out of order (the
engine keeps serving, with its old weights where a weight update was refused), 503 while paused
in ``abort``/``wait`` mode (retryable), 500 if the engine failed. A request ended by an
abort-mode pause is a 200 with its partial output and ``finish_reason: "abort"``, as in vLLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import ValidationError

from arctic_swe.engine import EngineClosedError, EngineStepFailedError, Generation, RequestError
from arctic_swe.serve._protocol import (
    CompletionChoice,
    CompletionLogProbs,
    CompletionRequest,
    CompletionResponse,
    FinishReasonName,
    UsageInfo,
    error_body,
    spans_from_versions,
)
from arctic_swe.serve._state import EngineServer, PausedError
from arctic_swe.serve._transfer import ProtocolError, TransferFailedError

Decoder = Callable[[Sequence[int]], str]
_M = TypeVar("_M", bound=CompletionRequest)

_FINISH: dict[str, FinishReasonName] = {
    "stop": "stop",
    "max_tokens": "length",
    "context": "length",
    "cancelled": "abort",
}


def create_app(server: EngineServer, *, decode: Decoder | None = None) -> FastAPI:
    """The ASGI app serving ``server``; ``decode`` turns token ids into the ``text`` field
    (empty text without one: RL clients read ``token_ids``)."""
    app = FastAPI(title="arctic-swe engine", docs_url=None, redoc_url=None)
    _install_error_handlers(app, server)

    @app.post("/v1/completions")
    async def completions(raw: Request) -> JSONResponse:
        server.counters.requests += 1
        request = _parse(CompletionRequest, await _json_object(raw))
        reason = request.unsupported()
        if reason is not None:
            raise ProtocolError(reason)
        prompt = request.prompt_ids()
        server.check_prompt(prompt)
        stops = () if request.ignore_eos else server.engine.config.stop_token_ids
        stops = (*stops, *(request.stop_token_ids or ()))
        turn = await server.generate(
            prompt, request.max_tokens, seed=request.seed, stop_token_ids=stops
        )
        return JSONResponse(_completion(server, request, turn, decode).model_dump())

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {
            "id": server.model_name,
            "object": "model",
            "owned_by": "arctic-swe",
            "max_model_len": server.max_model_len,
        }
        return {"object": "list", "data": [card]}

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse({})

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(server.metrics_text(), media_type="text/plain; version=0.0.4")

    @app.post("/pause")
    async def pause(mode: str = "abort", clear_cache: bool = True) -> dict[str, str]:
        await server.pause(mode, clear_cache)
        return {"status": "paused"}

    @app.post("/resume")
    async def resume() -> dict[str, str]:
        server.resume()
        return {"status": "resumed"}

    @app.get("/is_paused")
    async def is_paused() -> dict[str, bool]:
        return {"is_paused": server.paused}

    @app.post("/init_weight_transfer_engine")
    async def init_weight_transfer_engine(raw: Request) -> dict[str, str]:
        await server.weights.init_transfer((await _json_object(raw)).get("init_info"))
        return {"message": "Weight transfer initialized"}

    @app.post("/shutdown_weight_transfer_engine")
    async def shutdown_weight_transfer_engine() -> dict[str, str]:
        await server.weights.shutdown_transfer()
        return {"message": "Weight transfer shut down"}

    @app.post("/start_weight_update")
    async def start_weight_update() -> dict[str, str]:
        server.weights.start_update()
        return {"message": "Weight update started"}

    @app.post("/update_weights")
    async def update_weights(raw: Request) -> dict[str, str]:
        await server.weights.receive((await _json_object(raw)).get("update_info"))
        return {"message": "Weights updated"}

    @app.post("/finish_weight_update")
    async def finish_weight_update(raw: Request) -> dict[str, str]:
        label = (await _json_object(raw, allow_empty=True)).get("weight_version")
        await server.weights.finish_update(label, invalidate=server.invalidate_on_update)
        return {"message": "Weight update finished"}

    @app.post("/update_weight_version")
    async def update_weight_version(raw: Request) -> dict[str, Any]:
        label = (await _json_object(raw)).get("new_version")
        await server.weights.set_label(label)
        return {"success": True, "new_version": server.weights.label}

    @app.get("/weight_info")
    async def weight_info() -> dict[str, str]:
        return {"weight_version": server.weights.label}

    @app.post("/collective_rpc")
    async def collective_rpc(raw: Request) -> dict[str, Any]:
        body = await _json_object(raw)
        method, kwargs = body.get("method"), body.get("kwargs", {})
        if method != "reload_weights":
            raise ProtocolError(
                f"collective_rpc method {method!r} is not served here (only reload_weights)"
            )
        if body.get("args") or not isinstance(kwargs, dict):
            raise ProtocolError("reload_weights takes keyword arguments only (kwargs object)")
        await server.weights.reload(kwargs, invalidate=server.invalidate_on_update)
        return {"results": [None]}

    return app


def _install_error_handlers(app: FastAPI, server: EngineServer) -> None:
    def reply(status: int, kind: str) -> Callable[[Request, Exception], Any]:
        async def handler(_request: Request, exc: Exception) -> JSONResponse:
            if status < 500:
                server.counters.request_errors += 1
            return JSONResponse(error_body(str(exc), status, kind), status_code=status)

        return handler

    app.add_exception_handler(ProtocolError, reply(400, "BadRequestError"))
    app.add_exception_handler(RequestError, reply(400, "BadRequestError"))
    app.add_exception_handler(RequestValidationError, reply(400, "BadRequestError"))
    app.add_exception_handler(PausedError, reply(503, "ServiceUnavailableError"))
    app.add_exception_handler(EngineStepFailedError, reply(500, "InternalServerError"))
    app.add_exception_handler(EngineClosedError, reply(500, "InternalServerError"))
    app.add_exception_handler(TransferFailedError, reply(500, "InternalServerError"))


async def _json_object(raw: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    data = await raw.body()
    if allow_empty and not data.strip():
        return {}
    try:
        body = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ProtocolError("request body must be a JSON object")
    return body


def _parse(model: type[_M], data: object) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()[:3]
        )
        raise ProtocolError(f"invalid {model.__name__}: {problems}") from exc


def _completion(
    server: EngineServer, request: CompletionRequest, turn: Generation, decode: Decoder | None
) -> CompletionResponse:
    ids = list(turn.token_ids)
    logprobs = None
    if request.logprobs is not None:
        logprobs = CompletionLogProbs(
            text_offset=list(range(len(ids))),
            token_logprobs=list(turn.logprobs),
            tokens=[f"token_id:{t}" for t in ids],
            top_logprobs=[None] * len(ids),
        )
    choice = CompletionChoice(
        text=decode(ids) if decode is not None else "",
        logprobs=logprobs,
        finish_reason=_FINISH[turn.finish_reason],
        stop_reason=ids[-1] if turn.finish_reason == "stop" else None,
        token_ids=ids if request.return_token_ids else None,
        weight_versions=spans_from_versions(server.weights.labels_of(turn.versions))
        if request.return_weight_versions
        else None,
    )
    usage = UsageInfo(
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=len(ids),
        total_tokens=turn.prompt_tokens + len(ids),
    )
    return CompletionResponse(
        model=request.model or server.model_name, choices=[choice], usage=usage
    )
