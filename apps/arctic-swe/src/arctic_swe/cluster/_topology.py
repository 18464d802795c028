"""The cluster topology: one TOML file describing every process of a run (Arctic-SWE §3.3).

Four topology sections sit next to the loop's own sections of :mod:`arctic_swe.config`::

    [model]    path                      local Hugging Face checkpoint dir (+ tokenizer, template)
    [engines]  backend, count | urls, …  inference servers (torch: arctic-swe serve; vllm)
               python                    the engines' interpreter (empty: the launcher's)
    [trainer]  ranks, devices, nnodes, … torchrun topology, plus the loop's optimizer fields
               python                    the trainer's interpreter (empty: the launcher's)
    [sandbox]  backend, capacity         namespace | docker sandboxes, how many at once
    [deck]     dir, plus the loop's deck fields
    [run] [engine] [harness] [metrics]   the loop's sections, unchanged

Mixed sections (``[trainer]``, ``[deck]``, ``[sandbox]``) are split here: the topology keys
become a frozen record, the rest goes to :func:`arctic_swe.config.from_mapping`, which refuses
unknown keys exactly as ``arctic-swe overfit`` does. Keys the launcher itself sets
(``engine.kind``, ``engine.urls``, ``trainer.url`` …) are refused with a pointer to the
topology key that owns them.

``engines.python`` and ``trainer.python`` name the interpreter of the environment a role runs
in (vLLM pins its own ``torch``/``transformers``; see :mod:`arctic_swe.cluster._envs`). A
relative path is taken relative to the current directory — the directory ``cluster up`` runs
in, as ``model.path`` and ``deck.dir`` are — and stored absolute; ``~`` is expanded; symlinks
are kept (a virtual environment's ``bin/python`` is a link). Whether the file exists is a
preflight check, so that ``--dry-run`` of a preset prints its lines on any machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from arctic_swe._backends import SANDBOX_BACKENDS
from arctic_swe.config import (
    SECTIONS,
    RunConfig,
    RunConfigError,
    check_sections,
    config_errors,
    from_mapping,
    read_toml,
    require,
    sections_to_toml,
    split_known,
    to_mapping,
    update_record,
    validate,
)

ENGINE_BACKENDS = ("torch", "vllm")


class ClusterConfigError(RunConfigError):
    """A broken topology file: unknown section or key, wrong type, impossible topology.

    ``key`` names the offending ``section.field``; raised before any process starts.
    """


@attrs.frozen
class ModelSpec:
    """The policy: a local Hugging Face checkpoint directory (config.json, safetensors,
    tokenizer files with the chat template). Empty means "not set" (the b200 preset)."""

    path: str = ""


@attrs.frozen
class EnginesSpec:
    """The inference engines: ``count`` servers this launcher starts, or ``urls`` of servers
    already running elsewhere (multi-node). ``port`` 0 lets each torch server pick a free
    port; vLLM needs a fixed one (engine ``i`` listens on ``port + i``)."""

    backend: str = "torch"
    count: int = 2
    urls: tuple[str, ...] = ()
    devices: tuple[int, ...] = ()  # vllm: one CUDA device per engine
    threads: int = 1  # torch: CPU threads of each server
    capacity: int = 16  # sequences resident at once per engine (vllm: --max-num-seqs)
    host: str = "127.0.0.1"
    port: int = 0
    gpu_memory_utilization: float = 0.85  # vllm only
    max_model_len: int = 0  # 0: the checkpoint's max_position_embeddings
    health_timeout_s: float = 5.0  # preflight bound for engines given by URL
    python: str = ""  # the engines' interpreter ("": the launcher's own)


@attrs.frozen
class TrainerSpec:
    """The trainer's torchrun topology. ``devices`` empty: CPU ranks (gloo); else the CUDA
    devices of this node's ranks (nccl). ``rdzv_endpoint`` empty: ``--standalone``."""

    ranks: int = 2  # ranks on this node (torchrun --nproc-per-node)
    devices: tuple[int, ...] = ()
    nnodes: int = 1
    node_rank: int = 0
    rdzv_endpoint: str = ""  # host:port of the c10d rendezvous (multi-node)
    rdzv_id: str = "arctic-swe"
    host: str = "127.0.0.1"  # rank 0's HTTP address
    port: int = 0  # 0: a free port, printed in the ready line
    threads: int = 1  # torch CPU threads per rank (OMP_NUM_THREADS)
    python: str = ""  # the ranks' interpreter ("": the launcher's own)


@attrs.frozen
class SandboxSpec:
    """Where the agent's tools run and how many sandboxes at once (``harness.sandboxes``)."""

    backend: str = "namespace"
    capacity: int = 8


