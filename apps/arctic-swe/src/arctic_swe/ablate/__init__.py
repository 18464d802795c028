"""``arctic-swe ablate``: the full recipe and its broken variants, same seed, deck, warm start
and budget, one training run each, then one comparison (Arctic-SWE §3.1).

Planning imports nothing heavy, so ``--help`` stays instant; the runner (``run_ablation``,
``VariantEvent``, ``Runner``) imports the loop, and loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from arctic_swe.ablate._errors import AblateError
from arctic_swe.ablate._plan import MANIFEST, AblationPlan, VariantState, open_plan, variant_state
from arctic_swe.ablate._variants import (
    ABLATION_FLAGS,
    DEFAULT_VARIANTS,
    VARIANTS,
    Variant,
    parse_seeds,
    parse_variant_seeds,
    parse_variants,
    seeded_configs,
    shared_overrides,
    variant_configs,
)

if TYPE_CHECKING:
    from arctic_swe.ablate._run import Runner, VariantEvent, run_ablation

#: The runner's names: loaded on first use (they import the RL loop, torch with it).
_LAZY = {"Runner": "_run", "VariantEvent": "_run", "run_ablation": "_run"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = [
    "ABLATION_FLAGS",
    "DEFAULT_VARIANTS",
    "MANIFEST",
    "VARIANTS",
    "AblateError",
    "AblationPlan",
    "Runner",
    "Variant",
    "VariantEvent",
    "VariantState",
    "open_plan",
    "parse_seeds",
    "parse_variant_seeds",
    "parse_variants",
    "run_ablation",
    "seeded_configs",
    "shared_overrides",
    "variant_configs",
    "variant_state",
]
