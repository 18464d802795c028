"""``HttpEngine``: load-router's ``Engine`` over vLLM 0.33's HTTP API.

The server is a stock ``vllm serve`` (with ``VLLM_SERVER_DEV_MODE=1``) or ``arctic-swe serve``
(the app's CPU torch engine), which implements the same routes with the same semantics
(Arctic-SWE §3.3): token ids in, per-token raw log-probs and weight-version spans out;
keep-mode pause, a weight refresh by one of the two paths vLLM 0.33 offers, resume.

Refresh paths (``HttpEngineConfig.weight_transfer``):

* ``"reload"`` — the trainer publishes a directory of ``*.safetensors`` (Hugging Face names);
  ``POST /collective_rpc`` ``reload_weights`` loads it in place, ``POST /update_weight_version``
  labels it.
* ``"nccl"`` — vLLM's weight-transfer protocol: ``/init_weight_transfer_engine`` (once, while
  the trainer joins the engine's group), ``/start_weight_update``, ``/update_weights`` (names,
  dtypes, shapes, while the trainer broadcasts), ``/finish_weight_update`` (with the label).
  The trainer side is a :class:`WeightSender`.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import attrs
import httpx

from arctic_swe.config import WEIGHT_TRANSFERS
from arctic_swe.engine._errors import (
    EngineClosedError,
    EngineProtocolError,
    EngineUnavailableError,
    RefreshError,
    RequestError,
)
from arctic_swe.engine._wire import (
    completion_body,
    error_message,
    finish_reason,
    joined,
    parse_completion,
    parse_prometheus,
    version_label,
)
from arctic_swe.transfer import WeightSender
from load_router import GenerateRequest, GenerateResult

#: HTTP statuses worth another try: the server is overloaded, restarting or paused.
_RETRY_STATUSES = frozenset({500, 502, 503, 504})
#: Routes that change the served weights or their label: never repeated after the server may
#: have acted on them (see ``HttpEngine._call``).
_ONCE_ROUTES = frozenset(
    {
        "/init_weight_transfer_engine",
        "/start_weight_update",
        "/update_weights",
        "/finish_weight_update",
        "/collective_rpc",
        "/update_weight_version",
    }
)
#: Connections per pool. httpcore scans every connection of its pool for every queued request
#: on each request and response (quadratic in the concurrency): 32 turns in one pool cost ~2 ms
#: of client CPU each, so concurrent turns are spread over several small pools instead.
_LANE_CONNECTIONS = 8


@dataclass(frozen=True)
class HttpEngineConfig:
    """How an :class:`HttpEngine` talks to its server.

    * ``model`` — the served model name sent with every completion (vLLM checks it).
    * ``connect_timeout_s`` — seconds to open a connection.
    * ``request_timeout_s`` — seconds one completion may take end to end (a keep-mode pause
      holds requests, so this must exceed the longest refresh).
    * ``control_timeout_s`` — seconds for a control call (pause, weight routes, health).
    * ``retries`` — further tries after the first on a connection error, a reset connection
      or a 5xx; then :class:`EngineUnavailableError`.
    * ``backoff_s`` / ``backoff_max_s`` — exponential back-off between tries (with jitter).
    * ``stop_token_ids`` — sent with every completion; ``None``: the server's default stop set.
    * ``weight_transfer`` — the refresh path: ``"reload"`` (a weights directory through
      ``/collective_rpc reload_weights``) or ``"nccl"`` (vLLM's weight-transfer routes, with a
      :class:`WeightSender`).
    * ``initial_version`` — the policy version of the weights the server started with: what
      vLLM's start label ``"default"`` means (0 in a fresh run; a resumed run's version).
    """

    model: str = "arctic-swe"
    connect_timeout_s: float = 5.0
    request_timeout_s: float = 600.0
    control_timeout_s: float = 600.0
    retries: int = 3
    backoff_s: float = 0.1
    backoff_max_s: float = 2.0
    stop_token_ids: tuple[int, ...] | None = None
    weight_transfer: Literal["reload", "nccl"] = "reload"
    initial_version: int = 0

    def __post_init__(self) -> None:
        for name in ("connect_timeout_s", "request_timeout_s", "control_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise RequestError(f"{name} must be a positive number, got {value!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise RequestError(f"retries must be a non-negative int, got {self.retries!r}")
        if not 0 <= self.backoff_s <= self.backoff_max_s:
            raise RequestError("need 0 <= backoff_s <= backoff_max_s")
        if self.weight_transfer not in WEIGHT_TRANSFERS:
            raise RequestError(
                f"weight_transfer must be one of {WEIGHT_TRANSFERS}, got {self.weight_transfer!r}"
            )
        version = self.initial_version
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise RequestError(f"initial_version must be a non-negative int, got {version!r}")


class HttpEngine:
    """A remote inference engine behind the engine protocol (implements
    :class:`arctic_swe.engine.RunEngine`).

    ``base_url`` is the server root (``http://127.0.0.1:8000``); ``capacity`` the most
    sequences it keeps resident (the router's cap). Calls are concurrent (one pooled
    ``httpx.AsyncClient``); each is bounded by the config's timeouts and retries, after which
    :class:`EngineUnavailableError` is raised — the router marks the engine down. A 4xx
    answer is the caller's fault: :class:`RequestError` (generate) or :class:`RefreshError`
    (refresh), and the engine stays usable. Drive it from one event loop.
    """

    def __init__(
        self,
        engine_id: str,
        base_url: str,
        *,
        capacity: int,
        config: HttpEngineConfig | None = None,
        weight_sender: WeightSender | None = None,
    ) -> None:
        if not engine_id:
            raise RequestError("engine_id must be a non-empty string")
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise RequestError(f"capacity must be a positive int, got {capacity!r}")
        if not base_url.startswith(("http://", "https://")):
            raise RequestError(f"base_url must be an http(s) URL, got {base_url!r}")
        self._engine_id = engine_id
        self._capacity = capacity
        self.base_url = base_url.rstrip("/")
        self.config = config or HttpEngineConfig()
        if self.config.weight_transfer == "nccl" and weight_sender is None:
            raise RequestError(
                f"engine {engine_id}: weight_transfer 'nccl' needs a weight_sender (the trainer "
                "side of the broadcast)"
            )
        self._sender = weight_sender
        self._clients: list[httpx.AsyncClient] = []  # lane 0 also carries control calls
        self._lane_load: list[int] = []
        self._in_flight = 0
        self._initialised = False
        self._refresh_lock: asyncio.Lock | None = None
        self._closed = False

    # ------------------------------------------------------------ Engine protocol
    @property
    def engine_id(self) -> str:
        """Stable identity (the router's registry key)."""
        return self._engine_id

    @property
    def capacity(self) -> int:
        """The most sequences the server keeps resident."""
        return self._capacity

    @property
    def in_flight(self) -> int:
        """Generate calls this client has sent and not yet seen answered."""
        return self._in_flight

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """Sample one turn: ``POST /v1/completions`` with the whole history as token ids.

        Returns one log-prob and one policy version per sampled token (a refresh that lands
        mid-turn splits the turn's ``weight_versions`` spans). A turn the server ends with
        ``finish_reason: "abort"`` (someone paused it with ``mode=abort``) is continued: its
        partial tokens are appended to the prompt and the rest is requested (retried like any
        503 while the pause lasts), so the caller always gets a whole turn whose tokens keep
        the log-probs and versions they were sampled with. Raises :class:`RequestError` on a
        4xx, :class:`EngineUnavailableError` when the server does not answer within the
        retries (or aborts the turn more than ``retries + 1`` times in a row without a new
        token), :class:`EngineProtocolError` on a malformed answer.
        """
        if not isinstance(request, GenerateRequest):
            raise RequestError(f"expected a GenerateRequest, got {type(request).__name__}")
        self._in_flight += 1
        try:
            return await self._generate_whole(request)
        finally:
            self._in_flight -= 1

    async def _generate_whole(self, request: GenerateRequest) -> GenerateResult:
        parts: list[GenerateResult] = []
        done = 0
        idle_aborts = 0
        while True:
            piece: Any = request
            if done:  # a continuation: the partial turn becomes part of the prompt
                sampled: list[int] = [t for p in parts for t in p.token_ids]
                history: Any = [*request.prompt_ids, *sampled]  # attrs' converter: a tuple
                piece = attrs.evolve(
                    request,
                    prompt_ids=history,
                    max_new_tokens=request.max_new_tokens - done,
                    seed=None if request.seed is None else (request.seed + done) % 2**63,
                )
            body = completion_body(
                piece, model=self.config.model, stop_token_ids=self.config.stop_token_ids
            )
            reply = await self._call("POST", "/v1/completions", json=body, kind="generate")
            part = self._parsed(reply)
            parts.append(part)
            done += len(part.token_ids)
            if finish_reason(reply) != "abort" or done >= request.max_new_tokens:
                return joined(parts)
            idle_aborts = 0 if part.token_ids else idle_aborts + 1
            if idle_aborts > self.config.retries:
                raise EngineUnavailableError(
                    f"engine {self._engine_id}: turn aborted {idle_aborts} times in a row "
                    "without progress"
                )
            await asyncio.sleep(self._backoff(max(idle_aborts, 1)))

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        """Load new weights as ``version`` while requests are in flight (vLLM's keep-mode RL
        flow, module docstring): ``/pause?mode=keep&clear_cache=…`` freezes running sequences
        where they are, the configured path loads and labels the weights ``str(version)``,
        ``/resume`` continues. ``weights_ref`` is the published weights directory (the
        ``"reload"`` path; the ``"nccl"`` path sends the sender's ``version`` and only
        records it). With ``invalidate_caches`` the server drops every cache at the pause,
        so each token after the refresh is sampled from caches recomputed under the new
        weights; ``False`` is the stale-cache ablation. ``/resume`` is sent even when the
        update fails, so a refused refresh (:class:`RefreshError`, naming the engine and the
        route) leaves the engine serving its old weights.
        """
        if not isinstance(weights_ref, str) or not weights_ref:
            raise RefreshError(f"weights_ref must be a path string, got {weights_ref!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise RefreshError(f"version must be a non-negative int, got {version!r}")
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        async with self._refresh_lock:
            if self.config.weight_transfer == "nccl" and not self._initialised:
                await self._join_sender()
            clear = "true" if invalidate_caches else "false"
            await self._control("POST", f"/pause?mode=keep&clear_cache={clear}")
            try:
                if self.config.weight_transfer == "nccl":
                    await self._update_by_broadcast(version)
                else:
                    await self._update_by_reload(weights_ref, version)
            finally:
                await self._control("POST", "/resume")

    async def _update_by_reload(self, weights_dir: str, version: int) -> None:
        rpc = {
            "method": "reload_weights",
            "kwargs": {"weights_path": weights_dir, "is_checkpoint_format": True},
        }
        await self._control("POST", "/collective_rpc", json=rpc)
        await self._control("POST", "/update_weight_version", json={"new_version": str(version)})

    async def _join_sender(self) -> None:
        assert self._sender is not None  # the constructor insists on one for "nccl"
        route = "/init_weight_transfer_engine"
        init_info = await self._trainer_side(self._sender.init_info(self._engine_id), route)
        await self._concurrently(
            self._control("POST", "/init_weight_transfer_engine", json={"init_info": init_info}),
            self._sender.connect(self._engine_id),
            route="/init_weight_transfer_engine",
        )
        self._initialised = True

    async def _update_by_broadcast(self, version: int) -> None:
        assert self._sender is not None
        update_info = await self._trainer_side(self._sender.update_info(version), "/update_weights")
        await self._control("POST", "/start_weight_update")
        await self._concurrently(
            self._control("POST", "/update_weights", json={"update_info": update_info}),
            self._sender.send(self._engine_id, version),
            route="/update_weights",
        )
        await self._control("POST", "/finish_weight_update", json={"weight_version": str(version)})

    async def _trainer_side(self, call: Awaitable[dict[str, Any]], route: str) -> dict[str, Any]:
        try:
            return await call
        except Exception as exc:  # whatever the trainer side raises, this engine's refresh failed
            raise RefreshError(
                f"engine {self._engine_id}: POST {route}: the trainer side failed: {exc!r}"
            ) from exc

    async def _concurrently(
        self, engine_call: Awaitable[Any], trainer_call: Awaitable[None], *, route: str
    ) -> None:
        """Run an engine route and the trainer side of the same collective together (both
        block inside it). The first failure ends both: the other side would only wait for a
        peer that is gone. A failed trainer side (an unreachable trainer endpoint) is a
        :class:`RefreshError` for this engine; an engine failure keeps its own type."""
        engine_task = asyncio.ensure_future(engine_call)
        trainer_task = asyncio.ensure_future(trainer_call)
        done, pending = await asyncio.wait(
            {engine_task, trainer_task}, return_when=asyncio.FIRST_EXCEPTION
        )
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if engine_task in done and engine_task.exception() is not None:
            raise engine_task.exception()  # type: ignore[misc]
        if trainer_task in done and (error := trainer_task.exception()) is not None:
            raise RefreshError(
                f"engine {self._engine_id}: POST {route}: the trainer side failed: {error!r}"
            ) from error

    # ------------------------------------------------------------ service calls
    async def health(self) -> bool:
        """Whether ``GET /health`` answers 200 now (one try, control timeout)."""
        try:
            response = await self._http().get("/health", timeout=self._timeout(control=True))
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def wait_ready(self, timeout: float) -> None:
        """Poll ``/health`` until it answers 200; :class:`EngineUnavailableError` after
        ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.05
        while not await self.health():
            if loop.time() + delay > deadline:
                raise EngineUnavailableError(
                    f"engine {self._engine_id} at {self.base_url} not ready after {timeout} s"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def weight_version(self) -> int:
        """The policy version the server samples under now (``GET /weight_info``; vLLM's
        start label ``"default"`` is ``initial_version``)."""
        reply = await self._control("GET", "/weight_info")
        try:
            return version_label(
                reply.get("weight_version"), start_version=self.config.initial_version
            )
        except EngineProtocolError as exc:
            raise EngineProtocolError(f"engine {self._engine_id}: GET /weight_info: {exc}") from exc

    async def is_paused(self) -> bool:
        """``GET /is_paused``."""
        reply = await self._control("GET", "/is_paused")
        return bool(reply.get("is_paused"))

    async def metrics(self) -> dict[str, float]:
        """``GET /metrics`` parsed: Prometheus sample name (labels included) → value."""
        text = await self._call("GET", "/metrics", kind="control", text=True)
        assert isinstance(text, str)
        return parse_prometheus(text)

    async def close(self) -> None:
        """Close the connection pool; later calls raise :class:`EngineClosedError`."""
        self._closed = True
        clients, self._clients, self._lane_load = self._clients, [], []
        for client in clients:
            await client.aclose()

    # ------------------------------------------------------------------ internals
    def _parsed(self, reply: object) -> GenerateResult:
        try:
            return parse_completion(reply, start_version=self.config.initial_version)
        except EngineProtocolError as exc:
            raise EngineProtocolError(
                f"engine {self._engine_id}: POST /v1/completions: {exc}"
            ) from exc

    def _http(self, lane: int = 0) -> httpx.AsyncClient:
        if self._closed:
            raise EngineClosedError(f"engine {self._engine_id} is closed")
        if not self._clients:
            lanes = -(-(self._capacity + 8) // _LANE_CONNECTIONS)  # ceil: room for capacity + 8
            limits = httpx.Limits(
                max_connections=_LANE_CONNECTIONS, max_keepalive_connections=_LANE_CONNECTIONS
            )
            self._clients = [
                httpx.AsyncClient(base_url=self.base_url, limits=limits) for _ in range(lanes)
            ]
            self._lane_load = [0] * lanes
        return self._clients[lane]

    def _least_loaded_lane(self) -> int:
        self._http()  # the pools exist (or EngineClosedError)
        return min(range(len(self._lane_load)), key=self._lane_load.__getitem__)

    def _timeout(self, *, control: bool) -> httpx.Timeout:
        total = self.config.control_timeout_s if control else self.config.request_timeout_s
        return httpx.Timeout(total, connect=self.config.connect_timeout_s, pool=None)

    async def _control(
        self, method: str, path: str, *, json: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        reply = await self._call(method, path, json=json, kind="control")
        assert isinstance(reply, dict)
        return reply

    async def _call(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        kind: str,
        text: bool = False,
    ) -> Any:
        """One request with bounded retries on connection failures and 5xx answers.

        A weight route (:data:`_ONCE_ROUTES`) is sent again only when the connection was never
        made: its 5xx, or a connection lost mid-answer, leaves the server's weights in an
        unknown state (half loaded, a collective half done), so the engine is down at once."""
        timeout = self._timeout(control=kind != "generate")
        once = path.split("?")[0] in _ONCE_ROUTES
        last = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                await asyncio.sleep(self._backoff(attempt))
            lane = self._least_loaded_lane() if kind == "generate" else 0
            try:
                response = await self._send(lane, method, path, json, timeout)
            except (httpx.ConnectTimeout, httpx.ConnectError) as exc:  # never reached it
                last = repr(exc)
                continue
            except httpx.TimeoutException as exc:
                # The server holds the request but does not finish it: retrying would only
                # multiply the wait, so the engine is down now.
                raise EngineUnavailableError(
                    f"engine {self._engine_id}: {method} {path} timed out ({exc!r})"
                ) from exc
            except httpx.TransportError as exc:  # reset, closed mid-answer
                if once:
                    raise EngineUnavailableError(
                        f"engine {self._engine_id}: {method} {path}: connection lost ({exc!r})"
                    ) from exc
                last = repr(exc)
                continue
            if response.status_code in _RETRY_STATUSES and not once:
                last = f"HTTP {response.status_code}: {error_message(response)}"
                continue
            message = f"engine {self._engine_id}: {method} {path} -> HTTP {response.status_code}: "
            if response.status_code >= 500:
                raise EngineUnavailableError(message + error_message(response))
            if response.status_code >= 400:
                error = RequestError if kind == "generate" else RefreshError
                raise error(message + error_message(response))
            if text:
                return response.text
            if not response.content.strip():  # vLLM's collective_rpc: 200, no body
                return {}
            try:
                return response.json()
            except ValueError as exc:
                raise EngineProtocolError(
                    f"engine {self._engine_id}: {method} {path}: answer is not JSON"
                ) from exc
        raise EngineUnavailableError(
            f"engine {self._engine_id} at {self.base_url}: {method} {path} failed "
            f"{self.config.retries + 1} times; last: {last}"
        )

    async def _send(
        self,
        lane: int,
        method: str,
        path: str,
        json: Mapping[str, Any] | None,
        timeout: httpx.Timeout,
    ) -> httpx.Response:
        client = self._http(lane)
        clients = self._clients
        self._lane_load[lane] += 1
        try:
            return await client.request(method, path, json=json, timeout=timeout)
        finally:
            if self._clients is clients:  # not closed (and reopened) meanwhile
                self._lane_load[lane] -= 1

    def _backoff(self, attempt: int) -> float:
        delay = min(self.config.backoff_s * 2.0 ** (attempt - 1), self.config.backoff_max_s)
        return delay * (0.5 + random.random() / 2)  # jitter: retries of many calls spread out