@attrs.frozen
class ClusterConfig:
    """The whole topology plus the loop's configuration (``loop.engine`` is ``kind = "http"``
    with ``launch = engine count``; the launcher swaps in the URLs once servers are up)."""

    model: ModelSpec = attrs.field(factory=ModelSpec)
    engines: EnginesSpec = attrs.field(factory=EnginesSpec)
    trainer: TrainerSpec = attrs.field(factory=TrainerSpec)
    sandbox: SandboxSpec = attrs.field(factory=SandboxSpec)
    deck_dir: str = "runs/deck"
    loop: RunConfig = attrs.field(factory=RunConfig)

    @property
    def engine_count(self) -> int:
        return len(self.engines.urls) or self.engines.count


#: Topology section -> its record class.
_RECORDS: dict[str, type] = {
    "model": ModelSpec,
    "engines": EnginesSpec,
    "trainer": TrainerSpec,
    "sandbox": SandboxSpec,
}
#: Loop keys the launcher sets itself -> the topology key that owns them.
_OWNED = {
    "engine.kind": "engines.backend / engines.urls",
    "engine.urls": "engines.urls",
    "engine.launch": "engines.count",
    "engine.engines": "engines.count",
    "engine.capacity": "engines.capacity",
    "engine.serve_threads": "engines.threads",
    "trainer.kind": "trainer.ranks",
    "trainer.url": "trainer.host / trainer.port",
    "harness.sandboxes": "sandbox.capacity",
}


def load_cluster(path: str | Path) -> ClusterConfig:
    """Read and validate a topology file; :class:`ClusterConfigError` names the file and the
    bad key."""
    with config_errors(ClusterConfigError, source=path):
        data = read_toml(path)
        return cluster_from_mapping(data)


def cluster_from_mapping(data: Mapping[str, Any]) -> ClusterConfig:
    """Split ``data`` into topology records and the loop's config; validate both."""
    with config_errors(ClusterConfigError):
        return _from_mapping(data)


def _from_mapping(data: Mapping[str, Any]) -> ClusterConfig:
    check_sections(data, sorted(set(_RECORDS) | set(SECTIONS)))
    loop_data: dict[str, dict[str, Any]] = {
        name: dict(data.get(name, {})) for name in SECTIONS if name in data
    }
    records: dict[str, Any] = {}
    for name, record in _RECORDS.items():
        loop_data.pop(name, None)
        own, rest = split_known(record, data.get(name, {}))
        if name not in SECTIONS:  # only a loop section may carry other keys
            own, rest = {**own, **rest}, {}
        records[name] = update_record(name, record(), own)
        if "python" in own:
            python = interpreter_path(f"{name}.python", records[name].python)
            records[name] = attrs.evolve(records[name], python=python)
        if rest:
            loop_data[name] = rest
    deck_dir = loop_data.get("deck", {}).pop("dir", "runs/deck")
    require(
        isinstance(deck_dir, str) and bool(deck_dir),
        "deck.dir",
        f"must be a non-empty string, got {deck_dir!r}",
    )
    for section, values in loop_data.items():
        for key in values:
            owner = _OWNED.get(f"{section}.{key}")
            require(owner is None, f"{section}.{key}", f"is set by the launcher; use {owner}")
    config = ClusterConfig(deck_dir=deck_dir, **records)
    _validate(config)
    loop = from_mapping(_merge(loop_data, _loop_topology(config)))
    return attrs.evolve(config, loop=loop)


def interpreter_path(key: str, value: str) -> str:
    """``value`` as an absolute interpreter path (relative: to the current directory; ``~``
    expanded; symlinks kept), ``""`` left empty; a directory is refused."""
    if not value:
        return ""
    path = os.path.abspath(os.path.expanduser(value))
    require(
        not os.path.isdir(path),
        key,
        f"{value!r} is a directory; give its interpreter, e.g. {value.rstrip('/')}/bin/python",
    )
    return path


