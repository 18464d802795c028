"""The progress view tails ``metrics.jsonl`` (whole lines only) and the loop's config gets the
servers' URLs once they are up."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from arctic_swe.cluster import load_cluster
from arctic_swe.cluster._progress import ClusterView
from arctic_swe.cluster._up import loop_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _record(step: int, reward: float) -> str:
    groups = {"http-0": 1, "http-1": 1}
    return json.dumps({"step": step, "reward": reward, "solved_rate": 0.5, "engine_groups": groups})


def test_plain_view_prints_one_line_per_complete_update(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    out = io.StringIO()
    view = ClusterView(3, metrics, Console(file=out, force_terminal=False, width=200))
    with view:
        view.processes(4, 4)
        view.poll()  # no file yet: nothing
        metrics.write_text(_record(1, 0.25) + "\n" + _record(2, 0.5)[:10])  # a half line
        view.poll()
        assert len(view.records) == 1
        with metrics.open("a") as handle:
            handle.write(_record(2, 0.5)[10:] + "\n")
        view.poll()
        view.event("engine-0 ready at http://127.0.0.1:1")
    lines = out.getvalue().splitlines()
    assert [r["step"] for r in view.records] == [1, 2]
    assert "update 1/3 reward 0.250 solved 0.50 engines 2 processes up 4/4" in lines[0]
    assert "update 2/3 reward 0.500" in lines[1]
    assert lines[2].endswith("engine-0 ready at http://127.0.0.1:1")
    assert lines[2].startswith("[")  # stamped with seconds since start


def test_a_resumed_run_shows_only_its_new_updates(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(_record(step, 0.0) + "\n" for step in (1, 2, 3)))
    out = io.StringIO()
    view = ClusterView(4, metrics, Console(file=out, force_terminal=False, width=200))
    view.skip_existing()
    with view:
        view.poll()
        assert len(view.records) == 3
        metrics.write_text(_record(1, 0.0) + "\n" + _record(2, 0.0) + "\n")  # cut back
        view.poll()
        assert len(view.records) == 2
        with metrics.open("a") as handle:
            handle.write(_record(3, 0.75) + "\n" + _record(4, 1.0) + "\n")
        view.poll()
    lines = out.getvalue().splitlines()
    assert [r["step"] for r in view.records] == [1, 2, 3, 4]
    assert len(lines) == 1  # updates 1-3 were shown by the first run
    assert "update 4/4 reward 1.000" in lines[0]


def test_loop_config_points_the_loop_at_the_running_servers() -> None:
    config = load_cluster(CONFIGS / "cpu-cluster.toml")
    loop = loop_config(config, ["http://127.0.0.1:1", "http://127.0.0.1:2"], "http://127.0.0.1:3")
    assert loop.engine.kind == "http"
    assert loop.engine.urls == ("http://127.0.0.1:1", "http://127.0.0.1:2")
    assert loop.engine.launch == 0
    assert (loop.trainer.kind, loop.trainer.url) == ("remote", "http://127.0.0.1:3")
    assert loop.trainer.lr == config.loop.trainer.lr  # the optimizer fields pass through
    in_process = loop_config(config, ["http://127.0.0.1:1"], "")
    assert in_process.trainer.kind == "inprocess"
