"""``HttpEngine`` against vLLM 0.33's own routers and exception handlers, over real loopback HTTP
(Arctic-SWE §3.3). The engine behind the routes is the CPU stand-in of ``vllm_stand_in`` (its
docstring says which parts are vLLM's code); the client is the project's, unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

import httpx
import torch
from conformance_support import Served, tiny_policy, write_checkpoint
from vllm.entrypoints.openai.completion.protocol import CompletionRequest

from arctic_swe.engine import (
    EngineUnavailableError,
    HttpEngine,
    HttpEngineConfig,
    RefreshError,
)
from arctic_swe.model import read_weights
from load_router import EngineState, GenerateRequest, RefreshMode, Router

Serve = Callable[..., Served]
PROMPT: Any = (5, 17, 42, 3)  # Any: attrs' tuple converter confuses mypy's generics
#: The sampling settings the trainer's log-probs assume (Arctic-SWE §3.3).
NEUTRAL = {
    "temperature": 1.0,
    "top_p": 1.0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}


def run(main: Callable[[], Coroutine[Any, Any, Any]], timeout: float = 120.0) -> Any:
    """Drive one scenario; a client that never finishes fails the test instead of hanging."""
    return asyncio.run(asyncio.wait_for(main(), timeout))


def client(served: Served, **config: Any) -> HttpEngine:
    settings = {"retries": 2, "backoff_s": 0.01, "backoff_max_s": 0.05, **config}
    sender = settings.pop("weight_sender", None)
    engine_id = settings.pop("engine_id", served.client.engine.engine_id)
    extra = {} if sender is None else {"weight_sender": sender}
    return HttpEngine(
        engine_id, served.url, capacity=4, config=HttpEngineConfig(**settings), **extra
    )


@pytest.fixture(scope="module")
def checkpoint_v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Published weights of version 1: a directory of safetensors with HF names."""
    return write_checkpoint(tmp_path_factory.mktemp("published") / "v1", seed=1)


@torch.no_grad()
def full_logprobs(model: torch.nn.Module, tokens: list[int], start: int) -> torch.Tensor:
    """log p(tokens[t] | tokens[:t]) for t >= start from one full forward: the trainer's view."""
    logits = model(torch.tensor([tokens])).logits[0].double()
    logprobs = torch.log_softmax(logits, dim=-1)
    targets = torch.tensor(tokens[start:])
    return logprobs[start - 1 : len(tokens) - 1].gather(1, targets[:, None])[:, 0]


async def wait_for_tokens(served: Served, count: int) -> None:
    """Until the stand-in's engine has sampled ``count`` tokens (a turn is under way)."""
    for _ in range(2000):
        if served.client.engine.counters.generated_tokens >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"fewer than {count} tokens sampled in 10 s")


# ------------------------------------------------------------------------------ turns
@pytest.mark.parametrize("initial_version", [0, 7])
def test_turn_before_and_after_a_reload_refresh(
    serve: Serve, checkpoint_v1: Path, initial_version: int
) -> None:
    """Token ids in; log-probs, token ids and per-token versions out. vLLM's start label
    "default" reads as the client's ``initial_version``; after a refresh the new label."""
    served = serve()
    engine = client(served, initial_version=initial_version)
    new = initial_version + 1

    async def main() -> tuple[Any, Any, int, int]:
        try:
            before = await engine.generate(GenerateRequest(0, PROMPT, 12, seed=3))
            version_before = await engine.weight_version()
            await engine.refresh(str(checkpoint_v1), new)
            after = await engine.generate(GenerateRequest(0, PROMPT, 12, seed=3))
            return before, after, version_before, await engine.weight_version()
        finally:
            await engine.close()

    before, after, version_before, version_after = run(main)
    assert version_before == initial_version
    assert version_after == new
    assert served.client.label == str(new)
    assert len(before.token_ids) == len(before.logprobs) == 12
    assert before.token_versions == (initial_version,) * 12
    assert after.token_versions == (new,) * 12
    # The log-probs are the sampled tokens' raw ones under the weights each turn ran on.
    old_model, new_model = tiny_policy(0), tiny_policy(1)
    for result, model in ((before, old_model), (after, new_model)):
        tokens = [*PROMPT, *result.token_ids]
        expected = full_logprobs(model, tokens, len(PROMPT))
        assert torch.allclose(
            torch.tensor(result.logprobs, dtype=torch.float64), expected, atol=2e-3
        )


