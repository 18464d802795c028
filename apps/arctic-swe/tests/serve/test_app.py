"""The engine routes over real HTTP against a real ``arctic-swe serve`` process: completions
are exactly the in-process engine's, bad input is a 400 with an OpenAI-style body and the
engine keeps serving, pause modes behave as vLLM's, weight updates with a bad file are refused
with the old weights kept, metrics count."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from arctic_swe.engine import EngineConfig, Generation, TorchEngine
from arctic_swe.engine._wire import parse_prometheus
from arctic_swe.model import load_policy
from arctic_swe.weights import write_safetensors
from load_router import GenerateRequest

from .conftest import VOCAB, ServerProcess, perturbed_state, tiny_policy

TIMEOUT = httpx.Timeout(60.0, connect=5.0)


def completion(prompt: list[int], max_tokens: int, seed: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": "arctic-swe",
        "prompt": prompt,
        "max_tokens": max_tokens,
        "seed": seed,
        "logprobs": 0,
        "return_token_ids": True,
        "return_weight_versions": True,
        **extra,
    }


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def in_process(checkpoint: Path, jobs: list[tuple[list[int], int, int]]) -> list[Generation]:
    """The same turns from an in-process engine built like the server's (one at a time, one
    thread, as the server runs them in the test). The thread count is set before the engine is
    built, as ``arctic-swe serve`` sets it before loading: what the engine prepares at
    construction must see the same thread count, or the two differ in the last bits."""

    async def run(engine: TorchEngine) -> list[Generation]:
        turns = []
        for prompt, max_new, seed in jobs:
            request = GenerateRequest(rollout_index=0, prompt_ids=prompt, max_new_tokens=max_new)
            turns.append(await engine.generate_detailed(request, seed=seed))
        await engine.close()
        return turns

    with torch_threads(1):
        engine = TorchEngine(load_policy(checkpoint), EngineConfig(capacity=4, max_seq_len=64))
        return asyncio.run(run(engine))


def post(server: ServerProcess, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(server.url + path, timeout=TIMEOUT, **kwargs)


JOBS = [([3, 14, 15, 92, 65], 12, 1), ([35, 89, 79], 20, 2), ([7] * 30, 9, 3)]


def test_completions_are_exactly_the_in_process_engines(
    server: ServerProcess, tiny_checkpoint: Path
) -> None:
    answers = [post(server, "/v1/completions", json=completion(*job)) for job in JOBS]
    reference = in_process(tiny_checkpoint, JOBS)
    for answer, turn, (prompt, max_new, _) in zip(answers, reference, JOBS, strict=True):
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["object"] == "text_completion"
        choice = body["choices"][0]
        assert choice["token_ids"] == list(turn.token_ids)
        assert choice["logprobs"]["token_logprobs"] == list(turn.logprobs)  # bit for bit
        # vLLM's label for weights nobody has labelled yet
        assert choice["weight_versions"] == [{"version": "default", "start": 0, "end": max_new}]
        assert choice["finish_reason"] == "length"
        assert body["usage"] == {
            "prompt_tokens": len(prompt),
            "completion_tokens": max_new,
            "total_tokens": len(prompt) + max_new,
        }


def test_a_batch_of_one_prompt_and_stop_tokens_follow_vllm(server: ServerProcess) -> None:
    plain = post(server, "/v1/completions", json=completion([5, 6, 7], 16, 11)).json()
    tokens = plain["choices"][0]["token_ids"]
    batched = post(server, "/v1/completions", json=completion([[5, 6, 7]], 16, 11)).json()
    assert batched["choices"][0]["token_ids"] == tokens
    stop = tokens[3]
    first = tokens.index(stop)
    stopped = post(
        server, "/v1/completions", json=completion([5, 6, 7], 16, 11, stop_token_ids=[stop])
    ).json()["choices"][0]
    assert stopped["token_ids"] == tokens[: first + 1]  # the stop token is emitted, as in vLLM
    assert stopped["finish_reason"] == "stop"
    assert stopped["stop_reason"] == stop


BAD_REQUESTS = [
    (completion([1, 2, VOCAB], 4, 0), "outside the vocabulary"),
    (completion([-1, 2], 4, 0), "outside the vocabulary"),
    (completion(list(range(64)), 4, 0), "context"),
    (completion([], 4, 0), "prompt"),
    (completion([[1, 2], [3, 4]], 4, 0), "one prompt"),
    (completion([1, 2], 0, 0), "max_tokens"),
    (completion([1, 2], 4, 0, temperature=0.5), "temperature"),
    (completion([1, 2], 4, 0, stream=True), "stream"),
    (completion([1, 2], 4, 0, logprobs=5), "logprobs"),
    (completion([1, 2], 4, 0, stop_token_ids=[VOCAB + 3]), "stop_token_ids"),
    (completion(["a", 2], 4, 0), "prompt"),
    ({"max_tokens": 3}, "prompt"),
]


@pytest.mark.parametrize(("body", "words"), BAD_REQUESTS)
def test_bad_requests_are_400_with_an_openai_error_and_the_engine_keeps_serving(
    server: ServerProcess, body: dict[str, Any], words: str
) -> None:
    answer = post(server, "/v1/completions", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert words in error["message"], error
    assert error["code"] == 400
    assert error["type"] == "BadRequestError"
    again = post(server, "/v1/completions", json=completion([1, 2, 3], 3, 5))
    assert again.status_code == 200
    assert len(again.json()["choices"][0]["token_ids"]) == 3


@pytest.mark.parametrize("raw", [b"{bad json", b"[1, 2]", b"\xff\xfe", b""])
def test_malformed_json_is_400(server: ServerProcess, raw: bytes) -> None:
    answer = post(server, "/v1/completions", content=raw)
    assert answer.status_code == 400, answer.text
    assert "JSON" in answer.json()["error"]["message"]


def test_models_health_and_metrics(server: ServerProcess) -> None:
    models = httpx.get(server.url + "/v1/models", timeout=TIMEOUT).json()
    assert models["data"][0]["id"] == "arctic-swe"
    assert models["data"][0]["max_model_len"] == 64
    assert httpx.get(server.url + "/health", timeout=TIMEOUT).status_code == 200
    before = _metrics(server)
    post(server, "/v1/completions", json=completion([4, 4, 4], 7, 1))
    post(server, "/v1/completions", json=completion([4, 4, VOCAB], 7, 1))
    after = _metrics(server)
    assert after["arctic_engine_requests_total"] == before["arctic_engine_requests_total"] + 2
    errors = "arctic_engine_request_errors_total"
    assert after[errors] == before[errors] + 1
    generated = "arctic_engine_generated_tokens_total"
    assert after[generated] == before[generated] + 7
    assert after["arctic_engine_requests_in_flight"] == 0
    assert after['arctic_engine_info{engine_id="engine-0"}'] == 1


def _metrics(server: ServerProcess) -> dict[str, float]:
    return parse_prometheus(httpx.get(server.url + "/metrics", timeout=TIMEOUT).text)


def test_keep_mode_pause_holds_requests_until_resume(server: ServerProcess) -> None:
    assert post(server, "/pause?mode=keep&clear_cache=true").json() == {"status": "paused"}
    try:
        assert httpx.get(server.url + "/is_paused", timeout=TIMEOUT).json() == {"is_paused": True}

        async def held() -> tuple[bool, httpx.Response]:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                call = asyncio.ensure_future(
                    client.post(server.url + "/v1/completions", json=completion([1, 2], 3, 1))
                )
                await asyncio.sleep(1.0)
                waiting = not call.done()  # accepted and queued, not sampled
                await client.post(server.url + "/resume")
                return waiting, await call

        waiting, answer = asyncio.run(held())
    finally:
        post(server, "/resume")
    assert waiting
    assert answer.status_code == 200
    assert len(answer.json()["choices"][0]["token_ids"]) == 3
    assert httpx.get(server.url + "/is_paused", timeout=TIMEOUT).json() == {"is_paused": False}


def test_abort_mode_pause_answers_running_requests_with_their_partial_output(
    server: ServerProcess,
) -> None:
    """vLLM 0.33: ``/pause?mode=abort`` ends in-flight requests at once, each a 200 with the
    tokens it has and ``finish_reason: "abort"``; new requests are refused until /resume."""
    seeded = completion([1], 60, 7)

    async def scenario() -> tuple[httpx.Response, httpx.Response, float]:
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            url = server.url + "/v1/completions"
            before = _metrics(server)
            running = asyncio.ensure_future(client.post(url, json=seeded))
            await _until_generated(
                client, server, before["arctic_engine_generated_tokens_total"] + 3
            )
            await client.post(server.url + "/pause?mode=keep")  # frozen mid-turn
            await client.post(server.url + "/pause?mode=abort")
            refused = await client.post(url, json=completion([1], 3, 1))
            aborted = _metrics(server)["arctic_engine_requests_aborted_total"]
            return await running, refused, aborted - before["arctic_engine_requests_aborted_total"]

    try:
        partial, refused, aborted = asyncio.run(scenario())
    finally:
        post(server, "/resume")
    assert partial.status_code == 200, partial.text
    choice = partial.json()["choices"][0]
    assert choice["finish_reason"] == "abort"
    tokens = choice["token_ids"]
    assert 3 <= len(tokens) < 60
    assert choice["weight_versions"] == [{"version": "default", "start": 0, "end": len(tokens)}]
    assert partial.json()["usage"]["completion_tokens"] == len(tokens)
    assert aborted == 1
    assert refused.status_code == 503
    assert "paused" in refused.json()["error"]["message"]
    # The partial turn is exactly the start of the same seeded turn left to run.
    whole = post(server, "/v1/completions", json=seeded).json()["choices"][0]
    assert whole["token_ids"][: len(tokens)] == tokens
    want = whole["logprobs"]["token_logprobs"][: len(tokens)]
    got = choice["logprobs"]["token_logprobs"]
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-5


async def _until_generated(client: httpx.AsyncClient, server: ServerProcess, total: float) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = (await client.get(server.url + "/metrics")).text
        if parse_prometheus(text)["arctic_engine_generated_tokens_total"] >= total:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the request never generated")


def test_bad_pause_mode_is_400(server: ServerProcess) -> None:
    assert post(server, "/pause?mode=sometimes").status_code == 400
    assert post(server, "/pause?mode=keep&clear_cache=maybe").status_code == 400
    assert httpx.get(server.url + "/is_paused", timeout=TIMEOUT).json() == {"is_paused": False}


def _bad_dirs(tmp_path: Path) -> list[tuple[Path, str]]:
    good = perturbed_state(tiny_policy(), seed=3)
    name = "model.layers.0.mlp.up_proj.weight"
    wrong_shape = dict(good, **{name: good[name][:-1]})
    wrong_dtype = dict(good, **{name: good[name].to(torch.bfloat16)})
    missing = {k: v for k, v in good.items() if k != name}
    extra = dict(good, **{"model.layers.9.mlp.up_proj.weight": good[name]})
    dirs = []
    for label, state in [("shape", wrong_shape), ("dtype", wrong_dtype), ("missing", missing)]:
        dirs.append(
            (write_safetensors(state, tmp_path / label / "model.safetensors").parent, label)
        )
    extra_dir = write_safetensors(extra, tmp_path / "extra" / "model.safetensors").parent
    dirs.append((extra_dir, "not in the served"))
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "model.safetensors").write_bytes(b"\x00" * 64)
    dirs.append((tmp_path / "garbage", "cannot read"))
    (tmp_path / "empty").mkdir()
    dirs.append((tmp_path / "empty", "no *.safetensors"))
    dirs.append((tmp_path / "absent", "not found"))
    return dirs


def _reload(server: ServerProcess, path: Path | str, **extra: Any) -> httpx.Response:
    kwargs = {"weights_path": str(path), "is_checkpoint_format": True, **extra}
    return post(server, "/collective_rpc", json={"method": "reload_weights", "kwargs": kwargs})


def test_reloads_with_a_wrong_shape_dtype_or_name_set_are_refused_and_old_weights_kept(
    server: ServerProcess, tmp_path: Path
) -> None:
    before = post(server, "/v1/completions", json=completion([9, 9, 9], 8, 4)).json()
    label = httpx.get(server.url + "/weight_info", timeout=TIMEOUT).json()
    for path, words in _bad_dirs(tmp_path):
        post(server, "/pause?mode=keep&clear_cache=true")
        answer = _reload(server, path)
        assert answer.status_code == 400, answer.text
        assert words in answer.json()["error"]["message"]
        post(server, "/resume")
    assert httpx.get(server.url + "/weight_info", timeout=TIMEOUT).json() == label
    after = post(server, "/v1/completions", json=completion([9, 9, 9], 8, 4)).json()
    assert after["choices"] == before["choices"]


def test_weight_routes_out_of_order_or_malformed_are_400(server: ServerProcess) -> None:
    label = httpx.get(server.url + "/weight_info", timeout=TIMEOUT).json()
    not_initialised = post(server, "/start_weight_update")
    assert not_initialised.status_code == 400
    assert "init_weight_transfer_engine" in not_initialised.text
    assert post(server, "/update_weights", json={"update_info": {}}).status_code == 400
    assert post(server, "/update_weights", content=b"nope").status_code == 400
    assert post(server, "/finish_weight_update", json={"weight_version": "9"}).status_code == 400
    assert post(server, "/init_weight_transfer_engine", json={"init_info": 3}).status_code == 400
    other = post(server, "/collective_rpc", json={"method": "sleep", "kwargs": {}})
    assert other.status_code == 400
    assert "only reload_weights" in other.text
    assert _reload(server, "x", dtype="fp8").status_code == 400
    assert _reload(server, "x", is_checkpoint_format=False).status_code == 400
    assert post(server, "/update_weight_version", json={}).status_code == 400
    assert post(server, "/update_weight_version", json={"new_version": ""}).status_code == 400
    assert httpx.get(server.url + "/weight_info", timeout=TIMEOUT).json() == label


def test_a_label_set_without_new_weights_marks_later_tokens_only(server: ServerProcess) -> None:
    before = post(server, "/v1/completions", json=completion([4, 5], 6, 1)).json()
    answer = post(server, "/update_weight_version", json={"new_version": "17"})
    assert answer.json() == {"success": True, "new_version": "17"}
    assert httpx.get(server.url + "/weight_info", timeout=TIMEOUT).json() == {
        "weight_version": "17"
    }
    after = post(server, "/v1/completions", json=completion([4, 5], 6, 1)).json()
    assert after["choices"][0]["weight_versions"] == [{"version": "17", "start": 0, "end": 6}]
    # the weights did not change: the same seed samples the same tokens, bit for bit
    assert after["choices"][0]["token_ids"] == before["choices"][0]["token_ids"]
    assert after["choices"][0]["logprobs"] == before["choices"][0]["logprobs"]
