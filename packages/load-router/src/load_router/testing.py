"""The property-testing kit: the router contract as hypothesis state machines and strategies.

Run the contract against your own scheduler (anything implementing :class:`Scheduler`, e.g. a
:class:`~load_router.Router` with your own :class:`~load_router.PlacementPolicy`)::

    from load_router import Router
    from load_router.testing import refresh_contract, router_contract

    TestMyScheduler = router_contract(lambda engines: Router(engines, policy=MyPolicy()),
                                      placement="work-conserving").TestCase
    TestMyRefresh = refresh_contract(lambda engines: Router(engines, policy=MyPolicy())).TestCase

Needs hypothesis: ``pip install 'load-router[testing]'``. ``import load_router`` never imports it.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401  (fail here, with the install hint, not deep inside)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without hypothesis
    raise ImportError(
        "load_router.testing needs hypothesis: pip install 'load-router[testing]'"
    ) from exc

from load_router._kit_common import MakeScheduler, RouterContractViolationError
from load_router._kit_engines import InstantEngine, SteppedEngine
from load_router._kit_refresh import RefreshContractMachine, refresh_contract
from load_router._kit_router import Placement, RouterContractMachine, router_contract
from load_router._kit_strategies import Workload, rollout_lengths, sim_configs, workloads
from load_router._scheduler import Scheduler, SchedulerLease

__all__ = [
    "InstantEngine",
    "MakeScheduler",
    "Placement",
    "RefreshContractMachine",
    "RouterContractMachine",
    "RouterContractViolationError",
    "Scheduler",
    "SchedulerLease",
    "SteppedEngine",
    "Workload",
    "refresh_contract",
    "rollout_lengths",
    "router_contract",
    "sim_configs",
    "workloads",
]