def test_keep_pause_refresh_mid_turn_splits_the_spans(serve: Serve, checkpoint_v1: Path) -> None:
    """A refresh lands while a turn decodes: the turn is frozen (keep), the weights and label
    change, it resumes; its tokens carry the old version up to the refresh, the new one after."""
    served = serve(step_delay_s=0.02)
    engine = client(served)

    async def main() -> Any:
        try:
            turn = asyncio.ensure_future(engine.generate(GenerateRequest(0, PROMPT, 60, seed=1)))
            await wait_for_tokens(served, 5)
            await engine.refresh(str(checkpoint_v1), 1)
            return await turn
        finally:
            await engine.close()

    result = run(main)
    versions = list(result.token_versions)
    split = versions.index(1)
    assert 0 < split < 60
    assert versions == [0] * split + [1] * (60 - split)
    assert len(served.client.prompts) == 1  # frozen and resumed, never aborted
    # Tokens after the split were sampled from caches recomputed under the new weights.
    tokens = [*PROMPT, *result.token_ids]
    old = full_logprobs(tiny_policy(0), tokens, len(PROMPT))[:split]
    new = full_logprobs(tiny_policy(1), tokens, len(PROMPT))[split:]
    got = torch.tensor(result.logprobs, dtype=torch.float64)
    assert torch.allclose(got, torch.cat([old, new]), atol=2e-3)


def test_abort_pause_the_client_continues_the_turn(serve: Serve) -> None:
    """``/pause?mode=abort`` ends the turn with its partial output (finish_reason "abort"); new
    requests meet vLLM's retryable 503 until ``/resume``; the client continues the turn with
    the partial tokens appended to the prompt and returns one whole turn."""
    served = serve(step_delay_s=0.02)
    engine = client(served, retries=60, backoff_s=0.02, backoff_max_s=0.05)

    async def main() -> Any:
        try:
            turn = asyncio.ensure_future(engine.generate(GenerateRequest(0, PROMPT, 40, seed=1)))
            await wait_for_tokens(served, 5)
            async with httpx.AsyncClient(base_url=served.url) as http:
                assert (await http.post("/pause", params={"mode": "abort"})).status_code == 200
                while served.client.rejected < 2 and not turn.done():
                    await asyncio.sleep(0.01)  # the continuation is refused while paused
                probe = await http.post("/v1/completions", json={"prompt": [1], "max_tokens": 1})
                assert probe.status_code == 503
                assert probe.json()["error"]["type"] == "ServiceUnavailableError"
                assert (await http.post("/resume")).status_code == 200
            return await turn
        finally:
            await engine.close()

    result = run(main)
    prompts = served.client.prompts
    assert len(prompts) == 2
    partial = len(prompts[1]) - len(PROMPT)
    assert 0 < partial < 40
    assert tuple(prompts[1]) == (*PROMPT, *result.token_ids[:partial])
    assert len(result.token_ids) == len(result.logprobs) == 40
    assert result.token_versions == (0,) * 40
    tokens = [*PROMPT, *result.token_ids]
    expected = full_logprobs(tiny_policy(0), tokens, len(PROMPT))
    assert torch.allclose(torch.tensor(result.logprobs, dtype=torch.float64), expected, atol=2e-3)


# ------------------------------------------------------------------------------ refresh paths
def test_reload_path_sends_what_vllms_worker_accepts(serve: Serve, checkpoint_v1: Path) -> None:
    """``/collective_rpc reload_weights`` with a directory of safetensors (kwargs bound to
    ``GPUModelRunner.reload_weights``), then ``/update_weight_version``; resumed after."""
    served = serve()
    engine = client(served)

    async def main() -> bool:
        try:
            await engine.refresh(str(checkpoint_v1), 1)
            return await engine.is_paused()
        finally:
            await engine.close()

    assert run(main) is False
    assert served.client.worker_calls == [
        ("reload_weights", {"weights_path": str(checkpoint_v1), "is_checkpoint_format": True})
    ]
    published = read_weights(checkpoint_v1)
    served_now = served.client.model.state_dict()
    assert all(torch.equal(served_now[name], tensor) for name, tensor in published.items())


