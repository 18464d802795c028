"""Tests for the orchestrator side of the trainer seam (no trainer process needed): the
``trainer.kind``/``url`` config fields, :class:`InProcessTrainer`, and :class:`RemoteTrainer`
against a port nobody listens on and a server that accepts but never answers."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from safetensors.torch import load_file
from transformers import Qwen3_5ForCausalLM

from arctic_swe.config import (
    RunConfig,
    RunConfigError,
    TrainerSection,
    apply_overrides,
    load_toml,
    to_toml,
)
from arctic_swe.distributed import (
    InProcessTrainer,
    RemoteTrainer,
    TrainerHandle,
    TrainerUnavailableError,
)
from arctic_swe.trainer import Trainer

from .conftest import BATCH


# ---------------------------------------------------------------- config
def test_a_remote_trainer_round_trips_through_toml(tmp_path: Path) -> None:
    config = apply_overrides(
        RunConfig(),
        [
            "engine.kind=http",
            'engine.urls=["http://127.0.0.1:9"]',
            "trainer.kind=remote",
            'trainer.url="http://127.0.0.1:8"',
            "trainer.timeout_s=30",
        ],
    )
    path = tmp_path / "loop.toml"
    path.write_text(to_toml(config))
    assert load_toml(path) == config
    assert (config.trainer.kind, config.trainer.url) == ("remote", "http://127.0.0.1:8")


@pytest.mark.parametrize(
    ("assignments", "key", "message"),
    [
        (["trainer.kind=cloud"], "trainer.kind", "must be one of"),
        (["trainer.kind=remote"], "trainer.url", "http(s) URL"),
        (
            ["trainer.kind=remote", 'trainer.url="http://h:1"'],
            "trainer.kind",
            'engine.kind = "http"',
        ),
        (['trainer.url="http://h:1"'], "trainer.url", 'needs trainer.kind = "remote"'),
        (["trainer.timeout_s=0"], "trainer.timeout_s", "> 0"),
    ],
)
def test_bad_trainer_sections_name_the_key(assignments: list[str], key: str, message: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        apply_overrides(RunConfig(), assignments)
    assert caught.value.key == key
    assert message in str(caught.value)


# ---------------------------------------------------------------- in process
def test_the_in_process_adapter_steps_off_the_event_loop_and_writes_the_weights(
    policy: Qwen3_5ForCausalLM, tmp_path: Path
) -> None:
    trainer = InProcessTrainer(Trainer(policy, attrs.evolve(TrainerSection(), lr=1e-3)))
    assert isinstance(trainer, TrainerHandle)

    async def run() -> tuple[float, float, list[float], Path]:
        ticks: list[float] = []

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.002)

        ticker = asyncio.create_task(tick())
        began = time.monotonic()
        await trainer.step(BATCH)
        ended = time.monotonic()
        ticker.cancel()
        return began, ended, ticks, await trainer.weights_file(1, tmp_path / "weights")

    began, ended, ticks, path = asyncio.run(run())
    assert trainer.steps == 1
    assert trainer.world_size == 1
    assert sum(began < t < ended for t in ticks) >= 3
    weights = load_file(str(path / "model.safetensors"))
    assert path.name == "policy-v1"
    assert "lm_head.weight" not in weights  # the tied alias, as Trainer.weights() leaves out
    assert weights.keys() == trainer.trainer.weights().keys()


# ---------------------------------------------------------------- remote, failing
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A socket that accepts connections and never answers (a wedged trainer)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_an_unreachable_trainer_is_a_typed_error_at_once() -> None:
    async def connect() -> None:
        trainer = RemoteTrainer(f"http://127.0.0.1:{_free_port()}", timeout_s=30)
        try:
            await trainer.connect()
        finally:
            await trainer.aclose()

    began = time.monotonic()
    with pytest.raises(TrainerUnavailableError, match="unreachable"):
        asyncio.run(connect())
    assert time.monotonic() - began < 10


def test_a_trainer_that_never_answers_times_out_instead_of_hanging(silent_server: str) -> None:
    async def step() -> None:
        trainer = RemoteTrainer(silent_server, timeout_s=1.0)
        try:
            await trainer.step(BATCH)
        finally:
            await trainer.aclose()

    began = time.monotonic()
    with pytest.raises(TrainerUnavailableError, match="did not answer within 1 s"):
        asyncio.run(step())
    assert time.monotonic() - began < 10
