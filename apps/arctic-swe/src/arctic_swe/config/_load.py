"""Build a :class:`RunConfig` from presets, TOML files and ``--set section.field=value``.

Everything is checked before any work starts: unknown sections or keys, wrong types (an ``int``
field never silently accepts ``1.5`` or ``"1"``), impossible sizes and unknown choices each give
a :class:`RunConfigError` naming the key (and the file it came from). Tables, keys and types
are checked by the app's one loading mechanism, :mod:`arctic_swe.config._tables`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from arctic_swe._backends import SANDBOX_BACKENDS
from arctic_swe._issue_styles import ISSUE_STYLES
from arctic_swe.config._errors import RunConfigError
from arctic_swe.config._schema import (
    AGGREGATIONS,
    ENGINE_KINDS,
    INVALID_REWARDS,
    PROCEDURAL_DECK,
    RATIO_CONTROLS,
    REFRESH_MODES,
    RETIRE_RULES,
    ROUTING_POLICIES,
    SECTIONS,
    TRAINER_KINDS,
    WEIGHT_TRANSFERS,
    RunConfig,
)
from arctic_swe.config._tables import (
    check_sections,
    config_errors,
    read_toml,
    require,
    update_record,
)

#: Preset name -> overrides of the defaults (the defaults *are* ``tiny``).
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {},
    "paper": {
        # the paper's cap (4), look-ahead and IcePop band [0, 2]; the tiny defaults are tighter
        # so that the defenses act at its scale (results/stress-test.md)
        "run": {"updates": 230, "max_off_policy": 4, "lookahead_batches": 1, "pool_eval_every": 0},
        "deck": {"pool_size": 160, "groups_per_update": 32, "rollouts_per_group": 5},
        "engine": {"engines": 6, "capacity": 64, "max_resident": 40, "max_new_tokens": 8192},
        # real tasks: observations verbatim, as the paper's harness shows them
        "harness": {
            "max_turns": 100,
            "max_tokens": 131072,
            "sandboxes": 256,
            "mask_durations": False,
        },
        "trainer": {
            "lr": 1e-6,
            "micro_batch_rollouts": 4,
            "invalid_reward": -1.0,
            "mask_high": 2.0,
        },
    },
    # The tiny stress test with its engines as two ``arctic-swe serve`` processes over HTTP.
    "tiny-http": {"engine": {"kind": "http", "launch": 2}},
    # The tiny sizes for up to 360 updates (``arctic-swe ablate --preset long``, the nightly
    # session), a checkpoint every 10 (each a full save of the policy and the AdamW state).
    # A run that solves its pool can run out of tasks first: under the earlier rule (first
    # all-correct group, no reactivation) the full recipe retired every task at update 109
    # (22 min of loop on 2 cores) and stopped; a run that stops solving keeps its unsolved tasks
    # and runs all 360 (results/ablations.md, long runs).
    "long": {"run": {"updates": 360, "checkpoint_every": 10}},
}


def preset(name: str) -> RunConfig:
    """The named preset (``tiny`` or ``paper``), validated."""
    if name not in PRESETS:
        raise RunConfigError("preset", f"unknown preset {name!r}; choose from {sorted(PRESETS)}")
    return from_mapping(PRESETS[name])


def from_mapping(data: Mapping[str, Any], base: RunConfig | None = None) -> RunConfig:
    """``base`` (default: the ``tiny`` defaults) with the sections of ``data`` applied."""
    check_sections(data, SECTIONS)
    config = base or RunConfig()
    changes = {
        section: update_record(section, getattr(config, section), values)
        for section, values in data.items()
    }
    result = attrs.evolve(config, **changes)
    validate(result)
    return result


def load_toml(path: str | Path, base: RunConfig | None = None) -> RunConfig:
    """Read a TOML config file on top of ``base``; an optional top-level
    ``preset = "name"`` key selects the base instead. Errors name the file and the key."""
    data = read_toml(path)
    with config_errors(source=path):
        name = data.pop("preset", None)
        if name is not None:
            require(isinstance(name, str), "preset", f"must be a string, got {name!r}")
            base = preset(name)
        return from_mapping(data, base)


def apply_overrides(config: RunConfig, assignments: Iterable[str]) -> RunConfig:
    """Apply ``section.field=value`` strings; the value is read as a TOML literal
    (``3e-4``, ``true``, ``"mask"``), bare words as strings."""
    data: dict[str, dict[str, Any]] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        section, dot, field = key.strip().partition(".")
        if not sep or not dot or not section or not field:
            raise RunConfigError(assignment, "override must look like section.field=value")
        data.setdefault(section, {})[field] = _parse_literal(raw.strip())
    return from_mapping(data, config)


def to_mapping(config: RunConfig) -> dict[str, dict[str, Any]]:
    """The config as nested plain data (JSON/TOML-ready)."""
    return {name: attrs.asdict(getattr(config, name)) for name in SECTIONS}


def to_toml(config: RunConfig) -> str:
    """The config as a TOML document that :func:`load_toml` reads back identically."""
    return sections_to_toml(to_mapping(config))


def sections_to_toml(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """``{section: {key: value}}`` (scalars, strings, lists of them) as a TOML document.

    The one writer of the app's TOML files (run configs, cluster topologies), so both read back
    through ``tomllib`` the same way.
    """
    lines: list[str] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in values.items()]
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _parse_literal(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def validate(config: RunConfig) -> None:
    """Cross-field checks: positive sizes, known choices, groups that fit an engine."""
    run, deck, engine, harness, trainer = (
        config.run,
        config.deck,
        config.engine,
        config.harness,
        config.trainer,
    )
    require(run.seed >= 0, "run.seed", "must be >= 0")
    require(run.updates >= 1, "run.updates", "must be >= 1")
    require(run.max_off_policy >= 0, "run.max_off_policy", "must be >= 0")
    require(run.checkpoint_every >= 1, "run.checkpoint_every", "must be >= 1")
    require(run.keep_checkpoints >= 1, "run.keep_checkpoints", "must be >= 1")
    require(run.max_group_retries >= 0, "run.max_group_retries", "must be >= 0")
    require(run.lookahead_batches >= 0, "run.lookahead_batches", "must be >= 0")
    require(run.pool_eval_every >= 0, "run.pool_eval_every", "must be >= 0 (0 = off)")
    require(
        run.stop_after_zero_gradient >= 0, "run.stop_after_zero_gradient", "must be >= 0 (0 = off)"
    )
    require(run.pool_eval_samples >= 1, "run.pool_eval_samples", "must be >= 1")
    require(run.heldout_eval_samples >= 0, "run.heldout_eval_samples", "must be >= 0 (0 = off)")
    require(run.pool_eval_workers >= 1, "run.pool_eval_workers", "must be >= 1")
    require(deck.pool_size >= 1, "deck.pool_size", "must be >= 1")
    require(deck.groups_per_update >= 1, "deck.groups_per_update", "must be >= 1")
    require(
        deck.groups_per_update <= deck.pool_size,
        "deck.groups_per_update",
        f"{deck.groups_per_update} groups per update cannot be drawn from {deck.pool_size} tasks",
    )
    require(deck.rollouts_per_group >= 2, "deck.rollouts_per_group", "must be >= 2 (advantages)")
    require(
        deck.retire_rule in RETIRE_RULES,
        "deck.retire_rule",
        f"must be one of {RETIRE_RULES}, got {deck.retire_rule!r}",
    )
    require(deck.mastered_groups >= 1, "deck.mastered_groups", "must be >= 1")
    require(deck.hard_consecutive_zero >= 0, "deck.hard_consecutive_zero", "must be >= 0")
    require(
        0.0 <= deck.reactivate_below <= 1.0,
        "deck.reactivate_below",
        "must be in [0, 1] (0 = probes never bring a task back)",
    )
    require(deck.replay_every >= 1, "deck.replay_every", "must be >= 1")
    require(deck.replay_size >= 0, "deck.replay_size", "must be >= 0")
    require(
        deck.source == PROCEDURAL_DECK or deck.source.endswith((".jsonl", ".json")),
        "deck.source",
        f'must be "{PROCEDURAL_DECK}" or the path of a .jsonl or .json file of task rows, '
        f"got {deck.source!r}",
    )
    require(
        deck.issue_style in ISSUE_STYLES,
        "deck.issue_style",
        f"must be one of {ISSUE_STYLES}, got {deck.issue_style!r}",
    )
    require(
        config.sandbox.backend in SANDBOX_BACKENDS,
        "sandbox.backend",
        f"must be one of {SANDBOX_BACKENDS}, got {config.sandbox.backend!r}",
    )
    require(engine.engines >= 1, "engine.engines", "must be >= 1")
    require(engine.capacity >= 1, "engine.capacity", "must be >= 1")
    require(engine.max_resident >= 1, "engine.max_resident", "must be >= 1")
    require(
        min(engine.capacity, engine.max_resident) >= deck.rollouts_per_group,
        "engine.max_resident",
        f"a group of {deck.rollouts_per_group} rollouts does not fit an engine "
        f"(capacity {engine.capacity}, max_resident {engine.max_resident})",
    )
    require(
        engine.routing in ROUTING_POLICIES, "engine.routing", f"must be one of {ROUTING_POLICIES}"
    )
    require(
        engine.routing != "session_hash" or engine.engine_count >= 2,
        "engine.routing",
        "session_hash routing places groups exactly like least_loaded on one engine; "
        "add --set engine.engines=2 for the routing ablation",
    )
    require(engine.max_new_tokens >= 1, "engine.max_new_tokens", "must be >= 1")
    _validate_engine_kind(engine)
    require(harness.max_turns >= 1, "harness.max_turns", "must be >= 1")
    require(harness.observation_chars >= 1, "harness.observation_chars", "must be >= 1")
    require(harness.exec_timeout_s > 0, "harness.exec_timeout_s", "must be > 0")
    require(harness.sandboxes >= 1, "harness.sandboxes", "must be >= 1")
    require(
        harness.max_tokens > engine.max_new_tokens,
        "harness.max_tokens",
        "must exceed engine.max_new_tokens",
    )
    require(trainer.lr > 0, "trainer.lr", "must be > 0")
    require(0 <= trainer.beta1 < 1, "trainer.beta1", "must be in [0, 1)")
    require(0 <= trainer.beta2 < 1, "trainer.beta2", "must be in [0, 1)")
    require(trainer.weight_decay >= 0, "trainer.weight_decay", "must be >= 0")
    require(trainer.grad_clip > 0, "trainer.grad_clip", "must be > 0")
    require(
        trainer.ratio_control in RATIO_CONTROLS,
        "trainer.ratio_control",
        f"must be one of {RATIO_CONTROLS}",
    )
    require(trainer.mask_high > 1, "trainer.mask_high", "must be > 1")
    require(
        trainer.aggregation in AGGREGATIONS, "trainer.aggregation", f"must be one of {AGGREGATIONS}"
    )
    require(trainer.micro_batch_rollouts >= 1, "trainer.micro_batch_rollouts", "must be >= 1")
    require(
        trainer.invalid_reward in INVALID_REWARDS,
        "trainer.invalid_reward",
        f"must be 0.0 or -1.0 (the paper's final recipe), got {trainer.invalid_reward!r}",
    )
    _validate_trainer_kind(config)
    metrics = config.metrics
    require(metrics.kl_by_layer_every >= 0, "metrics.kl_by_layer_every", "must be >= 0 (0: off)")
    require(metrics.kl_by_layer_tokens >= 1, "metrics.kl_by_layer_tokens", "must be >= 1")
    _validate_verdict(config)


def _validate_verdict(config: RunConfig) -> None:
    """The declared windows are ordered inside the run; confidence and margin are shares."""
    verdict = config.verdict
    require(
        0 <= verdict.reference_start < verdict.reference_end,
        "verdict.reference_start",
        "must satisfy 0 <= reference_start < reference_end",
    )
    require(
        verdict.reference_end <= verdict.final_start < 1,
        "verdict.final_start",
        "must satisfy reference_end <= final_start < 1 (the final window is (final_start, 1])",
    )
    require(0 < verdict.confidence < 1, "verdict.confidence", "must lie in (0, 1)")
    require(0 <= verdict.margin < 1, "verdict.margin", "must lie in [0, 1)")


def _validate_trainer_kind(config: RunConfig) -> None:
    """``trainer.kind``/``url``/``timeout_s`` agree; a remote trainer needs HTTP engines."""
    trainer = config.trainer
    require(trainer.kind in TRAINER_KINDS, "trainer.kind", f"must be one of {TRAINER_KINDS}")
    require(trainer.timeout_s > 0, "trainer.timeout_s", "must be > 0")
    if trainer.kind == "inprocess":
        require(not trainer.url, "trainer.url", 'needs trainer.kind = "remote"')
        return
    require(
        trainer.url.startswith(("http://", "https://")) and len(trainer.url) > len("http://"),
        "trainer.url",
        f"a remote trainer needs its http(s) URL, got {trainer.url!r}",
    )
    require(
        config.engine.kind == "http",
        "trainer.kind",
        'a remote trainer needs engine.kind = "http" (engines load the weight files it writes)',
    )


def _validate_engine_kind(engine: Any) -> None:
    """``kind``/``urls``/``launch``/``refresh_mode`` and the HTTP knobs agree."""
    require(engine.kind in ENGINE_KINDS, "engine.kind", f"must be one of {ENGINE_KINDS}")
    require(
        engine.refresh_mode in REFRESH_MODES,
        "engine.refresh_mode",
        f"must be one of {REFRESH_MODES}",
    )
    require(
        engine.weight_transfer in WEIGHT_TRANSFERS,
        "engine.weight_transfer",
        f"must be one of {WEIGHT_TRANSFERS}",
    )
    require(
        engine.kind == "http" or engine.weight_transfer == "reload",
        "engine.weight_transfer",
        'in-process engines take the trainer\'s tensors directly; "nccl" needs engine.kind = "http"',
    )
    require(engine.launch >= 0, "engine.launch", "must be >= 0")
    require(engine.serve_threads >= 1, "engine.serve_threads", "must be >= 1")
    require(engine.timeout_s > 0, "engine.timeout_s", "must be > 0")
    require(engine.startup_timeout_s > 0, "engine.startup_timeout_s", "must be > 0")
    if engine.kind == "inprocess":
        require(not engine.urls, "engine.urls", 'needs engine.kind = "http"')
        require(engine.launch == 0, "engine.launch", 'needs engine.kind = "http"')
        return
    require(
        bool(engine.urls) != (engine.launch > 0),
        "engine.kind",
        "http engines need exactly one of engine.urls (servers already running) or "
        "engine.launch = N (servers this run starts)",
    )
    for url in engine.urls:
        require(
            url.startswith(("http://", "https://")) and len(url) > len("http://"),
            "engine.urls",
            f"{url!r} is not an http(s) URL",
        )
    require(len(set(engine.urls)) == len(engine.urls), "engine.urls", "lists a URL twice")
