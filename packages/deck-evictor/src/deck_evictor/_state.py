"""The deck's complete state as JSON-able data, and its validated inverse.

Everything that decides future behaviour is here — configuration, the update clock, per-task
counters, retirement order and the sampler (generator state, permutation, cursor) — so a deck
rebuilt from it continues exactly, draw for draw.

Fields added later (``rules.mastered_groups``, the ``consecutive_all_correct`` and
``times_reactivated`` task columns) are optional when loading, so a state file written before
them still loads (with the defaults / derived values documented where they are read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deck_evictor._config import EvictionRules, ReplayPolicy
from deck_evictor._errors import CorruptStateError, DeckError
from deck_evictor._sampler import PassSampler
from deck_evictor._tasks import from_columns, to_columns, validated_ids

if TYPE_CHECKING:
    from collections.abc import Mapping

    from deck_evictor._deck import Deck


def deck_to_payload(deck: Deck) -> dict[str, Any]:
    rules, replay = deck._rules, deck._replay
    return {
        "rules": {
            "easy": rules.easy,
            "hard_consecutive_zero": rules.hard_consecutive_zero,
            "min_group_size": rules.min_group_size,
            "mastered_groups": rules.mastered_groups,
        },
        "replay": {
            "every": replay.every,
            "size": replay.size,
            "min_age": replay.min_age,
            "reasons": [r.value for r in replay.reasons],
            "reactivate_below": replay.reactivate_below,
            "reactivate_hard_at_or_above": replay.reactivate_hard_at_or_above,
        },
        "seed": deck._seed,
        "update": deck._update,
        "tasks": to_columns(deck._records),
        "retired_order": list(deck._retired),
        "sampler": deck._sampler.to_dict(),
    }


def deck_from_payload(cls: type[Deck], payload: Mapping[str, Any]) -> Deck:
    """Rebuild a deck; any malformed or inconsistent field raises :class:`CorruptStateError`."""
    try:
        return _rebuild(cls, payload)
    except CorruptStateError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, DeckError) as exc:
        raise CorruptStateError(f"deck state is malformed: {type(exc).__name__}: {exc}") from exc


def _rebuild(cls: type[Deck], payload: Mapping[str, Any]) -> Deck:
    records = from_columns(payload["tasks"])
    ids, index = validated_ids(r.task_id for r in records)
    deck = cls.__new__(cls)
    deck._install(
        records,
        ids,
        index,
        EvictionRules(**payload["rules"]),
        ReplayPolicy(**payload["replay"]),
        payload["seed"],
    )
    order = payload["retired_order"]
    retired_ids = {r.task_id for r in records if r.reason is not None}
    if not isinstance(order, list) or len(order) != len(retired_ids) or set(order) != retired_ids:
        raise CorruptStateError("retired_order does not match the retired tasks")
    for task_id in order:
        retirement = records[deck._index[task_id]].retirement()
        if retirement is None or retirement.n < 1:
            raise CorruptStateError(f"retired task {task_id!r} has no valid retirement record")
        deck._retired[task_id] = retirement
    update = payload["update"]
    if isinstance(update, bool) or not isinstance(update, int) or update < 0:
        raise CorruptStateError(f"update clock {update!r} is not a non-negative int")
    deck._update = update
    deck._sampler = PassSampler.from_dict(payload["sampler"], len(records))
    return deck
