"""The named variants of ``arctic-swe ablate``: the full recipe and one broken recipe per
ablation flag of ``arctic-swe overfit`` (Arctic-SWE §3.1: the full recipe climbs and holds on a
small pool, each broken one is expected to climb, then collapse).

:data:`VARIANTS` is the one table of ablations: each entry names the variant, the ``overfit``
flag it stands for, the ``--set`` that flag applies, what it changes and the unit test showing
that it does. ``overfit``'s flags are built from it, so ``ablate`` and ``overfit --clip``
cannot drift apart; adding an ablation is its config switch (and the code honouring it) plus
one entry here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arctic_swe.ablate._errors import AblateError
from arctic_swe.config import RunConfig, apply_overrides


@dataclass(frozen=True)
class Variant:
    """One arm of the comparison: ``flag`` is the ``overfit`` flag it stands for and
    ``setting`` the ``section.field=value`` it applies (both None: the full recipe);
    ``test`` names the unit test showing that the flag changes what ``meaning`` says;
    ``default`` puts it in ``--variants``' default."""

    name: str
    flag: str | None
    setting: str | None
    meaning: str
    test: str
    default: bool = True

    @property
    def overrides(self) -> tuple[str, ...]:
        """The ``section.field=value`` strings of this variant (empty for ``full``)."""
        return () if self.setting is None else (self.setting,)


_T = "tests/"  # app tests, relative to apps/arctic-swe
#: Every variant, in the order they run and are tabled (and ``overfit --help`` lists the flags).
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("full", None, None, "the full recipe", "-"),
        Variant(
            "clip", "--clip", "trainer.ratio_control=ppo_clip",
            "PPO clipping instead of the IcePop mask",
            _T + "trainer/test_ablation_flags.py::test_ppo_clip_changes_the_gradient_of_tokens_"
            "outside_the_band",
        ),
        Variant(
            "ungated", "--no-gated-reward", "harness.gated_reward=false", "gated reward off",
            _T + "harness/test_ablations.py::test_ungated_reward_grades_the_final_state_whatever_"
            "ended_the_episode",
        ),
        Variant(
            "no-eviction", "--no-eviction", "deck.eviction=false", "never retire tasks",
            _T + "orchestrator/test_ablation_flags.py::test_no_eviction_keeps_a_mastered_task_in_"
            "the_deck",
        ),
        Variant(
            "bf16-state", "--no-fp32-numerics", "trainer.fp32_numerics=false",
            "FP32 numerics off (the engines compute and keep their recurrent state in bf16)",
            _T + "orchestrator/test_ablation_flags.py::test_bf16_state_rounds_the_engines_"
            "recurrent_cache",
        ),
        Variant(
            "session-hash", "--session-hash", "engine.routing=session_hash",
            "session-hash routing, not least-loaded",
            _T + "orchestrator/test_ablation_flags.py::test_session_hash_places_a_group_by_its_"
            "hash_not_by_load",
        ),
        Variant(
            "no-invalidation", "--no-cache-invalidation", "engine.invalidate_caches=false",
            "keep stale caches across weight refreshes",
            _T + "engine/test_refresh.py::test_stale_cache_ablation_samples_from_a_mixed_state",
        ),
        Variant(
            "lenient", "--lenient-format", "harness.strict_format=false",
            "raw format check off (lenient parse)",
            _T + "harness/test_ablations.py::test_lenient_format_runs_a_repaired_edit_and_records_"
            "its_codes",
        ),
        # an aggregation choice, not one of the paper's fixes (§3.2-§3.3): opt in
        Variant(
            "rollout-mean", "--rollout-mean", "trainer.aggregation=rollout_mean",
            "per-rollout mean, not token mean",
            _T + "trainer/test_ablation_flags.py::test_rollout_mean_weighs_rollouts_not_tokens",
            default=False,
        ),
    )
}  # fmt: skip

#: The ``overfit`` flags, each with the variant it stands for, in :data:`VARIANTS` order.
ABLATION_FLAGS: dict[str, Variant] = {v.flag: v for v in VARIANTS.values() if v.flag is not None}

#: What ``--variants`` defaults to: the full recipe and every broken recipe of §3.2-§3.3.
DEFAULT_VARIANTS: tuple[str, ...] = tuple(v.name for v in VARIANTS.values() if v.default)

#: The variant that needs more than one engine (on one engine it places groups like the recipe).
_NEEDS_TWO_ENGINES = "session-hash"


