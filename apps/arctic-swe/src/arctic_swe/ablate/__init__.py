"""``arctic-swe ablate``: the full recipe and its broken variants, same seed, deck, warm start
and budget, one overfit run each, then one comparison (Arctic-SWE §3.1).

Planning (this package's names) imports nothing heavy, so ``--help`` stays instant; the runner,
which imports the loop, is ``arctic_swe.ablate._run.run_ablation``.
"""

from arctic_swe.ablate._errors import AblateError
from arctic_swe.ablate._plan import MANIFEST, AblationPlan, VariantState, open_plan, variant_state
from arctic_swe.ablate._variants import (
    DEFAULT_VARIANTS,
    VARIANTS,
    Variant,
    parse_seeds,
    parse_variants,
    seeded_configs,
    shared_overrides,
    variant_configs,
)

__all__ = [
    "DEFAULT_VARIANTS",
    "MANIFEST",
    "VARIANTS",
    "AblateError",
    "AblationPlan",
    "Variant",
    "VariantState",
    "open_plan",
    "parse_seeds",
    "parse_variants",
    "seeded_configs",
    "shared_overrides",
    "variant_configs",
    "variant_state",
]
