"""Labels of the seeds of one variant (``arctic-swe ablate --seeds``): ``<variant>/seed-<n>``.

``ablate`` runs every variant once per seed into ``OUT/<variant>/seed-<n>/`` and labels the
runs the same way; the paired comparison (:mod:`arctic_swe.metrics._paired`) and the mechanism
table (:mod:`arctic_swe.metrics._mechanisms`) read the labels back to group runs by variant and
pair them by seed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

_SEEDED = re.compile(r"^(?P<variant>.+)/seed-(?P<seed>\d+)$")

_Item = TypeVar("_Item")


def seed_label(variant: str, seed: int) -> str:
    """``("full", 3)`` -> ``"full/seed-3"``: the label (and ``ablate``'s run directory under
    ``OUT``) of one seed of a variant; :func:`split_seed_label` reads it back."""
    return f"{variant}/seed-{seed}"


def split_seed_label(label: str) -> tuple[str, int] | None:
    """``"full/seed-3"`` -> ``("full", 3)``; ``None`` for a label without a seed."""
    match = _SEEDED.match(label)
    return None if match is None else (match["variant"], int(match["seed"]))


def variant_seed(label: str) -> tuple[str, int | None]:
    """``"full/seed-3"`` -> ``("full", 3)``; a label without a seed is its own variant run at
    the base config's seed: ``"full"`` -> ``("full", None)``."""
    parsed = split_seed_label(label)
    return (label, None) if parsed is None else parsed


def by_variant(
    labelled: Iterable[tuple[str, _Item]],
) -> dict[str, dict[int | None, _Item]]:
    """``(label, item)`` pairs grouped as variant -> seed -> item, variants in first-seen
    order (a label seen twice keeps its last item)."""
    grouped: dict[str, dict[int | None, _Item]] = {}
    for label, item in labelled:
        variant, seed = variant_seed(label)
        grouped.setdefault(variant, {})[seed] = item
    return grouped
