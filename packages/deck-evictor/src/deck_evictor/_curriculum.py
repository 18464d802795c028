"""Cumulative-solve-rate curriculum filter (applied once at a stage boundary).

Before stage 2 of the related RFT + DAPO recipe for SWE agents (its curriculum step), every task's cumulative solve rate — its success rate over
all earlier training rollouts — is computed; tasks above 2/3 are dropped (already stably solved)
and tasks with rate 0 are dropped (most likely unsolvable). The recipe shrank 7,249 tasks to 2,028.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from deck_evictor._config import CurriculumFilter
from deck_evictor._errors import InvalidResultError
from deck_evictor._records import CurriculumReport

#: The recipe's filter: drop above 2/3 cumulative solve rate and never-solved tasks.
RECIPE_FILTER = CurriculumFilter()


def split_by_solve_rate(
    counts: Iterable[tuple[str, int, int]], rule: CurriculumFilter = RECIPE_FILTER
) -> CurriculumReport:
    """Split ``(task_id, successes, attempts)`` rows by cumulative solve rate.

    Returns ids (in input order) that the filter drops as solved (rate > ``max_solve_rate``) or as
    never solved (0 successes, when ``drop_never_solved``), those it keeps, and those kept only
    because they have fewer than ``min_attempts`` rollouts (``untested``, a subset of ``kept``).
    Raises :class:`InvalidResultError` for impossible counts.
    """
    # The threshold as an exact fraction (0.666… → 2/3) so a rate of exactly 2/3 is never dropped
    # by a float rounding up; the comparison below is then in integers.
    threshold = Fraction(rule.max_solve_rate).limit_denominator(1_000_000)
    solved: list[str] = []
    unsolved: list[str] = []
    kept: list[str] = []
    untested: list[str] = []
    for task_id, successes, attempts in counts:
        if not 0 <= successes <= attempts:
            raise InvalidResultError(
                f"task {task_id!r}: need 0 <= successes <= attempts, got {successes}/{attempts}"
            )
        if attempts < rule.min_attempts:
            kept.append(task_id)
            untested.append(task_id)
        elif successes * threshold.denominator > threshold.numerator * attempts:
            solved.append(task_id)
        elif successes == 0 and rule.drop_never_solved:
            unsolved.append(task_id)
        else:
            kept.append(task_id)
    return CurriculumReport(tuple(solved), tuple(unsolved), tuple(kept), tuple(untested))