class NoOpSender:
    """The trainer side of the NCCL path (``arctic_swe.transfer.WeightSender``, async), minus
    the broadcast: vLLM's payload shapes only."""

    def __init__(self, weights: dict[str, torch.Tensor], init_info: Any = None) -> None:
        self.weights = weights
        self.calls: list[tuple[str, Any]] = []
        self._init_info = init_info

    async def init_info(self, engine_id: str) -> Any:
        self.calls.append(("init_info", engine_id))
        if self._init_info is not None:
            return self._init_info
        return {
            "master_address": "127.0.0.1",
            "master_port": 29617,
            "rank_offset": 1,
            "world_size": 2,
            "packed": True,
            "packed_buffer_size_bytes": 1 << 20,
            "packed_num_buffers": 2,
        }

    async def connect(self, engine_id: str) -> None:
        self.calls.append(("connect", engine_id))

    async def update_info(self, version: int) -> dict[str, Any]:
        self.calls.append(("update_info", version))
        names = sorted(self.weights)
        return {
            "names": names,
            "dtype_names": [str(self.weights[n].dtype).removeprefix("torch.") for n in names],
            "shapes": [list(self.weights[n].shape) for n in names],
        }

    async def send(self, engine_id: str, version: int) -> None:
        self.calls.append(("send", (engine_id, version)))


def test_nccl_path_payloads_are_accepted_by_vllms_dataclasses(
    serve: Serve, checkpoint_v1: Path
) -> None:
    """init once, then start -> update (names/dtypes/shapes, while the sender sends) -> finish
    with the label; vLLM's ``NCCLWeightTransferInitInfo`` / ``UpdateInfo`` take the payloads.
    The weights the broadcast would carry are handed over by the stand-in's receiver hook."""
    weights = read_weights(checkpoint_v1)
    received: list[Any] = []

    def receiver(init_info: Any, update_info: Any) -> dict[str, torch.Tensor]:
        received.append((init_info, update_info))
        return weights

    served = serve(receiver=receiver)
    sender = NoOpSender(weights)
    engine = client(served, weight_transfer="nccl", weight_sender=sender)

    async def main() -> tuple[int, Any]:
        try:
            await engine.refresh("unused-by-nccl", 1)
            await engine.refresh("unused-by-nccl", 2)
            version = await engine.weight_version()
            return version, await engine.generate(GenerateRequest(0, PROMPT, 4, seed=2))
        finally:
            await engine.close()

    version, result = run(main)
    assert version == 2
    assert result.token_versions == (2,) * 4
    methods = [method for method, _ in served.client.worker_calls]
    assert methods == ["init_weight_transfer_engine"] + [
        "start_weight_update", "update_weights", "finish_weight_update"
    ] * 2  # fmt: skip
    init_info, update_info = received[0]
    assert type(init_info).__name__ == "NCCLWeightTransferInitInfo"
    assert (init_info.rank_offset, init_info.world_size, init_info.packed) == (1, 2, True)
    assert type(update_info).__name__ == "NCCLWeightTransferUpdateInfo"
    assert update_info.names == sorted(weights)
    assert ("connect", "vllm-0") in sender.calls
    assert [c for c in sender.calls if c[0] == "send"] == [
        ("send", ("vllm-0", 1)),
        ("send", ("vllm-0", 2)),
    ]


