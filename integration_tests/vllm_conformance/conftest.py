"""Fixtures for the vLLM-conformance tests: vLLM 0.33's own routers over a CPU stand-in engine
client on a real loopback HTTP server (see ``vllm_stand_in``; Arctic-SWE §3.3).

These tests need the ``arctic-swe[vllm]`` environment (``nox -s vllm_conformance``). In any
other environment this conftest imports nothing beyond the standard library and pytest, and
the test modules skip themselves (``pytest.importorskip("vllm")``).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
if importlib.util.find_spec("vllm") is not None and str(HERE) not in sys.path:
    # The helper modules sit next to this file; pytest's importlib mode does not put the
    # folder on sys.path, and they must only be importable where vLLM is installed.
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conformance_support import write_checkpoint

    return write_checkpoint(tmp_path_factory.mktemp("policy") / "tiny", seed=0)


@pytest.fixture
def serve(tiny_checkpoint: Path) -> Iterator[Callable[..., Any]]:
    """Factory: ``serve(engine_id="vllm-0", step_delay_s=0.0, **stand_in_kwargs)`` starts one
    stand-in engine behind vLLM's routers and returns its ``Served`` handle; every one started
    is stopped at teardown."""
    from conformance_support import Served, tiny_policy
    from vllm_stand_in import LoopbackServer, StandInEngineClient, build_app

    from arctic_swe.engine import EngineConfig, TorchEngine

    started: list[LoopbackServer] = []

    def start(engine_id: str = "vllm-0", step_delay_s: float = 0.0, **kwargs: Any) -> Served:
        model = tiny_policy(0)
        if step_delay_s:
            # A slower decode step, so a test can land a pause or a refresh mid-turn.
            model.lm_head.register_forward_pre_hook(lambda *_: time.sleep(step_delay_s))
        config = EngineConfig(engine_id=engine_id, capacity=4, max_seq_len=256, seed=7)
        engine = TorchEngine(model, config)
        client = StandInEngineClient(
            engine, model, model_name="arctic-swe", model_path=tiny_checkpoint, **kwargs
        )
        server = LoopbackServer(build_app(client), on_stop=engine.close).start()
        started.append(server)
        return Served(client, server)

    yield start
    for server in started:
        server.stop()
