"""Tests for ``arctic_swe.config._load`` (presets, TOML, overrides, validation)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_swe.config import (
    RunConfig,
    RunConfigError,
    apply_overrides,
    from_mapping,
    load_toml,
    preset,
    to_mapping,
    to_toml,
    validate,
)
from arctic_swe.metrics import FINAL_WINDOW, REFERENCE_WINDOW, VerdictRule

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["tiny", "paper", "tiny-http", "long"])
def test_shipped_toml_files_equal_their_presets(name: str) -> None:
    assert load_toml(CONFIGS / f"{name}.toml") == preset(name)


@pytest.mark.parametrize("name", ["tiny", "paper", "tiny-http", "long"])
def test_shipped_toml_files_spell_out_every_key(name: str) -> None:
    # equal after loading is not enough: a key added to the schema must appear in the file
    text = (CONFIGS / f"{name}.toml").read_text()
    body = "".join(line for line in text.splitlines(True) if not line.startswith("#"))
    assert body == to_toml(preset(name))


def test_paper_preset_has_the_papers_sizes() -> None:
    deck = preset("paper").deck
    assert (deck.pool_size, deck.groups_per_update, deck.rollouts_per_group) == (160, 32, 5)


def test_toml_round_trip_of_every_preset(tmp_path: Path) -> None:
    for name in ("tiny", "paper", "tiny-http", "long"):
        path = tmp_path / f"{name}.toml"
        path.write_text(to_toml(preset(name)))
        assert load_toml(path) == preset(name)


def test_preset_key_in_a_file_selects_the_base(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('preset = "paper"\n[trainer]\nlr = 2e-6\n')
    config = load_toml(path)
    assert config.deck.pool_size == 160
    assert config.trainer.lr == 2e-6


@pytest.mark.parametrize(
    ("assignment", "section", "field", "value"),
    [
        ("trainer.lr=1e-3", "trainer", "lr", 1e-3),
        ("trainer.lr=1", "trainer", "lr", 1.0),
        ("engine.engines=3", "engine", "engines", 3),
        ('trainer.aggregation="rollout_mean"', "trainer", "aggregation", "rollout_mean"),
        ("harness.gated_reward=false", "harness", "gated_reward", False),
        ("run.updates=7", "run", "updates", 7),
        ('deck.issue_style="behaviour"', "deck", "issue_style", "behaviour"),
    ],
)
def test_overrides_set_one_field(assignment: str, section: str, field: str, value: object) -> None:
    config = apply_overrides(RunConfig(), [assignment])
    assert getattr(getattr(config, section), field) == value
    untouched = to_mapping(RunConfig())
    untouched[section].pop(field)
    changed = to_mapping(config)
    changed[section].pop(field)
    assert changed == untouched


@pytest.mark.parametrize(
    ("assignment", "key"),
    [
        ("trainer.lrr=1", "trainer.lrr"),
        ("nosuch.lr=1", "nosuch"),
        ("run.updates=1.5", "run.updates"),
        ('run.updates="3"', "run.updates"),
        ("harness.gated_reward=1", "harness.gated_reward"),
        ("run.updates=0", "run.updates"),
        ("run.stop_after_zero_gradient=-1", "run.stop_after_zero_gradient"),
        ("deck.groups_per_update=17", "deck.groups_per_update"),
        ('deck.retire_rule="sometimes"', "deck.retire_rule"),
        ("deck.mastered_groups=0", "deck.mastered_groups"),
        ("deck.reactivate_below=1.5", "deck.reactivate_below"),
        ("deck.reactivate_below=-0.1", "deck.reactivate_below"),
        ("deck.rollouts_per_group=32", "engine.max_resident"),
        ("engine.routing=random", "engine.routing"),
        ("deck.issue_style=lines", "deck.issue_style"),
        ("trainer.ratio_control=clip", "trainer.ratio_control"),
        ("trainer.lr=-1", "trainer.lr"),
        ("trainer.beta2=1.0", "trainer.beta2"),
        ("trainerlr=1", "trainerlr=1"),
        ("trainer.lr", "trainer.lr"),
    ],
)
def test_bad_overrides_name_the_key(assignment: str, key: str) -> None:
    with pytest.raises(RunConfigError) as excinfo:
        apply_overrides(RunConfig(), [assignment])
    assert excinfo.value.key == key


def test_unknown_preset_and_bad_files(tmp_path: Path) -> None:
    with pytest.raises(RunConfigError, match="unknown preset"):
        preset("huge")
    with pytest.raises(RunConfigError, match="cannot read"):
        load_toml(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[run\nseed=1")
    with pytest.raises(RunConfigError, match="not valid TOML"):
        load_toml(broken)
    with pytest.raises(RunConfigError, match="must be a table"):
        from_mapping({"run": 3})


_INT_FIELDS = [
    (section.name, field.name)
    for section in attrs.fields(RunConfig)
    for field in attrs.fields(section.default.factory)  # type: ignore[union-attr]
    if type(field.default) is int
]


@given(st.sampled_from(_INT_FIELDS), st.integers(min_value=1, max_value=4))
def test_any_int_field_is_overridable_or_rejected_cleanly(
    location: tuple[str, str], value: int
) -> None:
    section, field = location
    try:
        config = apply_overrides(RunConfig(), [f"{section}.{field}={value}"])
    except RunConfigError as exc:
        failed_key = exc.key
    else:
        assert getattr(getattr(config, section), field) == value
        return
    assert failed_key.split(".")[0] in {"run", "deck", "engine", "harness", "trainer"}


#: Valid routing spellings (bare, padded, quoted) mixed in, so the accepting branch is exercised
#: too: arbitrary text alone is almost always rejected.
_ROUTING_VALUES = st.text(max_size=12) | st.sampled_from(
    ["least_loaded", " least_loaded ", '"least_loaded"', "session_hash", "Least_Loaded"]
)


@given(_ROUTING_VALUES)
def test_arbitrary_string_values_never_crash(raw: str) -> None:
    try:
        routing = apply_overrides(RunConfig(), [f"engine.routing={raw}"]).engine.routing
    except RunConfigError as exc:
        routing, failed_key = None, exc.key
    else:
        failed_key = None
    assert failed_key in {None, "engine.routing"}
    assert routing in {None, "least_loaded", "session_hash"}
    if raw.strip().strip('"') == "least_loaded":
        assert routing == "least_loaded"


# ------------------------------------------------------------------ engines as services
def test_tiny_http_preset_is_tiny_with_two_launched_http_engines() -> None:
    http, tiny = preset("tiny-http"), preset("tiny")
    assert (http.engine.kind, http.engine.launch, http.engine.urls) == ("http", 2, ())
    assert http.engine.engine_count == 2
    assert attrs.evolve(http, engine=tiny.engine) == tiny  # nothing else differs
    assert tiny.engine.refresh_mode == "inflight"  # the recipe refreshes under running turns


def test_engine_urls_round_trip_through_toml_and_overrides(tmp_path: Path) -> None:
    urls = ["http://127.0.0.1:8001", "http://10.0.0.2:8000"]
    config = apply_overrides(
        RunConfig(), ["engine.kind=http", f"engine.urls={urls!r}".replace("'", '"')]
    )
    assert config.engine.urls == tuple(urls)
    assert config.engine.engine_count == 2
    path = tmp_path / "c.toml"
    path.write_text(to_toml(config))
    assert load_toml(path) == config


@pytest.mark.parametrize(
    ("assignments", "key", "message"),
    [
        (["engine.kind=grpc"], "engine.kind", "must be one of"),
        (["engine.kind=http"], "engine.kind", "exactly one of engine.urls"),
        (
            ["engine.kind=http", "engine.launch=2", 'engine.urls=["http://a:1"]'],
            "engine.kind",
            "exactly one of",
        ),
        (["engine.launch=2"], "engine.launch", 'needs engine.kind = "http"'),
        (['engine.urls=["http://a:1"]'], "engine.urls", 'needs engine.kind = "http"'),
        (["engine.kind=http", 'engine.urls=["ftp://a"]'], "engine.urls", "not an http(s) URL"),
        (["engine.kind=http", 'engine.urls=["http://a:1", "http://a:1"]'], "engine.urls", "twice"),
        (["engine.kind=http", "engine.urls=3"], "engine.urls", "list of strings"),
        (["engine.kind=http", "engine.launch=-1"], "engine.launch", ">= 0"),
        (["engine.refresh_mode=eager"], "engine.refresh_mode", "must be one of"),
        (["engine.kind=http", "engine.launch=1", "engine.timeout_s=0"], "engine.timeout_s", "> 0"),
        (["engine.engines=1", "engine.routing=session_hash"], "engine.routing", "session_hash"),
        (
            ["engine.kind=http", "engine.launch=1", "engine.routing=session_hash"],
            "engine.routing",
            "session_hash",
        ),
    ],
)
def test_bad_engine_sections_name_the_key(assignments: list[str], key: str, message: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        apply_overrides(RunConfig(), assignments)
    assert str(caught.value).startswith(key)
    assert message in str(caught.value)


@pytest.mark.parametrize("source", ["procedural", "runs/import/tasks.jsonl", "rows.json"])
def test_deck_source_is_procedural_or_a_rows_file(source: str) -> None:
    assert apply_overrides(RunConfig(), [f'deck.source="{source}"']).deck.source == source


@pytest.mark.parametrize("source", ["rows.parquet", "tasks", ""])
def test_other_deck_sources_name_the_key_and_what_is_accepted(source: str) -> None:
    with pytest.raises(RunConfigError, match=r"deck\.source.*\.jsonl or \.json file"):
        validate(apply_overrides(RunConfig(), [f'deck.source="{source}"']))


# ------------------------------------------------------------------ the declared verdict
def test_the_verdict_section_defaults_are_the_metrics_windows() -> None:
    verdict = preset("long").verdict
    assert (verdict.reference_start, verdict.reference_end) == REFERENCE_WINDOW
    assert verdict.final_start == FINAL_WINDOW[0]
    default = VerdictRule(updates=1)
    assert (verdict.confidence, verdict.margin) == (default.confidence, default.margin)


@pytest.mark.parametrize(
    ("assignments", "key"),
    [
        (["verdict.reference_start=-0.1"], "verdict.reference_start"),
        (["verdict.reference_start=0.7"], "verdict.reference_start"),
        (["verdict.final_start=0.5"], "verdict.final_start"),
        (["verdict.final_start=1.0"], "verdict.final_start"),
        (["verdict.confidence=1.0"], "verdict.confidence"),
        (["verdict.confidence=0"], "verdict.confidence"),
        (["verdict.margin=-0.01"], "verdict.margin"),
        (["verdict.margin=1.0"], "verdict.margin"),
    ],
)
def test_bad_verdict_sections_name_the_key(assignments: list[str], key: str) -> None:
    with pytest.raises(RunConfigError) as info:
        apply_overrides(RunConfig(), assignments)
    assert info.value.key == key


def test_a_verdict_may_declare_other_windows() -> None:
    config = apply_overrides(
        RunConfig(), ["verdict.reference_start=0.5", "verdict.reference_end=0.75",
                      "verdict.final_start=0.8", "verdict.margin=0"]
    )  # fmt: skip
    assert (config.verdict.reference_end, config.verdict.final_start) == (0.75, 0.8)
