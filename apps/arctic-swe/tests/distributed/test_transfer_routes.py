"""Rank 0's weight-transfer routes over HTTP (in process, ASGI) against a real engine-side
receiver on a gloo group: the broadcast weights arrive bit for bit, an older version comes
from its published directory, bad bodies are 400 and unknown versions 409 (Arctic-SWE §3.3)."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import torch
from fastapi import FastAPI

from arctic_swe.distributed._transfer_routes import add_transfer_routes
from arctic_swe.transfer import EngineReceiver
from arctic_swe.weights import publish


def _weights(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "model.embed_tokens.weight": torch.randn(6, 4, generator=generator),
        "model.norm.weight": torch.randn(4, generator=generator).to(torch.bfloat16),
    }


def _worker(run_dir: Path, latest: tuple[int, dict[str, torch.Tensor]] | None) -> Any:
    return SimpleNamespace(latest_weights=latest, options=SimpleNamespace(run_dir=run_dir))


async def _refresh(client: httpx.AsyncClient, engine: str, version: int) -> dict[str, torch.Tensor]:
    """The engine's side in a thread, the trainer's routes on the loop, as HttpEngine runs them."""
    init = (await client.post("/weight_transfer/init_info", json={"engine_id": engine})).json()
    receiver = EngineReceiver(timeout_s=30)
    joined = threading.Thread(target=receiver.join, args=(init,))
    joined.start()
    assert (await client.post("/weight_transfer/connect", json={"engine_id": engine})).json() == {
        "status": "ok"
    }
    joined.join()
    update = (await client.post("/weight_transfer/update_info", json={"version": version})).json()
    received: dict[str, torch.Tensor] = {}
    task = asyncio.create_task(asyncio.to_thread(lambda: received.update(receiver.receive(update))))
    sent = await client.post(
        "/weight_transfer/send", json={"engine_id": engine, "version": version}
    )
    await task
    receiver.close()
    assert sent.status_code == 200, sent.text
    return received


def test_the_newest_and_a_published_older_version_arrive_bit_for_bit(tmp_path: Path) -> None:
    newest, older = _weights(1), _weights(2)
    publish(older, tmp_path / "weights", 3)
    app = FastAPI()
    sender = add_transfer_routes(app, _worker(tmp_path, (4, newest)), host="127.0.0.1")

    async def body() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trainer") as client:
            return await _refresh(client, "http-0", 4), await _refresh(client, "http-1", 3)

    try:
        got_newest, got_older = asyncio.run(body())
    finally:
        sender.close()
    for got, want in ((got_newest, newest), (got_older, older)):
        assert got.keys() == want.keys()
        assert all(torch.equal(got[k], want[k]) and got[k].dtype == want[k].dtype for k in want)


def test_bad_bodies_are_400_and_a_version_the_trainer_lacks_is_409(tmp_path: Path) -> None:
    app = FastAPI()
    sender = add_transfer_routes(app, _worker(tmp_path, None), host="127.0.0.1")

    async def body() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trainer") as client:
            return [
                (await client.post("/weight_transfer/init_info", content=b"{")).status_code,
                (await client.post("/weight_transfer/init_info", json={"engine": "x"})).status_code,
                (await client.post("/weight_transfer/update_info", json={"version": "3"})).status_code,
                (await client.post("/weight_transfer/update_info", json={"version": True})).status_code,
                (await client.post("/weight_transfer/update_info", json={"version": 9})).status_code,
                (await client.post("/weight_transfer/connect", json={"engine_id": "never"})).status_code,
                (await client.post("/weight_transfer/send", json={"engine_id": "x", "version": 1})).status_code,
            ]  # fmt: skip

    try:
        assert asyncio.run(body()) == [400, 400, 400, 400, 409, 409, 409]
    finally:
        sender.close()


def test_a_cuda_trainer_without_vllm_refuses_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On GPU rank 0 must speak NCCL through vLLM's own trainer-side code; without vLLM in its
    environment every transfer route says so (409) instead of falling back to gloo."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is importable here: the refusing sender is not used")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    app = FastAPI()
    sender = add_transfer_routes(app, _worker(tmp_path, None), host="127.0.0.1")

    async def body() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trainer") as client:
            return await client.post("/weight_transfer/init_info", json={"engine_id": "e"})

    answer = asyncio.run(body())
    sender.close()
    assert answer.status_code == 409
    assert "vllm" in answer.json()["error"]["message"].lower()