def _validate(config: ClusterConfig) -> None:
    """Topology checks that need no machine: sizes, choices, devices per engine."""
    e, t, s = config.engines, config.trainer, config.sandbox
    require(e.backend in ENGINE_BACKENDS, "engines.backend", f"must be one of {ENGINE_BACKENDS}")
    require(e.count >= 0, "engines.count", "must be >= 0")
    require(
        (e.count > 0) != bool(e.urls),
        "engines.count",
        "give exactly one of engines.count (servers this launcher starts) or engines.urls "
        "(servers already running); set count = 0 with urls",
    )
    for url in e.urls:
        require(url.startswith(("http://", "https://")), "engines.urls", f"{url!r} is not a URL")
    require(len(set(e.urls)) == len(e.urls), "engines.urls", "lists a URL twice")
    require(e.threads >= 1, "engines.threads", "must be >= 1")
    require(e.capacity >= 1, "engines.capacity", "must be >= 1")
    require(
        e.port >= 0 and e.port + max(e.count - 1, 0) <= 65535,
        "engines.port",
        "engine ports (port + i) must be in [0, 65535]",
    )
    require(0 < e.gpu_memory_utilization <= 1, "engines.gpu_memory_utilization", "in (0, 1]")
    require(e.max_model_len >= 0, "engines.max_model_len", "must be >= 0")
    require(e.health_timeout_s > 0, "engines.health_timeout_s", "must be > 0")
    if e.backend == "vllm" and e.count:
        require(
            len(e.devices) == e.count,
            "engines.devices",
            f"vllm needs one CUDA device per engine: {e.count} engines, {len(e.devices)} devices",
        )
        require(e.port > 0, "engines.port", "vllm needs a fixed first port (engine i: port + i)")
    if e.backend == "torch":
        require(not e.devices, "engines.devices", "the torch backend serves on CPU; leave []")
    require(len(set(e.devices)) == len(e.devices), "engines.devices", "lists a device twice")
    require(t.ranks >= 0, "trainer.ranks", "must be >= 0 (0: the loop's in-process trainer)")
    require(
        not t.devices or len(t.devices) == t.ranks,
        "trainer.devices",
        f"one CUDA device per rank: {t.ranks} ranks, {len(t.devices)} devices",
    )
    require(len(set(t.devices)) == len(t.devices), "trainer.devices", "lists a device twice")
    require(
        not set(t.devices) & set(e.devices),
        "trainer.devices",
        f"devices {sorted(set(t.devices) & set(e.devices))} are also given to engines",
    )
    require(t.nnodes >= 1, "trainer.nnodes", "must be >= 1")
    require(0 <= t.node_rank < t.nnodes, "trainer.node_rank", f"must be in [0, {t.nnodes})")
    require(
        t.nnodes == 1 or ":" in t.rdzv_endpoint,
        "trainer.rdzv_endpoint",
        "a multi-node trainer needs the rendezvous as host:port",
    )
    require(0 <= t.port <= 65535, "trainer.port", "must be in [0, 65535]")
    require(t.threads >= 1, "trainer.threads", "must be >= 1")
    require(t.ranks > 0 or t.nnodes == 1, "trainer.ranks", "an in-process trainer is one node")
    require(
        not e.python or not e.urls,
        "engines.python",
        "engines given by engines.urls are not started here; leave python empty",
    )
    require(
        not t.python or t.ranks > 0,
        "trainer.python",
        "the in-process trainer (ranks = 0) runs in the loop, in the launcher's environment; "
        "leave python empty",
    )
    require(s.backend in SANDBOX_BACKENDS, "sandbox.backend", f"must be one of {SANDBOX_BACKENDS}")
    require(s.capacity >= 1, "sandbox.capacity", "must be >= 1")


def _loop_topology(config: ClusterConfig) -> dict[str, dict[str, Any]]:
    """The loop keys the topology implies (validated by the loop's own loader)."""
    engine: dict[str, Any] = {
        "kind": "http",
        "capacity": config.engines.capacity,
        "serve_threads": config.engines.threads,
    }
    if config.engines.urls:
        engine["urls"] = list(config.engines.urls)
    else:
        engine["launch"] = config.engines.count  # swapped for the URLs once servers are up
    topology: dict[str, dict[str, Any]] = {
        "engine": engine,
        "harness": {"sandboxes": config.sandbox.capacity},
    }
    if "sandbox" in SECTIONS:  # a run config with its own [sandbox] section takes the backend
        topology["sandbox"] = {"backend": config.sandbox.backend}
    return topology


def _merge(
    base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    merged = {name: dict(values) for name, values in base.items()}
    for name, values in extra.items():
        merged.setdefault(name, {}).update(values)
    return merged


def with_overrides(
    config: ClusterConfig,
    *,
    updates: int | None = None,
    model: str | None = None,
    node_rank: int | None = None,
) -> ClusterConfig:
    """``config`` with the command line's overrides (``None``: keep), validated again."""
    if updates is not None:
        run = attrs.evolve(config.loop.run, updates=updates)
        config = attrs.evolve(config, loop=attrs.evolve(config.loop, run=run))
    if model is not None:
        config = attrs.evolve(config, model=ModelSpec(path=model))
    if node_rank is not None:
        config = attrs.evolve(config, trainer=attrs.evolve(config.trainer, node_rank=node_rank))
    with config_errors(ClusterConfigError):
        _validate(config)
        validate(config.loop)
    return config


def cluster_to_toml(config: ClusterConfig) -> str:
    """The topology as TOML that :func:`load_cluster` reads back to an equal config."""
    sections: dict[str, dict[str, Any]] = {
        name: attrs.asdict(getattr(config, name)) for name in _RECORDS
    }
    loop = to_mapping(config.loop)
    for name, values in loop.items():
        values = {k: v for k, v in values.items() if f"{name}.{k}" not in _OWNED}
        if name == "engine":
            values = {k: v for k, v in values.items() if k not in ("kind", "urls", "launch")}
        if name == "sandbox":
            values = {k: v for k, v in values.items() if k != "backend"}
        sections.setdefault(name, {}).update(values)
    sections["deck"] = {"dir": config.deck_dir, **sections.get("deck", {})}
    return sections_to_toml(sections)