def test_nccl_path_broadcast_through_the_transfer_package(
    serve: Serve, checkpoint_v1: Path, tmp_path: Path
) -> None:
    """The whole NCCL path with the bytes moving: the project's ``LocalWeightSender`` (rank 0)
    broadcasts into the engine's group while vLLM's ``/update_weights`` runs; the stand-in's
    worker receives through ``EngineReceiver`` (gloo in place of NCCL) and serves the result."""
    transfer = pytest.importorskip("arctic_swe.transfer")
    published = {
        1: read_weights(checkpoint_v1),
        2: read_weights(write_checkpoint(tmp_path / "v2", seed=2)),
    }
    sender = transfer.LocalWeightSender(lambda v: sorted(published[v].items()), timeout_s=60)
    receiver = transfer.EngineReceiver(timeout_s=60)
    served = serve(transport=receiver)
    engine = client(served, weight_transfer="nccl", weight_sender=sender)

    async def main() -> list[Any]:
        seen: list[Any] = []
        try:
            for version in (1, 2):
                await engine.refresh("unused-by-nccl", version)
                served_now = {k: v.clone() for k, v in served.client.model.state_dict().items()}
                turn = await engine.generate(GenerateRequest(0, PROMPT, 6, seed=5))
                seen.append((served_now, turn))
            return seen
        finally:
            await engine.close()
            sender.close()
            receiver.close()

    for version, (served_now, turn) in zip((1, 2), run(main), strict=True):
        assert all(torch.equal(served_now[n], t) for n, t in published[version].items())
        assert turn.token_versions == (version,) * 6
        tokens = [*PROMPT, *turn.token_ids]
        expected = full_logprobs(tiny_policy(version), tokens, len(PROMPT))
        assert torch.allclose(torch.tensor(turn.logprobs, dtype=torch.float64), expected, atol=2e-3)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad", ["missing-dir", "a-file", "empty-dir"])
def test_bad_weights_path_is_a_500_and_the_engine_is_unavailable(
    serve: Serve, tmp_path: Path, checkpoint_v1: Path, bad: str
) -> None:
    """vLLM answers a failed ``reload_weights`` with HTTP 500 (the worker's error crosses the
    engine-core boundary as a plain Exception): the client raises EngineUnavailableError
    naming the engine and the route, and still resumes the engine on its old label."""
    path = {
        "missing-dir": tmp_path / "nowhere",
        "a-file": checkpoint_v1 / "model.safetensors",
        "empty-dir": tmp_path,
    }[bad]
    served = serve()
    engine = client(served)

    async def main() -> tuple[BaseException, bool, int]:
        try:
            with pytest.raises(EngineUnavailableError) as caught:
                await engine.refresh(str(path), 1)
            return caught.value, await engine.is_paused(), await engine.weight_version()
        finally:
            await engine.close()

    error, paused, version = run(main)
    assert "vllm-0" in str(error)
    assert "/collective_rpc" in str(error)
    assert "HTTP 500" in str(error)
    assert (paused, version, served.client.label) == (False, 0, "default")


def test_init_info_errors_map_to_statuses(serve: Serve) -> None:
    """A dict vLLM's ``NCCLWeightTransferInitInfo`` refuses (its ValueError inside the worker)
    is a 500; a body that is not a dict is vLLM's validation 400."""
    served = serve()

    async def post(body: dict[str, Any]) -> httpx.Response:
        # One connection each: after a 500 from vLLM's catch-all handler the server closes
        # the connection (Starlette re-raises, uvicorn drops the transport).
        async with httpx.AsyncClient(base_url=served.url) as http:
            return await http.post("/init_weight_transfer_engine", json=body)

    async def main() -> tuple[httpx.Response, httpx.Response]:
        wrong = {"init_info": {"master_address": "127.0.0.1", "master_port": 1}}
        return await post(wrong), await post({"init_info": [1, 2]})

    wrong, not_dict = run(main)
    assert wrong.status_code == 500
    assert "Invalid init_info" in wrong.json()["error"]["message"]
    assert not_dict.status_code == 400
    assert not_dict.json()["error"]["type"] == "Bad Request"


def test_malformed_init_info_through_the_client(serve: Serve) -> None:
    """Through ``HttpEngine``: a refused init dict -> EngineUnavailableError; a non-dict ->
    RefreshError; both name the engine and the route; the engine is never left paused."""
    served = serve()
    missing_rank = {"master_address": "127.0.0.1", "master_port": 1, "world_size": 2}

    async def attempt(init_info: Any) -> BaseException:
        engine = client(served, weight_transfer="nccl", weight_sender=NoOpSender({}, init_info))
        try:
            with pytest.raises((EngineUnavailableError, RefreshError)) as caught:
                await engine.refresh("unused", 1)
            assert not await engine.is_paused()
            return caught.value
        finally:
            await engine.close()

    async def main() -> tuple[BaseException, BaseException]:
        return await attempt(missing_rank), await attempt(["not", "a", "dict"])

    refused, malformed = run(main)
    assert isinstance(refused, EngineUnavailableError)
    assert isinstance(malformed, RefreshError)
    for error in (refused, malformed):
        assert "vllm-0" in str(error)
        assert "/init_weight_transfer_engine" in str(error)


