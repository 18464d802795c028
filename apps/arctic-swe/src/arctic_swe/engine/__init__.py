"""The in-process torch inference engine: continuous batching over per-sequence hybrid caches,
full-vocabulary temperature-1 sampling, and cache-invalidating weight refreshes."""

from arctic_swe.engine._config import EngineConfig, FinishReason, Generation
from arctic_swe.engine._core import CoreCounters, RefreshStats
from arctic_swe.engine._engine import RunEngine, TorchEngine
from arctic_swe.engine._errors import (
    EngineClosedError,
    EngineError,
    EngineProtocolError,
    EngineStepFailedError,
    EngineUnavailableError,
    RefreshError,
    RequestError,
)
from arctic_swe.engine._forward import batched_forward
from arctic_swe.engine._http import HttpEngine, HttpEngineConfig
from arctic_swe.engine._pools import CachePools
from arctic_swe.engine._sampling import derive_seed, sample_tokens
from arctic_swe.engine._wire import NEUTRAL_SAMPLING, START_LABEL

__all__ = [
    "NEUTRAL_SAMPLING",
    "START_LABEL",
    "CachePools",
    "CoreCounters",
    "EngineClosedError",
    "EngineConfig",
    "EngineError",
    "EngineProtocolError",
    "EngineStepFailedError",
    "EngineUnavailableError",
    "FinishReason",
    "Generation",
    "HttpEngine",
    "HttpEngineConfig",
    "RefreshError",
    "RefreshStats",
    "RequestError",
    "RunEngine",
    "TorchEngine",
    "batched_forward",
    "derive_seed",
    "sample_tokens",
]
