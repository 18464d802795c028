"""Tests for the remote side of the trainer seam (no trainer process needed): the
``trainer.kind``/``url`` config fields, and :class:`RemoteTrainer` against a port nobody
listens on and a server that accepts but never answers (the in-process handle:
``tests/trainer/test_handle.py``)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arctic_swe.config import (
    RunConfig,
    RunConfigError,
    apply_overrides,
    load_toml,
    to_toml,
)
from arctic_swe.distributed import RemoteTrainer, TrainerCheckpointError, TrainerUnavailableError
from arctic_swe.trainer import ResumeError, TrainerHandle

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
            await trainer.close()

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
            await trainer.close()

    began = time.monotonic()
    with pytest.raises(TrainerUnavailableError, match="did not answer within 1 s"):
        asyncio.run(step())
    assert time.monotonic() - began < 10


# ---------------------------------------------------------------- remote, as a handle
def test_the_remote_trainer_is_a_complete_handle_without_a_local_model(tmp_path: Path) -> None:
    """What the loop asks of any trainer, answered without a server: no local model, no
    layer audit, nothing to prune, the start version checked, and a resumed run's servers
    catch up from the checkpoint's consolidated export (a typed error when there is none)."""
    trainer = RemoteTrainer("http://127.0.0.1:9", timeout_s=1.0)
    assert isinstance(trainer, TrainerHandle)
    assert trainer.local_model() is None
    assert asyncio.run(trainer.layer_audit(BATCH[0], 16)) is None
    trainer.prune_published(tmp_path, tmp_path / "policy-v1")  # a no-op: rank 0 prunes
    trainer.check_start(0)
    with pytest.raises(
        ResumeError, match="holds policy version 0 but the run starts from version 3"
    ):
        trainer.check_start(3)
    with pytest.raises(TrainerCheckpointError, match="no consolidated weights"):
        trainer.current_weights()
    asyncio.run(trainer.close())
