"""Tests for ``arctic_swe.ablate._variants``: each variant is its overfit flag's one change,
session-hash moves every variant to two engines, and bad names are typed errors."""

from __future__ import annotations

import argparse
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe._cli import build_parser
from arctic_swe.ablate import (
    DEFAULT_VARIANTS,
    VARIANTS,
    AblateError,
    parse_seeds,
    parse_variant_seeds,
    parse_variants,
    seeded_configs,
    variant_configs,
)
from arctic_swe.cli._overfit import ablation_overrides
from arctic_swe.config import RunConfig, RunConfigError, apply_overrides, preset, to_mapping


def _flat(config: RunConfig) -> dict[str, Any]:
    return {f"{s}.{k}": v for s, values in to_mapping(config).items() for k, v in values.items()}


def _field(assignment: str) -> str:
    return assignment.partition("=")[0]


subsets = st.lists(st.sampled_from(list(VARIANTS)), min_size=1, unique=True)


@given(names=subsets, lr=st.sampled_from([None, 3e-5, 2e-4]), engines=st.sampled_from([1, 2]))
def test_each_variant_differs_from_the_base_in_its_flags_field_only(
    names: list[str], lr: float | None, engines: int
) -> None:
    variants = parse_variants(",".join(names))
    assert list(variants) == [name for name in VARIANTS if name in names]  # canonical order
    overrides = [] if lr is None else [f"trainer.lr={lr}"]
    start = attrs.evolve(RunConfig(), engine=attrs.evolve(RunConfig().engine, engines=engines))
    configs = variant_configs(start, variants, overrides)
    assert list(configs) == list(variants)
    # a one-engine base gets a second engine for every variant when session-hash is among them
    two_engines = engines == 1 and "session-hash" in variants
    base = _flat(apply_overrides(start, overrides))
    for name, config in configs.items():
        flat = _flat(config)
        changed = {key for key in flat if flat[key] != base[key]}
        expected = {_field(a) for a in VARIANTS[name].overrides}
        assert changed == expected | ({"engine.engines"} if two_engines else set())
        assert config.engine.engines == (2 if two_engines else engines)
        flag = VARIANTS[name].flag
        if flag is not None:  # the same change as `overfit <flag>`
            assert ablation_overrides(_overfit(flag)) == list(VARIANTS[name].overrides)


def _overfit(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["overfit", *argv])


def _overfit_ablation_flags() -> set[str]:
    """The flags ``overfit --help`` lists as ablations."""
    overfit = next(
        action.choices["overfit"]
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    return {
        flag
        for action in overfit._actions
        if (action.help or "").startswith("ablation:")
        for flag in action.option_strings
    }


def test_every_overfit_flag_has_a_variant_and_the_default_is_the_papers_list() -> None:
    assert {v.flag for v in VARIANTS.values()} == {None, *_overfit_ablation_flags()}
    assert DEFAULT_VARIANTS[0] == "full"
    assert set(DEFAULT_VARIANTS) == set(VARIANTS) - {"rollout-mean"}


def test_session_hash_with_launched_http_engines_launches_two() -> None:
    configs = variant_configs(preset("tiny-http"), ("full", "session-hash"))
    assert all(config.engine.launch == 2 for config in configs.values())
    one = apply_overrides(preset("tiny-http"), ["engine.launch=1"])
    configs = variant_configs(one, ("full", "session-hash"))
    assert [config.engine.launch for config in configs.values()] == [2, 2]


def test_session_hash_with_a_single_engine_url_is_refused() -> None:
    base = apply_overrides(RunConfig(), ["engine.kind=http", 'engine.urls=["http://h:1"]'])
    with pytest.raises(AblateError, match="session-hash variant needs >= 2 engines"):
        variant_configs(base, ("full", "session-hash"))
    assert list(variant_configs(base, ("full", "clip"))) == ["full", "clip"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("full,nope", "unknown variant 'nope'"),
        ("full,,clip", "empty name"),
        ("clip,clip", "'clip' is given twice"),
        ("", "empty name"),
    ],
)
def test_bad_variant_lists_are_typed_errors(text: str, message: str) -> None:
    with pytest.raises(AblateError, match=message):
        parse_variants(text)


def test_an_override_that_undoes_a_variant_is_refused() -> None:
    with pytest.raises(AblateError, match="'full' and 'clip' resolve to the same"):
        variant_configs(RunConfig(), ("full", "clip"), ["trainer.ratio_control=ppo_clip"])


def test_an_override_that_breaks_session_hash_is_a_config_error() -> None:
    with pytest.raises(RunConfigError, match=r"engine\.routing"):
        variant_configs(RunConfig(), ("full", "session-hash"), ["engine.engines=1"])


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=6, unique=True))
def test_seed_lists_parse_in_the_order_given(seeds: list[int]) -> None:
    assert parse_seeds(",".join(map(str, seeds))) == tuple(seeds)
    assert parse_seeds(" , ".join(map(str, seeds))) == tuple(seeds)  # spaces allowed


@pytest.mark.parametrize(
    ("text", "message"),
    [("0,,1", "empty seed"), ("0,x", "integers"), ("1.5", "integers"), ("0,-1", "negative"),
     ("2,2", "seed 2 is given twice")],
)  # fmt: skip
def test_bad_seed_lists_are_typed_errors(text: str, message: str) -> None:
    with pytest.raises(AblateError, match=message):
        parse_seeds(text)


def test_each_variant_runs_once_per_seed_and_only_its_seed_changes() -> None:
    configs = variant_configs(RunConfig(), ("full", "clip"))
    seeded = seeded_configs(configs, (3, 0))
    assert list(seeded) == ["full/seed-3", "clip/seed-3", "full/seed-0", "clip/seed-0"]
    for key, config in seeded.items():
        variant, _, seed = key.partition("/seed-")
        assert config.run.seed == int(seed)
        assert attrs.evolve(config, run=attrs.evolve(config.run, seed=0)) == configs[variant]
    assert seeded_configs(configs, ()) == configs  # no --seeds: OUT/<variant>/ as before


def test_a_variant_can_run_a_subset_of_the_seeds() -> None:
    """Positive controls at two seeds beside four of full: each one keeps its paired full run."""
    variants = ("full", "no-eviction", "ungated")
    own = parse_variant_seeds(["ungated=0,1"], variants, (0, 1, 2, 3))
    seeded = seeded_configs(variant_configs(RunConfig(), variants), (0, 1, 2, 3), own)
    assert [key for key in seeded if key.startswith("ungated/")] == [
        "ungated/seed-0",
        "ungated/seed-1",
    ]
    assert len([key for key in seeded if key.startswith("full/")]) == 4


@pytest.mark.parametrize(
    ("items", "seeds", "message"),
    [
        (["ungated"], (0, 1), "give VARIANT=N,M"),
        (["clip=0"], (0, 1), "'clip' is not among --variants"),
        (["ungated=0", "ungated=1"], (0, 1), "given twice"),
        (["ungated=0,x"], (0, 1), "integers"),
        (["ungated=5"], (0, 1), "seed 5 of 'ungated' has no full run"),
        (["ungated=0"], (), "give --seeds too"),
    ],
)
def test_bad_variant_seeds_are_typed_errors(
    items: list[str], seeds: tuple[int, ...], message: str
) -> None:
    with pytest.raises(AblateError, match=message):
        parse_variant_seeds(items, ("full", "ungated"), seeds)
