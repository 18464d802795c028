"""The topology TOML: presets parse, every bad field is one typed error, and a config written
by ``cluster_to_toml`` reads back equal (hypothesis)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from arctic_swe.cluster import (
    ClusterConfig,
    ClusterConfigError,
    EnginesSpec,
    ModelSpec,
    SandboxSpec,
    TrainerSpec,
    cluster_from_mapping,
    cluster_to_toml,
    load_cluster,
    with_overrides,
)
from arctic_swe.config import RunConfigError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_cpu_preset_is_two_torch_engines_and_a_two_rank_cpu_trainer() -> None:
    config = load_cluster(CONFIGS / "cpu-cluster.toml")
    assert (config.engines.backend, config.engines.count, config.engines.devices) == (
        "torch",
        2,
        (),
    )
    assert (config.trainer.ranks, config.trainer.devices) == (2, ())
    assert config.sandbox == SandboxSpec("namespace", 4)
    assert config.loop.engine.kind == "http"
    assert config.loop.engine.launch == 2
    assert config.loop.engine.capacity == config.engines.capacity
    assert config.loop.harness.sandboxes == 4
    assert config.loop.run.updates == 3


def test_b200_preset_is_the_papers_node() -> None:
    config = load_cluster(CONFIGS / "b200.toml")
    assert config.engines.backend == "vllm"
    assert config.engines.devices == (2, 3, 4, 5, 6, 7)
    assert config.trainer.devices == (0, 1)
    assert config.trainer.ranks == 2
    assert config.sandbox.backend == "docker"
    assert config.model.path == ""  # a placeholder the user must set
    # each role's documented environment, relative to the directory `cluster up` runs in
    assert config.engines.python == str(Path.cwd() / ".venv-vllm" / "bin" / "python")
    assert config.trainer.python == str(Path.cwd() / ".venv" / "bin" / "python")
    deck = config.loop.deck
    assert (deck.pool_size, deck.groups_per_update, deck.rollouts_per_group) == (160, 32, 5)


def _minimal(**sections: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"model": {"path": "ckpt"}, "engines": {"count": 2}}
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return data


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (_minimal(engines={"gpus": 2}), "engines.gpus"),
        (_minimal(model={"tokenizer": "x"}), "model.tokenizer"),
        (_minimal(trainer={"rank": 2}), "trainer.rank"),
        (_minimal(deck={"directory": "x"}), "deck.directory"),
        ({**_minimal(), "cluster": {}}, "cluster"),
        (_minimal(engines={"count": "2"}), "engines.count"),
        (_minimal(engines={"count": True}), "engines.count"),
        (_minimal(trainer={"devices": ["0"]}), "trainer.devices"),
        (_minimal(engines={"backend": "sglang"}), "engines.backend"),
        (_minimal(engines={"urls": ["http://a:1"]}), "engines.count"),  # both count and urls
        (_minimal(engines={"backend": "vllm", "port": 8000}), "engines.devices"),
        (_minimal(trainer={"ranks": 2, "devices": [0]}), "trainer.devices"),
        (_minimal(trainer={"nnodes": 2}), "trainer.rdzv_endpoint"),
        (_minimal(trainer={"node_rank": 1}), "trainer.node_rank"),
        (_minimal(sandbox={"backend": "podman"}), "sandbox.backend"),
        (_minimal(engine={"kind": "inprocess"}), "engine.kind"),
        (_minimal(engine={"urls": []}), "engine.urls"),
        (_minimal(trainer={"url": "http://x"}), "trainer.url"),
        (_minimal(harness={"sandboxes": 3}), "harness.sandboxes"),
        (_minimal(trainer={"lr": -1.0}), "trainer.lr"),  # the loop's own validation
        (_minimal(engines={"python": 3}), "engines.python"),
        (_minimal(engines={"python": ["/usr/bin/python3"]}), "engines.python"),
        (_minimal(trainer={"ranks": 1, "python": True}), "trainer.python"),
        (_minimal(engines={"python": "/"}), "engines.python"),  # a directory
        (_minimal(engines={"count": 0, "urls": ["http://a:1"], "python": "p"}), "engines.python"),
        (_minimal(trainer={"ranks": 0, "python": "p"}), "trainer.python"),  # in-process
    ],
)
def test_a_bad_field_is_one_typed_error_naming_it(data: dict[str, Any], key: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        cluster_from_mapping(data)
    assert caught.value.key == key
    assert "\n" not in str(caught.value)


def test_the_topology_error_is_a_run_config_error_subclass() -> None:
    with pytest.raises(ClusterConfigError):
        cluster_from_mapping(_minimal(engines={"count": -1}))


def test_bad_toml_and_a_missing_file_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("[engines\ncount = 2\n")
    for path in (tmp_path / "bad.toml", tmp_path / "absent.toml"):
        with pytest.raises(ClusterConfigError) as caught:
            load_cluster(path)
        assert caught.value.key == "config"


def test_interpreters_resolve_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").symlink_to("/bin/sh")  # a venv's link: kept as is
    config = cluster_from_mapping(
        _minimal(engines={"python": "env/bin/python"}, trainer={"ranks": 1, "python": "~/py"})
    )
    assert config.engines.python == str(tmp_path / "env" / "bin" / "python")
    assert config.trainer.python == str(tmp_path / "home" / "py")  # existence: a preflight check
    assert cluster_from_mapping(_minimal()).engines.python == ""  # the launcher's own
    again = cluster_from_mapping(tomllib.loads(cluster_to_toml(config)))
    assert (again.engines.python, again.trainer.python) == (
        config.engines.python,
        config.trainer.python,
    )


def test_a_directory_as_interpreter_says_which_file_to_give(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    with pytest.raises(ClusterConfigError) as caught:
        cluster_from_mapping(_minimal(engines={"python": str(tmp_path / "env")}))
    assert caught.value.key == "engines.python"
    assert f"{tmp_path / 'env'}/bin/python" in str(caught.value)


def test_overrides_are_validated_again() -> None:
    config = cluster_from_mapping(_minimal())
    assert with_overrides(config, updates=3).loop.run.updates == 3
    assert with_overrides(config, model="m").model == ModelSpec("m")
    with pytest.raises(ClusterConfigError):
        with_overrides(config, node_rank=1)  # one node: rank 1 does not exist


_devices = st.lists(st.integers(0, 15), max_size=4, unique=True).map(tuple)


@st.composite
def _configs(draw: st.DrawFn) -> ClusterConfig:
    vllm = draw(st.booleans())
    count = draw(st.integers(1, 4))
    urls = draw(st.booleans())
    engine_devices = tuple(range(8, 8 + count)) if vllm and not urls else ()
    engines = EnginesSpec(
        backend="vllm" if vllm else "torch",
        count=0 if urls else count,
        urls=tuple(f"http://node{i}:{8000 + i}" for i in range(count)) if urls else (),
        devices=engine_devices,
        threads=draw(st.integers(1, 8)),
        capacity=draw(st.integers(8, 128)),
        port=draw(st.integers(1, 60000)) if vllm else draw(st.sampled_from([0, 9000])),
        gpu_memory_utilization=draw(st.floats(0.1, 1.0)),
        max_model_len=draw(st.integers(0, 1 << 17)),
        python="" if urls else draw(st.sampled_from(["", "/opt/vllm env/bin/python"])),
    )
    nnodes = draw(st.integers(1, 3))
    ranks = draw(st.integers(1, 4))
    trainer = TrainerSpec(
        ranks=ranks,
        devices=draw(st.sampled_from([(), tuple(range(ranks))])),
        nnodes=nnodes,
        node_rank=draw(st.integers(0, nnodes - 1)),
        rdzv_endpoint="head:29400" if nnodes > 1 else draw(st.sampled_from(["", "head:1"])),
        port=draw(st.integers(0, 65535)),
        threads=draw(st.integers(1, 16)),
        python=draw(st.sampled_from(["", "/opt/dev/bin/python3.11"])),
    )
    sandbox = SandboxSpec(draw(st.sampled_from(["namespace", "docker"])), draw(st.integers(1, 64)))
    model = ModelSpec(draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]))))
    base = cluster_from_mapping(_minimal())
    config = ClusterConfig(model, engines, trainer, sandbox, draw(st.sampled_from(["d", "a b"])))
    loop = base.loop
    loop = attrs.evolve(loop, run=attrs.evolve(loop.run, updates=draw(st.integers(1, 500))))
    return attrs.evolve(config, loop=loop)


@given(_configs())
def test_written_toml_reads_back_equal(config: ClusterConfig) -> None:
    text = cluster_to_toml(config)
    again = cluster_from_mapping(tomllib.loads(text))
    assert again.model == config.model
    assert again.engines == config.engines
    assert again.trainer == config.trainer
    assert again.sandbox == config.sandbox
    assert again.deck_dir == config.deck_dir
    assert again.loop.run == config.loop.run
    assert again.loop.trainer == config.loop.trainer
    assert cluster_to_toml(again) == text


@given(
    st.sampled_from(["model", "engines", "trainer", "sandbox", "deck", "run", "metrics"]),
    st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12),
)
def test_unknown_keys_are_refused_in_every_section(section: str, key: str) -> None:
    config = cluster_from_mapping(_minimal())
    known = set(tomllib.loads(cluster_to_toml(config)).get(section, {}))
    assume(key not in known)
    with pytest.raises(RunConfigError) as caught:
        cluster_from_mapping(_minimal(**{section: {key: 1}}))
    assert caught.value.key == f"{section}.{key}"


@pytest.mark.parametrize(
    ("body", "key", "detail"),
    [
        ("[engines]\nnope = 1\n", "engines.nope", "unknown key; expected one of ["),
        ("[engines]\ncount = 2\ndevices = [0, true]\n", "engines.devices", "list of integers"),
        ("[trainer]\nranks = 2\nlr = -1.0\n", "trainer.lr", "must be > 0"),  # the loop's check
        ("[run]\nupdates = 1.5\n", "run.updates", "must be int"),
    ],
)
def test_errors_in_a_topology_file_name_the_file_and_the_key(
    tmp_path: Path, body: str, key: str, detail: str
) -> None:
    path = tmp_path / "topology.toml"
    path.write_text(body)
    with pytest.raises(ClusterConfigError) as caught:  # the loop's sections too: one type
        load_cluster(path)
    assert (caught.value.key, caught.value.source) == (key, str(path))
    assert str(caught.value).startswith(f"{path}: {key}: ")
    assert detail in caught.value.detail