def test_engine_side_runtime_error_is_500_then_unavailable(serve: Serve) -> None:
    """The worker's RuntimeError (here: update before start, as vLLM's worker raises it) is a
    500 from vLLM's handlers; through the client an injected one is EngineUnavailableError."""
    served = serve()

    async def raw() -> httpx.Response:
        async with httpx.AsyncClient(base_url=served.url) as http:
            body: dict[str, Any] = {"update_info": {"names": [], "dtype_names": [], "shapes": []}}
            return await http.post("/update_weights", json=body)

    out_of_order = run(raw)
    assert out_of_order.status_code == 500
    assert out_of_order.json()["error"]["type"] == "InternalServerError"

    served.client.failures["reload_weights"] = RuntimeError("CUDA error: an illegal access")
    engine = client(served)

    async def main() -> BaseException:
        try:
            with pytest.raises(EngineUnavailableError) as caught:
                await engine.refresh("/published/v1", 1)
            return caught.value
        finally:
            await engine.close()

    error = run(main)
    assert "vllm-0" in str(error)
    assert "/collective_rpc" in str(error)


def test_router_keeps_going_on_the_engine_that_refreshes(serve: Serve, checkpoint_v1: Path) -> None:
    """Two engines; one answers 500 to every refresh. The router's refresh marks that one
    down and the run goes on, at the new version, on the other."""
    good, bad = serve("vllm-0"), serve("vllm-1")
    bad.client.failures["reload_weights"] = RuntimeError("worker failed")
    engines = [client(good), client(bad)]

    async def main() -> tuple[Any, Any, Any]:
        try:
            router = Router(engines)
            report = await router.refresh(str(checkpoint_v1), 1, mode=RefreshMode.INFLIGHT)
            async with router.lease("g0", 1) as lease:
                result = await lease.generate(GenerateRequest(0, PROMPT, 6, seed=4))
                placed = lease.engine_id
            return report, router.snapshot(), (placed, result)
        finally:
            for engine in engines:
                await engine.close()

    report, snapshot, (placed, result) = run(main)
    assert report.refreshed == ("vllm-0",)
    assert report.failed == ("vllm-1",)
    states = {e.engine_id: e.state for e in snapshot.engines}
    assert states == {"vllm-0": EngineState.UP, "vllm-1": EngineState.DOWN}
    assert placed == "vllm-0"
    assert result.token_versions == (1,) * 6


# ------------------------------------------------------------------------------ sampling
def test_completion_fields_map_to_the_neutral_sampling_params(serve: Serve) -> None:
    """Every field the client sends is one vLLM's ``CompletionRequest`` declares (none ignored
    as an extra), and ``to_sampling_params`` with ``--generation-config vllm``'s empty defaults
    gives the sampling the trainer assumes: temperature 1, top_p 1, top_k off, min_p 0, no
    penalties, the sampled token's raw log-prob (logprobs=0)."""
    served = serve()
    engine = client(served)

    async def main() -> None:
        try:
            await engine.generate(GenerateRequest(0, PROMPT, 5, seed=11))
        finally:
            await engine.close()

    run(main)
    (body,) = served.client.completion_bodies
    assert set(body) <= set(CompletionRequest.model_fields), set(body) - set(
        CompletionRequest.model_fields
    )
    assert {*NEUTRAL, "top_k", "logprobs"} <= set(body)  # explicit, not server defaults
    (params,) = served.client.sampling_params
    for name, value in NEUTRAL.items():
        assert getattr(params, name) == value, name
    assert params.top_k in (0, -1)  # vLLM's "off"
    assert params.logprobs == 0
    assert params.max_tokens == 5
    assert params.seed == 11
    assert params.n == 1
