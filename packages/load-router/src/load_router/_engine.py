"""The :class:`Engine` protocol: everything the router needs from an inference engine.

Concrete engines (an in-process torch engine, a vLLM server behind HTTP) live in the application;
this module only fixes the contract they must honour (Arctic-SWE §3.3).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import attrs

from load_router._errors import InvalidArgumentError


def _non_negative_ints(_inst: object, attr: attrs.Attribute[object], value: object) -> None:
    if not isinstance(value, tuple) or not all(isinstance(t, int) and t >= 0 for t in value):
        raise InvalidArgumentError(f"{attr.name} must be a tuple of non-negative token ids")


@attrs.frozen
class GenerateRequest:
    """One assistant turn to sample for one rollout of a leased group.

    ``prompt_ids`` is the rollout's *whole retained history* as token ids (never re-tokenised
    text), so an engine that lost its cache can always re-prefill from it.
    """

    rollout_index: int = attrs.field(validator=attrs.validators.ge(0))
    prompt_ids: tuple[int, ...] = attrs.field(converter=tuple, validator=_non_negative_ints)
    max_new_tokens: int = attrs.field(validator=attrs.validators.ge(1))
    #: The turn's sampling seed, or ``None`` for the engine's own stream. A caller that derives
    #: it from (group, rollout, turn) makes a rerun of that turn sample the same random numbers
    #: wherever and whenever it runs (e.g. a group relaunched after a resume).
    seed: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(0))
    )


def _optional_ints(value: Iterable[int] | None) -> tuple[int, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class GenerateResult:
    """What the engine sampled for one turn (Arctic-SWE §3.3).

    ``token_ids``, ``logprobs`` and ``token_versions`` have the same length T: one rollout
    log-prob and one policy version per sampled token. ``token_versions[t]`` is the weight
    version token ``t`` was sampled under; versions may change *inside* a turn when the engine
    was refreshed in flight (:meth:`load_router.Router.refresh` in ``inflight`` mode), so they
    are non-decreasing and never above ``policy_version``. ``policy_version`` is the version of
    the newest token (the last entry of ``token_versions`` when T > 0). Left out (``None``),
    ``token_versions`` is every token at ``policy_version``.

    Raises :class:`InvalidArgumentError` for mismatched lengths, negative or decreasing versions, or a
    last version other than ``policy_version``.
    """

    token_ids: tuple[int, ...] = attrs.field(converter=tuple, validator=_non_negative_ints)
    logprobs: tuple[float, ...] = attrs.field(converter=tuple)
    policy_version: int = attrs.field(validator=attrs.validators.ge(0))
    token_versions: tuple[int, ...] = attrs.field(default=None, converter=_optional_ints)

    def __attrs_post_init__(self) -> None:
        if len(self.logprobs) != len(self.token_ids):
            raise InvalidArgumentError(
                f"{len(self.token_ids)} tokens but {len(self.logprobs)} log-probs in a result"
            )
        given: object = self.token_versions  # None until filled in here
        if given is None:
            filled = (self.policy_version,) * len(self.token_ids)
            object.__setattr__(self, "token_versions", filled)  # frozen: set once, here
            return
        _check_token_versions(self.token_versions, len(self.token_ids), self.policy_version)


def _check_token_versions(versions: tuple[int, ...], num_tokens: int, newest: int) -> None:
    if len(versions) != num_tokens:
        raise InvalidArgumentError(
            f"{num_tokens} tokens but {len(versions)} token versions in a result"
        )
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in versions):
        raise InvalidArgumentError(f"token versions must be non-negative ints, got {versions}")
    if any(b < a for a, b in itertools.pairwise(versions)):
        raise InvalidArgumentError(f"token versions decrease within a turn: {versions}")
    if versions and versions[-1] != newest:
        raise InvalidArgumentError(
            f"the newest token's version {versions[-1]} is not the policy_version {newest}"
        )


@runtime_checkable
class Engine(Protocol):
    """An inference engine the router can place groups on.

    Contract:

    * ``engine_id`` — stable, unique identity (the router's registry key).
    * ``capacity`` — the most sequences the engine can keep resident (KV/recurrent cache slots);
      read once when the engine is registered. The router's effective cap for the engine is
      ``min(capacity, max_resident_per_engine)``.
    * ``in_flight`` — the sequences the engine currently holds, for monitoring. The router places
      by its *own* lease accounting (exact and O(1)); it reports this value next to its own in
      :meth:`load_router.Router.snapshot` so drift between the two is visible.
    * ``generate(request)`` — sample one turn. Raising any ``Exception`` tells the router the
      engine is broken: it is marked down and every lease on it ends as FAILED.
    * ``refresh(weights_ref, version, invalidate_caches=True)`` — load the weights named by
      ``weights_ref`` and report ``version`` from then on. With ``invalidate_caches`` (the
      default, paper §3.3) the engine must drop **every** cache computed under older weights
      (attention KV, convolution history, recurrent state, prefix cache) and, before
      returning, re-prefill the retained history of every sequence it keeps resident — or
      release it, since the next request carries the whole history (vLLM resets its prefix
      cache this way) — so that no token after the refresh is sampled from a stale state.
      ``invalidate_caches=False`` is the ablation that keeps stale caches.
      ``refresh`` may run **concurrently with** ``generate`` calls on the same engine (the
      router's ``inflight`` refresh mode): the engine pauses its running sequences where they
      are (vLLM's ``pause(mode="keep")``), loads the weights, invalidates and re-prefills, and
      resumes them, so the tokens of one turn sampled after the refresh come from caches
      recomputed under the new weights and carry the new version in
      :attr:`GenerateResult.token_versions` (tokens before it keep the old one). In the
      router's ``drain`` mode no ``generate`` call runs on the engine while ``refresh`` runs.
    """

    @property
    def engine_id(self) -> str: ...

    @property
    def capacity(self) -> int: ...

    @property
    def in_flight(self) -> int: ...

    async def generate(self, request: GenerateRequest) -> GenerateResult: ...

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None: ...


class PlacementOnlyEngine:
    """An :class:`Engine` that only occupies a slot in the router's placement decisions.

    For simulations and placement benchmarks, where rollouts are advanced by something other than
    :meth:`generate` (an event loop, a timer): it reports its identity and capacity, and refuses
    to generate or refresh, so a mistaken call fails loudly instead of faking tokens.
    """

    def __init__(self, engine_id: str, capacity: int) -> None:
        self._engine_id = engine_id
        self._capacity = capacity

    @property
    def engine_id(self) -> str:
        return self._engine_id

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_flight(self) -> int:
        return 0

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        raise RuntimeError(f"{self._engine_id} is a placement-only engine: it never generates")

    async def refresh(
        self, weights_ref: str, version: int, *, invalidate_caches: bool = True
    ) -> None:
        raise RuntimeError(f"{self._engine_id} is a placement-only engine: it is never refreshed")
