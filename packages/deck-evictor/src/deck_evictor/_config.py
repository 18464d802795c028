"""Configuration records: eviction rules, replay policy, curriculum filter, retirement reasons.

All are frozen attrs classes validated at construction, so a bad value fails where it is written
rather than deep inside a training run.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Literal

import attrs

from deck_evictor._errors import InvalidConfigError


class RetireReason(enum.StrEnum):
    """Why a task left the active deck.

    ``EASY`` and ``HARD`` are the paper's eviction rules (Arctic-SWE §3.3 "easy-hard eviction");
    the two ``CURRICULUM_*`` reasons come from the stage-boundary filter of the related
    RFT + DAPO recipe for SWE agents (its curriculum step).
    """

    EASY = "easy"
    HARD = "hard"
    CURRICULUM_SOLVED = "curriculum_solved"
    CURRICULUM_UNSOLVED = "curriculum_unsolved"


#: How a task earns retirement as mastered: at its first all-correct group (the eviction
#: experiment's easy rule), or after ``mastered_groups`` all-correct groups in a row.
EasyRule = Literal["first_all_correct", "mastered"]
EASY_RULES: tuple[EasyRule, ...] = ("first_all_correct", "mastered")


def _positive_or_none(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfigError(f"{attribute.name} must be a positive int or None, got {value!r}")


def _positive(_inst: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfigError(f"{attribute.name} must be a positive int, got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfigError(f"{attribute.name} must be a non-negative int, got {value!r}")


def _rate_or_none(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidConfigError(f"{attribute.name} must be in [0, 1] or None, got {value!r}")


def _reasons(values: Iterable[RetireReason | str]) -> tuple[RetireReason, ...]:
    try:
        return tuple(RetireReason(v) for v in values)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"reasons must be RetireReason values: {exc}") from exc


def _rate(_inst: object, attribute: attrs.Attribute[float], value: object) -> None:
    _rate_or_none(_inst, attribute, value)
    if value is None:
        raise InvalidConfigError(f"{attribute.name} must be in [0, 1], got None")


@attrs.frozen
class EvictionRules:
    """When a task is retired from the active deck (Arctic-SWE §3.3).

    Attributes:
        easy: the mastery rule. ``"first_all_correct"`` retires a task the first time one of its
            groups is all-correct (8/8 in the paper's eviction experiment); ``"mastered"``
            retires it once its last ``mastered_groups`` groups were all all-correct (a streak:
            any group with a failure restarts it); ``None`` switches mastery retirement off.
            ``"mastered"`` with ``mastered_groups=1`` decides exactly as ``"first_all_correct"``.
        hard_consecutive_zero: retire after this many consecutive all-zero groups (3 in the
            paper); ``None`` switches the hard rule off. The final recipe ("retire only mastered
            tasks", Arctic-SWE §5) has it off.
        min_group_size: groups with fewer rollouts than this never trigger a rule (a 1/1 group
            is weak evidence of mastery); they still count in the statistics and the streaks.
        mastered_groups: the streak of all-correct groups ``"mastered"`` requires (ignored by
            the other rules). Default 1: the paper's single all-correct group.
    """

    easy: EasyRule | None = "first_all_correct"
    hard_consecutive_zero: int | None = attrs.field(default=3, validator=_positive_or_none)
    min_group_size: int = attrs.field(default=1, validator=_positive)
    mastered_groups: int = attrs.field(default=1, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.easy is not None and self.easy not in EASY_RULES:
            raise InvalidConfigError(f"easy must be one of {EASY_RULES} or None, got {self.easy!r}")

    @property
    def mastery_streak(self) -> int | None:
        """All-correct groups in a row that retire a task as mastered (``None``: rule off)."""
        if self.easy is None:
            return None
        return self.mastered_groups if self.easy == "mastered" else 1

    @classmethod
    def paper(cls) -> EvictionRules:
        """Both rules as in the eviction experiment: first 8/8 (easy), three 0/8 in a row (hard)."""
        return cls()

    @classmethod
    def mastered_only(cls, groups: int = 1) -> EvictionRules:
        """The final recipe of Arctic-SWE §5: retire only mastered tasks, never hard ones.

        A task is mastered after ``groups`` all-correct groups in a row (1: the paper's single
        all-correct group).
        """
        return cls(easy="mastered", hard_consecutive_zero=None, mastered_groups=groups)

    @classmethod
    def off(cls) -> EvictionRules:
        """No eviction at all: the no-eviction baseline."""
        return cls(easy=None, hard_consecutive_zero=None)


@attrs.frozen
class ReplayPolicy:
    """How retired tasks are re-probed to measure forgetting (Arctic-SWE, "Scale Findings").

    Eviction-adjusted reward imputes 1.0 for retired tasks and so cannot see forgetting; replay
    probes re-run retired tasks and keep their scores apart from training statistics.

    Attributes:
        every: probe on updates ``u`` with ``u % every == 0``.
        size: at most this many retired tasks per probe (least recently probed first).
        min_age: a task becomes eligible ``min_age`` updates after its retirement.
        reasons: which retirement reasons are probed (curriculum drops are not, by default).
        reactivate_below: an ``EASY`` task whose probe success rate falls strictly below this is
            put back into the active deck (forgotten: replay feedback); ``None`` never
            re-activates. The task keeps its cumulative counts; its streaks restart, so it must
            earn retirement again from scratch.
        reactivate_hard_at_or_above: a ``HARD`` task whose probe success rate reaches this is put
            back (it became learnable); ``None`` never re-activates.
    """

    every: int = attrs.field(default=10, validator=_positive)
    size: int = attrs.field(default=16, validator=_positive)
    min_age: int = attrs.field(default=1, validator=_non_negative)
    reasons: tuple[RetireReason, ...] = attrs.field(
        default=(RetireReason.EASY, RetireReason.HARD),
        converter=_reasons,
    )
    reactivate_below: float | None = attrs.field(default=None, validator=_rate_or_none)
    reactivate_hard_at_or_above: float | None = attrs.field(default=None, validator=_rate_or_none)


@attrs.frozen
class CurriculumFilter:
    """The stage-boundary filter of the related RFT + DAPO recipe for SWE agents (curriculum).

    A task's cumulative solve rate is its success rate over every training rollout so far.
    Tasks above ``max_solve_rate`` are stably solved and dropped; tasks never solved are most
    likely unsolvable and dropped. Tasks with fewer than ``min_attempts`` rollouts are kept: there
    is no evidence about them yet.
    """

    max_solve_rate: float = attrs.field(default=2.0 / 3.0, validator=_rate)
    drop_never_solved: bool = True
    min_attempts: int = attrs.field(default=1, validator=_positive)