def parse_variants(text: str) -> tuple[str, ...]:
    """``"full,clip"`` -> ``("full", "clip")``, in the canonical order of :data:`VARIANTS`.

    Raises :class:`AblateError` for an unknown, repeated or empty name.
    """
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise AblateError(f"--variants {text!r}: empty name; give e.g. full,clip")
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        raise AblateError(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise AblateError(f"variant {repeated[0]!r} is given twice")
    return tuple(name for name in VARIANTS if name in names)


def shared_overrides(base: RunConfig, variants: Sequence[str]) -> tuple[str, ...]:
    """Overrides every variant gets so that the budgets stay equal.

    ``session-hash`` routing is only a different placement with at least two engines, so when
    it is compared and the base has one engine, *every* variant runs on two: the recipe and
    each ablation then share the engine count (and hence the generation budget). HTTP engines
    given as ``engine.urls`` cannot be multiplied here: that is an :class:`AblateError`.
    """
    if _NEEDS_TWO_ENGINES not in variants or base.engine.engine_count >= 2:
        return ()
    if base.engine.kind == "inprocess":
        return ("engine.engines=2",)
    if base.engine.launch:
        return ("engine.launch=2",)
    raise AblateError(
        "the session-hash variant needs >= 2 engines and engine.urls lists one; "
        "list two URLs or leave session-hash out of --variants"
    )


def variant_configs(
    base: RunConfig, variants: Sequence[str], overrides: Sequence[str] = ()
) -> dict[str, RunConfig]:
    """Each variant's configuration: ``base`` (preset, then ``--config``), the shared
    overrides, the variant's own ``--set``, then the user's ``overrides`` — the precedence of
    ``overfit`` (flags, then ``--set``). Raises :class:`AblateError` if two variants come out
    equal (an override undid a variant) and ``RunConfigError`` for an invalid one."""
    shared = shared_overrides(base, variants)
    configs = {
        name: apply_overrides(base, [*shared, *VARIANTS[name].overrides, *overrides])
        for name in variants
    }
    seen: dict[RunConfig, str] = {}
    for name, config in configs.items():
        if config in seen:
            raise AblateError(
                f"variants {seen[config]!r} and {name!r} resolve to the same configuration "
                "(a --set overrides what the variant changes)"
            )
        seen[config] = name
    return configs


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0,1,2"`` -> ``(0, 1, 2)`` in the order given.

    Raises :class:`AblateError` for an empty, negative, non-integer or repeated seed.
    """
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise AblateError(f"--seeds {text!r}: empty seed; give e.g. 0,1,2")
    try:
        seeds = tuple(int(name) for name in names)
    except ValueError:
        raise AblateError(f"--seeds {text!r}: seeds are integers, e.g. 0,1,2") from None
    negative = [seed for seed in seeds if seed < 0]
    if negative:
        raise AblateError(f"--seeds: seed {negative[0]} is negative")
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:
        raise AblateError(f"--seeds: seed {repeated[0]} is given twice")
    return seeds


def parse_variant_seeds(
    items: Sequence[str], variants: Sequence[str], seeds: Sequence[int]
) -> dict[str, tuple[int, ...]]:
    """``["ungated=0,1"]`` -> ``{"ungated": (0, 1)}``: variants that run fewer seeds than
    ``--seeds`` (positive controls, say). Each must be one of ``variants``, given once, with
    seeds that ``full`` also runs (a seed without its ``full`` run cannot be paired).

    Raises :class:`AblateError` for a malformed item, an unknown or repeated variant, bad
    seeds, no ``--seeds`` to narrow, or a seed ``full`` does not run.
    """
    if items and not seeds:
        raise AblateError("--variant-seeds narrows --seeds: give --seeds too")
    found: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise AblateError(f"--variant-seeds {item!r}: give VARIANT=N,M, e.g. ungated=0,1")
        if name not in variants:
            raise AblateError(f"--variant-seeds {item!r}: {name!r} is not among --variants")
        if name in found:
            raise AblateError(f"--variant-seeds: {name!r} is given twice")
        found[name] = parse_seeds(text)
    paired = set(found.get("full", seeds)) if "full" in variants else set()
    for name, own in found.items():
        unpaired = [seed for seed in own if seed not in paired] if paired else []
        if unpaired and name != "full":
            raise AblateError(
                f"--variant-seeds: seed {unpaired[0]} of {name!r} has no full run to pair with"
            )
    return found


def seeded_configs(
    configs: Mapping[str, RunConfig],
    seeds: Sequence[int],
    per_variant: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, RunConfig]:
    """Every variant once per seed (``run.seed``; ``per_variant`` narrows a variant to its own
    seeds), keyed ``<variant>/seed-<n>`` in seed order then variant order — the order they
    run, so every finished seed is a complete set of pairs and an ablation stopped half way
    (or spread over days on a drifting machine) leaves paired runs, not one variant's seeds;
    ``configs`` unchanged when ``seeds`` is empty (one run per variant at the base config's
    seed, the layout ``OUT/<variant>/``)."""
    from arctic_swe.metrics import seed_label  # metrics imports matplotlib: not at --help

    if not seeds:
        return dict(configs)
    own = per_variant or {}
    return {
        seed_label(name, seed): apply_overrides(config, [f"run.seed={seed}"])
        for seed in seeds
        for name, config in configs.items()
        if seed in own.get(name, seeds)
    }
