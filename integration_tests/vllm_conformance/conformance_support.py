"""Helpers shared by the vLLM-conformance fixtures and tests: the tiny policy, its checkpoint
directories, the handle of one served stand-in engine, and the CPU stand-ins that let vLLM's
NCCL weight-transfer code run over our gloo group (Arctic-SWE §3.3).

vLLM itself is imported only inside the functions that patch it, so this module imports
wherever torch and arctic-swe do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from arctic_swe.model import build_policy, policy_config, save_policy

if TYPE_CHECKING:
    import pytest

    from arctic_swe.transfer import GlooCommunicator

VOCAB = 96


def tiny_policy(seed: int = 0) -> Any:
    """The engine tests' tiny hybrid policy (3 Gated DeltaNet + 1 attention layer), its final
    norm gain raised so the next-token distribution is far from flat."""
    model = build_policy(policy_config(VOCAB), seed)
    with torch.no_grad():
        model.model.norm.weight.fill_(4.0)
    return model


def write_checkpoint(path: Path, seed: int) -> Path:
    """A Hugging Face checkpoint directory (``config.json`` + ``model.safetensors``) of a tiny
    policy: what ``collective_rpc("reload_weights")`` is pointed at."""
    return save_policy(tiny_policy(seed), path)


class Served:
    """One stand-in engine behind vLLM's routers on 127.0.0.1."""

    def __init__(self, client: Any, server: Any) -> None:
        self.client = client  # vllm_stand_in.StandInEngineClient
        self.server = server  # vllm_stand_in.LoopbackServer
        self.url: str = server.url


class StandInCommunicator:
    """vLLM's ``PyNcclCommunicator`` call shape (``broadcast(tensor, src, stream)``,
    ``device``, ``disabled``, ``destroy()``), carried by our gloo group on the CPU.

    ``sizes`` records each broadcast's byte count, so a test can compare the chunks two
    senders cut; ``destroyed`` tells whether the owner let the group go.
    """

    def __init__(self, group: GlooCommunicator, device: str = "cpu") -> None:
        self.group = group
        self.device = torch.device(device)
        self.disabled = False
        self.destroyed = False
        self.sizes: list[int] = []

    def broadcast(self, tensor: torch.Tensor, src: int, stream: object = None) -> None:
        self.sizes.append(tensor.numel() * tensor.element_size())
        self.group.broadcast(tensor, src=src)

    def destroy(self) -> None:
        self.destroyed = True
        self.group.close()


class _NoStream:
    def synchronize(self) -> None: ...

    def wait_event(self, event: object) -> None: ...


class _NoEvent:
    def record(self, stream: object = None) -> None: ...


class _NullContext:
    def __enter__(self) -> None: ...

    def __exit__(self, *exc: object) -> None: ...


def patch_cpu_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make vLLM's CUDA-stream bookkeeping no-ops so its transfer code runs on the CPU.

    Patched, and why (no GPU here; the gloo broadcasts themselves are synchronous):
    - ``packed_tensor._get_streams``: builds ``torch.cuda.Stream`` objects per buffer slot.
    - ``torch.cuda.stream``: the context manager that makes a slot's stream current.
    - ``torch.accelerator.current_device_index`` / ``current_stream``: read the CUDA device.
    - ``torch.cuda.current_stream``: the stream the unpacked paths hand to ``broadcast``.
    - ``torch.Event``: the consumer's per-chunk ready event.
    - ``torch.Tensor.record_stream``: the consumer pins receive buffers to CUDA streams.
    """
    # Imported here so that this module stays importable without vLLM.
    from vllm.distributed.weight_transfer import (  # type: ignore[import-not-found, unused-ignore]
        packed_tensor,
    )

    monkeypatch.setattr(packed_tensor, "_get_streams", lambda _dev, n: (_NoStream(),) * n)
    monkeypatch.setattr(torch.cuda, "stream", lambda _stream: _NullContext())
    monkeypatch.setattr(torch.accelerator, "current_device_index", lambda: 0)
    monkeypatch.setattr(torch.accelerator, "current_stream", lambda *_: _NoStream())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *_: _NoStream())
    monkeypatch.setattr(torch, "Event", _NoEvent)
    monkeypatch.setattr(torch.Tensor, "record_stream", lambda self, stream: None)


def vllm_packed_consume(
    metadata: Iterable[tuple[str, tuple[list[int], torch.dtype]]],
    group: StandInCommunicator,
    buffer_size_bytes: int,
    load: Callable[[list[tuple[str, torch.Tensor]]], Any],
) -> None:
    """Receive one packed round from rank 0 with vLLM's own ``packed_nccl_broadcast_consumer``,
    unchanged: two buffers on the CPU, each unpacked batch of (name, tensor) handed to ``load``.
    ``metadata`` is (name, (shape, dtype)) per tensor, in send order."""
    # Imported here so that this module stays importable without vLLM.
    from vllm.distributed.weight_transfer import (  # type: ignore[import-not-found, unused-ignore]
        packed_tensor,
    )

    packed_tensor.packed_nccl_broadcast_consumer(
        iterator=iter(metadata),
        group=group,
        src=0,
        post_unpack_func=load,
        buffer_size_bytes=buffer_size_bytes,
        num_buffers=2,
        device="cpu",
    )


def in_thread(fn: Callable[[], Any], timeout_s: float) -> Callable[[], Any]:
    """Run ``fn`` in a daemon thread (the other rank of a two-rank exchange); return a
    ``join()`` that waits up to ``timeout_s``, then gives ``fn``'s value or re-raises its error.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # handed to join(), which re-raises it in the test
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join() -> Any:
        thread.join(timeout_s)
        assert not thread.is_alive(), f"the other rank did not finish within {timeout_s}s"
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return join
