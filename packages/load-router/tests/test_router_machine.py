"""Stateful test: the Router against the public router contract (``load_router.testing``).

The contract machine follows a reference model (engines with cap, registration order and state,
the FIFO of waiting callers, the state and token versions of every lease) and, with
``placement="least-loaded"``, checks each placement is the least-loaded fitting engine with
registration-order ties; see ``load_router/_kit_router.py`` for every clause.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import settings

from load_router import Engine, RoundRobin, Router, SessionHash
from load_router.testing import router_contract


def least_loaded_router(engines: Sequence[Engine]) -> Router:
    return Router(engines)


TestRouterContract = router_contract(least_loaded_router).TestCase
TestRouterContract.settings = settings(
    TestRouterContract.settings, stateful_step_count=50, max_examples=300, deadline=None
)

# The baselines honour the contract too, with the placement clause each one promises.
TestRoundRobinContract = router_contract(
    lambda engines: Router(engines, policy=RoundRobin()), placement="work-conserving"
).TestCase
TestRoundRobinContract.settings = settings(
    TestRoundRobinContract.settings, stateful_step_count=30, max_examples=60, deadline=None
)
TestSessionHashContract = router_contract(
    lambda engines: Router(engines, policy=SessionHash()), placement="any"
).TestCase
TestSessionHashContract.settings = settings(
    TestSessionHashContract.settings, stateful_step_count=30, max_examples=60, deadline=None
)
