"""A CPU stand-in for vLLM 0.33's ``AsyncLLM`` behind vLLM's own HTTP routers (Arctic-SWE §3.3).

What is vLLM's code, what is the stand-in's:

* **vLLM's, unchanged**: the RL router (``/pause``, ``/resume``, ``/is_paused``, the weight
  transfer routes, ``/update_weight_version``, ``/weight_info``), the dev RPC router
  (``/collective_rpc``), the dev cache router (``/reset_prefix_cache`` …), the ``/health``
  router, and the four layers of exception handlers (``init_exception_handler``), all mounted
  as ``vllm serve`` mounts them, reading ``app.state.engine_client``. The completion request is
  parsed by vLLM's ``CompletionRequest`` (FastAPI body validation, so bad bodies meet vLLM's
  validation handler) and turned into vLLM's ``SamplingParams`` by its ``to_sampling_params``
  with the empty server defaults of ``--generation-config vllm``; the answer is built from
  vLLM's ``CompletionResponse`` / ``CompletionResponseChoice`` / ``CompletionLogProbs`` /
  ``UsageInfo`` models and ``vllm.outputs.WeightVersionSpan``. Weight-transfer payloads go
  through ``NCCLWeightTransferEngine.parse_init_info`` / ``parse_update_info`` (vLLM's
  dataclasses), ``collective_rpc("reload_weights")`` kwargs are bound to
  ``GPUModelRunner.reload_weights``'s signature, and pause-time rejections are vLLM's
  ``RetryableRequestError``.
* **The stand-in's**: the engine client below (subclass of vLLM's ``EngineClient``) keeps the
  state ``AsyncLLM`` + ``EngineCore`` + the GPU worker keep — the weight-version label
  (``"default"`` until set), the pause state, the worker's weight-update session flag — and
  raises where they raise. A worker error crosses the engine-core process boundary as a plain
  ``Exception("Call to <utility> method failed: …")``, as ``EngineCore``'s utility dispatch
  wraps it (hence HTTP 500 from vLLM's handlers). Tokens are sampled by the project's own CPU
  ``TorchEngine`` (a tiny random Qwen3.5 policy); the completion route itself is ours (vLLM's
  ``OpenAIServingCompletion`` needs a renderer and tokenizer the stand-in has no use for).
  There is no NCCL on CPU: a ``transport`` (the project's gloo ``EngineReceiver``, which
  joins the trainer's group and receives vLLM's wire format) carries the broadcast instead,
  called where vLLM's worker joins and receives; a ``receiver`` hook may instead hand over
  the weights a round would carry.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, Protocol

import torch
import uvicorn
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferEngine
from vllm.engine.protocol import EngineClient
from vllm.entrypoints.openai.completion.protocol import (
    CompletionLogProbs,
    CompletionRequest,
    CompletionResponse,
    CompletionResponseChoice,
)
from vllm.entrypoints.rl.online.api_router import router as rl_router
from vllm.entrypoints.serve.dev.cache.api_router import router as cache_router
from vllm.entrypoints.serve.dev.rpc.api_router import router as rpc_router
from vllm.entrypoints.serve.engine.protocol import UsageInfo
from vllm.entrypoints.serve.exception_handling.register import init_exception_handler
from vllm.entrypoints.serve.instrumentator.health import router as health_router
from vllm.exceptions import RetryableRequestError, VLLMNotFoundError, VLLMValidationError
from vllm.outputs import WeightVersionSpan
from vllm.sampling_params import SamplingParams
from vllm.v1.worker.gpu_model_runner import GPUModelRunner

from arctic_swe.engine import Generation, RequestError, TorchEngine
from arctic_swe.model import read_weights
from load_router import GenerateRequest

PauseMode = Literal["abort", "wait", "keep"]
#: A receiving side for the NCCL path: (typed init info, typed update info) -> the tensors
#: received this round (HF names), or None when it only checked the payload.
Receiver = Callable[[Any, Any], Mapping[str, torch.Tensor] | None]


class Transport(Protocol):
    """The engine side of the broadcast (``arctic_swe.transfer.EngineReceiver`` fits)."""

    def join(self, init_payload: Mapping[str, Any]) -> None: ...

    def receive(self, update_payload: Mapping[str, Any]) -> dict[str, torch.Tensor]: ...


_RELOAD_SIGNATURE = inspect.signature(GPUModelRunner.reload_weights)
#: vLLM's NCCL engine as a payload parser only: its parse methods read nothing but the
#: dataclass types (the instance is never initialised, so no process group or model).
_NCCL_PARSER = object.__new__(NCCLWeightTransferEngine)


class StandInEngineClient(EngineClient):
    """``AsyncLLM``'s surface over a :class:`TorchEngine` (the methods vLLM's routers call).

    ``transfer_backend`` is what ``--weight-transfer-config`` configured (``None``: none, so
    every weight-transfer worker call raises as vLLM's worker does). ``failures`` maps a
    worker method name to the error it raises on every call (a test's fault injection).
    """

    def __init__(
        self,
        engine: TorchEngine,
        model: torch.nn.Module,
        *,
        model_name: str,
        model_path: Path,
        transfer_backend: str | None = "nccl",
        receiver: Receiver | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.engine = engine
        self.model = model
        self.model_name = model_name
        self.model_path = model_path
        self.transfer_backend = transfer_backend
        self.receiver = receiver
        self.transport = transport
        self.failures: dict[str, BaseException] = {}
        self.worker_calls: list[tuple[str, dict[str, Any]]] = []
        self.sampling_params: list[SamplingParams] = []
        self.completion_bodies: list[dict[str, Any]] = []  # as the client sent them
        self.prompts: list[list[int]] = []
        self.rejected = 0  # completions refused while paused (abort/wait)
        self.label = "default"  # EngineCore's weight-version label
        self._labels = {engine.version: "default"}  # engine epoch -> label it sampled under
        self._pause: PauseMode | None = None
        self._in_flight: set[asyncio.Task[Generation]] = set()
        # GPU worker state
        self._update_active = False
        self._init_info: Any = None
        self._last_update_info: Any = None
        self._staged: Mapping[str, torch.Tensor] | None = None

    # ---------------------------------------------------------------- generation
    async def sample(
        self, prompt: list[int], params: SamplingParams
    ) -> tuple[Generation, list[str]]:
        """One request: the turn and the label each token was sampled under."""
        if self._pause in ("abort", "wait"):  # EngineCore rejects adds while PAUSED_NEW
            self.rejected += 1
            raise RetryableRequestError("Generation is paused. Please retry after it resumes.")
        self.sampling_params.append(params)
        self.prompts.append(list(prompt))
        ids: Any = tuple(prompt)
        request = GenerateRequest(
            rollout_index=0, prompt_ids=ids, max_new_tokens=params.max_tokens or 1
        )
        stops = () if params.ignore_eos else tuple(params.stop_token_ids or ())
        task = asyncio.ensure_future(
            self.engine.generate_detailed(request, stop_token_ids=stops, seed=params.seed)
        )
        self._in_flight.add(task)
        try:
            turn = await asyncio.shield(task)
        except RequestError as exc:
            raise VLLMValidationError(str(exc)) from exc
        finally:
            self._in_flight.discard(task)
        return turn, [self._labels[v] for v in turn.versions]

    def generate(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the stand-in serves completions through sample()")

    def encode(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the stand-in does not pool")

    # ---------------------------------------------------------------- pause / resume
    async def pause_generation(
        self, *, mode: PauseMode = "abort", clear_cache: bool = True
    ) -> None:
        # keep: PAUSED_ALL (frozen, new adds queued); abort/wait: PAUSED_NEW (adds rejected).
        self._pause = mode
        if mode == "abort":
            await self.engine.abort()  # each running request ends with its partial output
        elif mode == "wait":
            while self._in_flight:
                await asyncio.wait(set(self._in_flight))
        else:
            self.engine.pause()

    async def resume_generation(self) -> None:
        self._pause = None
        self.engine.resume()

    async def is_paused(self) -> bool:
        return self._pause is not None

    # ---------------------------------------------------------------- weight label
    async def update_weight_version(self, new_version: str) -> None:
        if new_version != self.label:
            # A new epoch of the torch engine from the next step on (same weights, caches
            # kept): every token sampled after this carries the new label.
            await self._new_epoch(self.model.state_dict(), new_version, invalidate=False)

    async def get_weight_version(self) -> str:
        return self.label

    async def _new_epoch(
        self, weights: Mapping[str, torch.Tensor], label: str, *, invalidate: bool
    ) -> None:
        epoch = self.engine.version + 1
        self._labels[epoch] = label
        await self.engine.refresh_weights(weights, epoch, invalidate_caches=invalidate)
        self.label = label

    # ---------------------------------------------------------------- AsyncLLM -> workers
    async def collective_rpc(
        self,
        method: str,
        timeout: float | None = None,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> list[Any]:
        """One worker; its error reaches the API server wrapped as EngineCore wraps it."""
        self.worker_calls.append((method, dict(kwargs or {})))
        try:
            if method in self.failures:
                raise self.failures[method]
            handler = getattr(self, f"_worker_{method}", None)
            if handler is None:
                raise AttributeError(f"the worker has no method {method!r}")
            return [await handler(*args, **(kwargs or {}))]
        except Exception as exc:
            raise Exception(f"Call to collective_rpc method failed: {exc}") from exc

    async def init_weight_transfer_engine(self, init_request: Any) -> None:
        await self.collective_rpc(
            "init_weight_transfer_engine", kwargs={"init_info": init_request.init_info}
        )

    async def shutdown_weight_transfer_engine(self) -> None:
        await self.collective_rpc("shutdown_weight_transfer_engine")

    async def start_weight_update(self) -> None:
        await self.collective_rpc("start_weight_update")

    async def update_weights(self, request: Any) -> None:
        await self.collective_rpc("update_weights", kwargs={"update_info": request.update_info})

    async def finish_weight_update(self, weight_version: str | None = None) -> None:
        await self.collective_rpc("finish_weight_update")
        if weight_version is not None:
            await self.update_weight_version(weight_version)

    # ---------------------------------------------------------------- the GPU worker
    def _check_transfer(self) -> None:
        if self.transfer_backend is None:
            raise RuntimeError("weight transfer is not configured (no --weight-transfer-config)")
        if self.transfer_backend != "nccl":
            raise RuntimeError(f"the stand-in models the nccl backend, not {self.transfer_backend}")

    async def _worker_reload_weights(self, *args: Any, **kwargs: Any) -> None:
        bound = _RELOAD_SIGNATURE.bind(None, *args, **kwargs)  # TypeError as the worker's call
        bound.apply_defaults()
        path = bound.arguments["weights_path"]
        if bound.arguments["weights_iterator"] is not None:
            raise TypeError("a weights iterator cannot come over HTTP")
        folder = Path(path) if path is not None else self.model_path
        if not folder.is_dir():
            # vLLM takes a non-directory for a Hugging Face repo id and fails to fetch it.
            raise OSError(f"{folder} is not a local directory (nor a reachable hub repository)")
        if not sorted(folder.glob("*.safetensors")):
            raise RuntimeError(f"no *.safetensors weights found in {folder}")
        weights = await asyncio.to_thread(read_weights, folder)
        await self._new_epoch(weights, self.label, invalidate=True)

    async def _worker_init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self._check_transfer()
        # vLLM's own parse: the dataclass built from the dict (TypeError -> ValueError).
        self._init_info = _NCCL_PARSER.parse_init_info(init_info)
        self._last_update_info = None
        if self.transport is not None:  # blocks until the trainer joins, as NCCL's init does
            await asyncio.to_thread(self.transport.join, init_info)

    async def _worker_shutdown_weight_transfer_engine(self) -> None:
        if self._update_active:
            raise RuntimeError("cannot release the trainer connection during a weight update")
        self._init_info = None

    async def _worker_start_weight_update(self) -> None:
        self._check_transfer()
        if self._update_active:
            raise RuntimeError("start_weight_update while an update is active")
        self._update_active = True
        self._staged = None

    async def _worker_update_weights(self, update_info: Any) -> None:
        self._check_transfer()
        if not self._update_active:
            raise RuntimeError("start_weight_update must come before update_weights")
        try:
            local = update_info[0] if isinstance(update_info, list) else update_info
            typed = _NCCL_PARSER.parse_update_info(local)
            if self._init_info is None:
                raise RuntimeError("no NCCL group: call init_weight_transfer_engine first")
            if typed.names:
                self._last_update_info = typed
            elif self._last_update_info is not None:  # all three empty: last round's
                typed = self._last_update_info
            if self.transport is not None:  # blocks while the trainer broadcasts
                self._staged = await asyncio.to_thread(self.transport.receive, local)
            if self.receiver is not None:
                received = await asyncio.to_thread(self.receiver, self._init_info, typed)
                if received is not None:
                    self._staged = received
        except BaseException:
            self._update_active = False  # the worker drops the session on a failed chunk
            raise

    async def _worker_finish_weight_update(self) -> None:
        self._check_transfer()
        if not self._update_active:
            raise RuntimeError("finish_weight_update without a matching start_weight_update")
        staged, self._staged = self._staged, None
        self._update_active = False
        if staged is not None:
            await self._new_epoch(staged, self.label, invalidate=True)

    # ---------------------------------------------------------------- the rest of the ABC
    @property
    def is_running(self) -> bool:
        return True

    @property
    def is_stopped(self) -> bool:
        return False

    @property
    def errored(self) -> bool:
        return False

    @property
    def dead_error(self) -> BaseException:
        return RuntimeError("the stand-in engine is not dead")

    async def check_health(self) -> None:
        return None

    async def reset_prefix_cache(
        self, reset_running_requests: bool = False, reset_connector: bool = False
    ) -> bool:
        return True

    async def reset_mm_cache(self) -> None:
        return None

    async def reset_encoder_cache(self) -> None:
        return None

    async def abort(self, request_id: Any, internal: bool = False) -> None:
        raise NotImplementedError

    async def notify_kv_transfer_request_rejected(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    async def is_tracing_enabled(self) -> bool:
        return False

    async def do_log_stats(self) -> None:
        return None

    async def start_profile(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError

    async def stop_profile(self) -> None:
        raise NotImplementedError

    async def sleep(self, level: int = 1, mode: PauseMode = "abort") -> None:
        raise NotImplementedError

    async def release_kv_cache_memory(self) -> None:
        raise NotImplementedError

    async def wake_up(self, tags: list[str] | None = None) -> bool:
        raise NotImplementedError

    async def is_sleeping(self) -> bool:
        return False

    async def add_lora(self, lora_request: Any) -> bool:
        raise NotImplementedError

    def shutdown(self, timeout: float | None = None) -> None:
        return None


# -------------------------------------------------------------------- the completion route
completion_router = APIRouter()
_FINISH = {"stop": "stop", "max_tokens": "length", "context": "length", "cancelled": "abort"}


def _spans(labels: list[str]) -> list[WeightVersionSpan]:
    spans: list[WeightVersionSpan] = []
    for index, label in enumerate(labels):
        if spans and spans[-1].version == label:
            spans[-1].end = index + 1
        else:
            spans.append(WeightVersionSpan(version=label, start=index, end=index + 1))
    return spans


@completion_router.post("/v1/completions")
async def create_completion(request: CompletionRequest, raw_request: Request) -> JSONResponse:
    client: StandInEngineClient = raw_request.app.state.engine_client
    client.completion_bodies.append(await raw_request.json())
    if request.model is not None and request.model != client.model_name:
        raise VLLMNotFoundError(f"The model `{request.model}` does not exist.")
    if not isinstance(request.prompt, list) or not all(isinstance(t, int) for t in request.prompt):
        raise VLLMValidationError("the stand-in takes one prompt of token ids", parameter="prompt")
    prompt = [int(t) for t in request.prompt]  # type: ignore[arg-type]  # checked just above
    room = (client.engine.config.max_seq_len or 10**9) - len(prompt)
    params = request.to_sampling_params(min(request.max_tokens or room, room), {})
    neutral = (
        params.temperature == 1.0 and params.top_p == 1.0 and params.top_k in (0, -1)
        and params.min_p == 0.0 and params.repetition_penalty == 1.0
        and params.presence_penalty == 0.0 and params.frequency_penalty == 0.0
    )  # fmt: skip
    if not neutral or params.logprobs not in (None, 0) or params.n != 1:
        raise VLLMValidationError("the stand-in samples only at the neutral settings")
    turn, labels = await client.sample(prompt, params)
    ids = list(turn.token_ids)
    logprobs = None
    if request.logprobs is not None:
        tokens = [f"token_id:{t}" for t in ids]
        logprobs = CompletionLogProbs(
            text_offset=list(range(len(ids))),
            token_logprobs=list(turn.logprobs),
            tokens=tokens,
            top_logprobs=[{tok: lp} for tok, lp in zip(tokens, turn.logprobs, strict=True)],
        )
    choice = CompletionResponseChoice(
        index=0,
        text="",
        logprobs=logprobs,
        finish_reason=_FINISH[turn.finish_reason],
        stop_reason=ids[-1] if turn.finish_reason == "stop" else None,
        token_ids=ids if request.return_token_ids else None,
        prompt_token_ids=list(prompt) if request.return_token_ids else None,
        weight_versions=_spans(labels) if request.return_weight_versions else None,
    )
    usage = UsageInfo(
        prompt_tokens=len(prompt), completion_tokens=len(ids), total_tokens=len(prompt) + len(ids)
    )
    response = CompletionResponse(model=client.model_name, choices=[choice], usage=usage)
    return JSONResponse(response.model_dump())


def build_app(client: StandInEngineClient) -> FastAPI:
    """vLLM's routers and exception handlers over ``client``, as ``vllm serve`` mounts them."""
    app = FastAPI()
    app.state.engine_client = client
    app.state.args = SimpleNamespace(log_error_stack=False)  # what vLLM's handlers read
    app.state.server = None
    init_exception_handler(app)
    for router in (health_router, rl_router, rpc_router, cache_router, completion_router):
        app.include_router(router)
    return app


class LoopbackServer:
    """uvicorn serving ``app`` on 127.0.0.1 (a free port) in a thread with its own event loop;
    ``on_stop`` runs on that loop after the server stops (closing the engine)."""

    def __init__(
        self, app: FastAPI, on_stop: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vllm-stand-in", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._ready.set()
            try:
                await self._server.serve(sockets=[self._sock])
            finally:
                if self._on_stop is not None:
                    await self._on_stop()

        asyncio.run(main())

    def start(self) -> LoopbackServer:
        self._thread.start()
        self._ready.wait(30)
        for _ in range(300):
            if self._server.started:
                return self
            self._thread.join(0.05)
        raise RuntimeError("the loopback server did not start within 15 s")

    def call(self, factory: Callable[[], Coroutine[Any, Any, Any]], timeout: float = 60) -> Any:
        """Run a coroutine on the server's loop (where the engine lives) and wait for it."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(factory(), self._loop).result(timeout)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()
