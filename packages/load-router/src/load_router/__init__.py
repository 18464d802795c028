"""Least-loaded group placement, resident caps, policy-version bookkeeping and the weight-refresh protocol."""

from load_router._engine import Engine, GenerateRequest, GenerateResult, PlacementOnlyEngine
from load_router._errors import (
    DuplicateEngineError,
    EngineFailedError,
    GroupTooLargeError,
    InvalidArgumentError,
    InvalidCapError,
    InvalidGroupSizeError,
    LeaseClosedError,
    LeaseDrainedError,
    NoEngineAvailableError,
    NoEnginesError,
    RefreshInProgressError,
    RetryableError,
    RouterError,
    StaleVersionError,
    UnknownEngineError,
)
from load_router._lease import Lease, LeaseState
from load_router._policies import (
    LeastLoaded,
    PlacementIndex,
    PlacementPolicy,
    RoundRobin,
    SessionHash,
    stable_hash,
)
from load_router._router import (
    EngineSnapshot,
    EngineState,
    RefreshMode,
    RefreshReport,
    Router,
    RouterSnapshot,
)
from load_router._scheduler import Scheduler, SchedulerLease
from load_router._sim_config import SimConfig, SimResult, UpdateRecord
from load_router._simulate import simulate
from load_router._version import __version__
from load_router._versions import (
    GroupRecord,
    PolicyClock,
    Screened,
    TokenVersions,
    UpdateLagStats,
)

__all__ = [
    "DuplicateEngineError",
    "Engine",
    "EngineFailedError",
    "EngineSnapshot",
    "EngineState",
    "GenerateRequest",
    "GenerateResult",
    "GroupRecord",
    "GroupTooLargeError",
    "InvalidArgumentError",
    "InvalidCapError",
    "InvalidGroupSizeError",
    "Lease",
    "LeaseClosedError",
    "LeaseDrainedError",
    "LeaseState",
    "LeastLoaded",
    "NoEngineAvailableError",
    "NoEnginesError",
    "PlacementIndex",
    "PlacementOnlyEngine",
    "PlacementPolicy",
    "PolicyClock",
    "RefreshInProgressError",
    "RefreshMode",
    "RefreshReport",
    "RetryableError",
    "RoundRobin",
    "Router",
    "RouterError",
    "RouterSnapshot",
    "Scheduler",
    "SchedulerLease",
    "Screened",
    "SessionHash",
    "SimConfig",
    "SimResult",
    "StaleVersionError",
    "TokenVersions",
    "UnknownEngineError",
    "UpdateLagStats",
    "UpdateRecord",
    "__version__",
    "simulate",
    "stable_hash",
]
