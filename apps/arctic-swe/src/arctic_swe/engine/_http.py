"""``HttpEngine``: load-router's ``Engine`` over an engine server's HTTP protocol.

The server is ``arctic-swe serve`` (the app's torch engine) or a stock ``vllm serve`` — both
speak the same subset of vLLM's OpenAI-compatible and RL routes (Arctic-SWE §3.3): token ids in,
per-token log-probs and weight-version spans out; keep-mode pause, weight transfer, resume.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import attrs
import httpx

from arctic_swe.engine._errors import (
    EngineClosedError,
    EngineProtocolError,
    EngineUnavailableError,
    RefreshError,
    RequestError,
)
from load_router import GenerateRequest, GenerateResult

#: HTTP statuses worth another try: the server is overloaded, restarting or paused.
_RETRY_STATUSES = frozenset({500, 502, 503, 504})
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
    * ``init_info`` — the ``/init_weight_transfer_engine`` payload sent before the first
      refresh (the checkpoint-format file path needs none).
    """

    model: str = "arctic-swe"
    connect_timeout_s: float = 5.0
    request_timeout_s: float = 600.0
    control_timeout_s: float = 600.0
    retries: int = 3
    backoff_s: float = 0.1
    backoff_max_s: float = 2.0
    stop_token_ids: tuple[int, ...] | None = None
    init_info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("connect_timeout_s", "request_timeout_s", "control_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise RequestError(f"{name} must be a positive number, got {value!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise RequestError(f"retries must be a non-negative int, got {self.retries!r}")
        if not 0 <= self.backoff_s <= self.backoff_max_s:
            raise RequestError("need 0 <= backoff_s <= backoff_max_s")


class HttpEngine:
    """A remote inference engine behind the engine protocol (implements
    :class:`load_router.Engine`).

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
            body = self._completion_body(piece)
            reply = await self._call("POST", "/v1/completions", json=body, kind="generate")
            part = parse_completion(reply)
            parts.append(part)
            done += len(part.token_ids)
            if finish_reason(reply) != "abort" or done >= request.max_new_tokens:
                return _joined(parts)
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
        """Load the safetensors file ``weights_ref`` as ``version`` while requests are in flight.

        The protocol (vLLM's keep-mode RL flow): ``/pause?mode=keep&clear_cache=…`` freezes
        running sequences where they are; ``/start_weight_update`` → ``/update_weights`` →
        ``/finish_weight_update`` swaps the weights and labels them ``str(version)``;
        ``/resume`` continues. With ``invalidate_caches`` the server drops every cache, so
        each token after the refresh is sampled from caches recomputed under the new weights;
        ``False`` is the stale-cache ablation. ``/resume`` is sent even when the update
        fails, so a refused refresh (:class:`RefreshError`) leaves the engine serving its old
        weights.
        """
        if not isinstance(weights_ref, str) or not weights_ref:
            raise RefreshError(f"weights_ref must be a path string, got {weights_ref!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise RefreshError(f"version must be a non-negative int, got {version!r}")
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        async with self._refresh_lock:
            if not self._initialised:
                await self._control(
                    "POST",
                    "/init_weight_transfer_engine",
                    json={"init_info": dict(self.config.init_info)},
                )
                self._initialised = True
            clear = "true" if invalidate_caches else "false"
            await self._control("POST", f"/pause?mode=keep&clear_cache={clear}")
            try:
                await self._control("POST", "/start_weight_update")
                update = {"weights_path": weights_ref, "is_checkpoint_format": True}
                await self._control("POST", "/update_weights", json={"update_info": update})
                await self._control(
                    "POST", "/finish_weight_update", json={"weight_version": str(version)}
                )
            finally:
                await self._control("POST", "/resume")

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

    async def weight_version(self) -> str | None:
        """The server's current weight-version label (``GET /weight_info``)."""
        reply = await self._control("GET", "/weight_info")
        version = reply.get("weight_version")
        return None if version is None else str(version)

    async def is_paused(self) -> bool:
        """``GET /is_paused``."""
        reply = await self._control("GET", "/is_paused")
        return bool(reply.get("is_paused"))

    async def metrics(self) -> dict[str, float]:
        """``GET /metrics`` parsed: Prometheus sample name (labels included) → value."""
        text = await self._call("GET", "/metrics", kind="control", text=True)
        assert isinstance(text, str)
        return parse_prometheus(text)

    async def aclose(self) -> None:
        """Close the connection pool; later calls raise :class:`EngineClosedError`."""
        self._closed = True
        clients, self._clients, self._lane_load = self._clients, [], []
        for client in clients:
            await client.aclose()

    # ------------------------------------------------------------------ internals
    def _completion_body(self, request: GenerateRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "prompt": list(request.prompt_ids),
            "max_tokens": request.max_new_tokens,
            "temperature": 1.0,
            "top_p": 1.0,
            "logprobs": 0,
            "return_token_ids": True,
            "return_weight_versions": True,
            "skip_special_tokens": False,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if self.config.stop_token_ids is not None:
            body["stop_token_ids"] = list(self.config.stop_token_ids)
        return body

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
        """One request with bounded retries on connection failures and 5xx answers."""
        timeout = self._timeout(control=kind != "generate")
        last = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                await asyncio.sleep(self._backoff(attempt))
            lane = self._least_loaded_lane() if kind == "generate" else 0
            try:
                response = await self._send(lane, method, path, json, timeout)
            except httpx.ConnectTimeout as exc:
                last = repr(exc)
                continue
            except httpx.TimeoutException as exc:
                # The server holds the request but does not finish it: retrying would only
                # multiply the wait, so the engine is down now.
                raise EngineUnavailableError(
                    f"engine {self._engine_id}: {method} {path} timed out ({exc!r})"
                ) from exc
            except httpx.TransportError as exc:  # refused, reset, closed mid-answer
                last = repr(exc)
                continue
            if response.status_code in _RETRY_STATUSES:
                last = f"HTTP {response.status_code}: {_error_message(response)}"
                continue
            if response.status_code >= 400:
                message = f"{method} {path} -> HTTP {response.status_code}: "
                message += _error_message(response)
                error = RequestError if kind == "generate" else RefreshError
                raise error(f"engine {self._engine_id}: {message}")
            if text:
                return response.text
            try:
                return response.json()
            except ValueError as exc:
                raise EngineProtocolError(f"{method} {path}: answer is not JSON") from exc
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


def parse_completion(reply: object) -> GenerateResult:
    """A vLLM ``text_completion`` answer (one choice, ``return_token_ids`` and
    ``return_weight_versions`` set, ``logprobs=0``) → :class:`GenerateResult`.

    ``weight_versions`` spans are half-open output-token ranges labelled with the decimal
    policy version; they must tile ``[0, T)`` in order. Raises :class:`EngineProtocolError`.
    """
    try:
        choice = reply["choices"][0]  # type: ignore[index]
        # Any: attrs' tuple converter confuses mypy's generics
        token_ids: Any = tuple(int(t) for t in choice["token_ids"])
        logprobs: Any = tuple(float(x) for x in choice["logprobs"]["token_logprobs"])
        spans = choice["weight_versions"]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise EngineProtocolError(
            f"not a completion with token ids and log-probs: {exc!r}"
        ) from exc
    versions: Any = versions_from_spans(spans, len(token_ids))
    newest = versions[-1] if versions else _span_label(spans[-1]) if spans else 0
    try:
        return GenerateResult(
            token_ids=token_ids,
            logprobs=logprobs,
            policy_version=newest,
            token_versions=versions,
        )
    except ValueError as exc:  # load_router.ConfigError: lengths, negative ids
        raise EngineProtocolError(f"inconsistent completion: {exc}") from exc


def finish_reason(reply: object) -> str | None:
    """``choices[0].finish_reason`` of a completion answer (``None`` if absent)."""
    try:
        reason = reply["choices"][0].get("finish_reason")  # type: ignore[index]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None


def _joined(parts: Sequence[GenerateResult]) -> GenerateResult:
    """One turn from its pieces (a turn continued after aborts), in order."""
    if len(parts) == 1:
        return parts[0]
    ids: Any = tuple(t for p in parts for t in p.token_ids)
    logprobs: Any = tuple(x for p in parts for x in p.logprobs)
    versions: Any = tuple(v for p in parts for v in p.token_versions)
    newest = versions[-1] if versions else parts[-1].policy_version
    return GenerateResult(
        token_ids=ids, logprobs=logprobs, policy_version=newest, token_versions=versions
    )


def versions_from_spans(spans: object, num_tokens: int) -> tuple[int, ...]:
    """Per-token versions from vLLM ``WeightVersionSpan`` dicts tiling ``[0, num_tokens)``."""
    if not isinstance(spans, Sequence) or isinstance(spans, str):
        raise EngineProtocolError(f"weight_versions must be a list of spans, got {spans!r}")
    versions: list[int] = []
    for span in spans:
        if not isinstance(span, Mapping):
            raise EngineProtocolError(f"a weight-version span must be an object: {span!r}")
        start, end = span.get("start"), span.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or start != len(versions):
            raise EngineProtocolError(f"weight-version spans do not tile the output: {spans!r}")
        if end < start:
            raise EngineProtocolError(f"weight-version span ends before it starts: {span!r}")
        versions.extend([_span_label(span)] * (end - start))
    if len(versions) != num_tokens:
        raise EngineProtocolError(
            f"weight-version spans cover {len(versions)} tokens, the output has {num_tokens}"
        )
    return tuple(versions)


def _span_label(span: Mapping[str, Any]) -> int:
    label = span.get("version")
    try:
        version = int(str(label))
    except ValueError as exc:
        raise EngineProtocolError(f"weight version {label!r} is not a decimal version") from exc
    if version < 0:
        raise EngineProtocolError(f"weight version {label!r} is negative")
    return version


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition → ``{"name{labels}": value}`` (comments skipped)."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            samples[name] = float(value)
        except ValueError:
            continue
    return samples


def _error_message(response: httpx.Response) -> str:
    """The message of an OpenAI-style (``{"error": {"message": …}}``), FastAPI
    (``{"detail": …}``) or plain error body, on one line."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().replace("\n", " ")[:500]
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        if isinstance(error, dict):
            error = error.get("message", error)
        return str(error)[:500]
    return str(body)[:500]
