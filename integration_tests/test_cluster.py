"""``arctic-swe cluster up`` end to end on 127.0.0.1: real ``arctic-swe serve`` engines, the
torchrun trainer, the loop — and every way it can end (completion, a dead process, SIGINT,
SIGTERM) leaves no process of the run behind (scanned by the marker every child carries)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arctic_swe.cluster import MARKER, marked_pids

ROOT = Path(__file__).resolve().parents[1]
CPU_CLUSTER = ROOT / "apps" / "arctic-swe" / "configs" / "cpu-cluster.toml"
ARCTIC_SWE = str(Path(sys.executable).with_name("arctic-swe"))
#: Five fresh interpreters import torch on a shared 2-core machine: generous bounds.
RUN_TIMEOUT_S = 900

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the namespace sandbox needs root and unshare",
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Qwen3.5 policy of ``arctic-swe model init`` (real chat template, tokenizer)."""
    from arctic_swe.model import init_checkpoint

    return init_checkpoint(tmp_path_factory.mktemp("model") / "tiny-qwen35")


class Launcher:
    """``arctic-swe cluster up`` as a child of the test, its stderr collected line by line."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.run_dir = cwd / "run"
        self.process = subprocess.Popen(
            [ARCTIC_SWE, "cluster", "up", *args, "--run-dir", str(self.run_dir)],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = RUN_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} in the launcher's output: {self.lines[-20:]}")

    def finish(self, timeout: float = RUN_TIMEOUT_S) -> int:
        code = self.process.wait(timeout)
        self._reader.join(10)
        return code

    def leftovers(self) -> list[int]:
        return marked_pids(str(self.run_dir.resolve()))

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in self.leftovers():  # never leave a failed test's processes running
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[type[Launcher]]:
    started: list[Launcher] = []

    class Tracked(Launcher):
        def __init__(self, *args: str) -> None:
            super().__init__(tmp_path, *args)
            started.append(self)

    yield Tracked
    for launcher in started:
        launcher.kill()


def _env_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if b"=" in item)


@pytest.mark.slow  # heavy (CI time); nox -s nightly runs it
def test_cpu_cluster_runs_three_updates_on_two_engines_and_two_ranks(
    launch: type[Launcher], tiny_model: Path
) -> None:
    launcher = launch(str(CPU_CLUSTER), "--model", str(tiny_model), "--updates", "3")
    code = launcher.finish()
    assert code == 0, launcher.lines[-20:]
    records = [json.loads(line) for line in (launcher.run_dir / "metrics.jsonl").open()]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert all(r["trainer_world_size"] == 2 for r in records)
    engines = {engine for r in records for engine in r["engine_groups"]}
    assert len(engines) == 2  # both engines generated
    table = json.loads((launcher.run_dir / "cluster" / "processes.json").read_text())
    assert [row["name"] for row in table] == ["engine-0", "engine-1", "trainer", "loop"]
    assert all((launcher.run_dir / "logs" / f"{row['name']}.log").is_file() for row in table)
    assert launcher.leftovers() == []


@pytest.mark.slow  # heavy (CI time); nox -s nightly runs it
def test_cpu_cluster_refreshes_engines_over_the_nccl_protocol(
    launch: type[Launcher], tiny_model: Path, tmp_path: Path
) -> None:
    """The same cluster with ``engine.weight_transfer = "nccl"``: every refresh goes through
    vLLM's weight-transfer routes, rank 0 broadcasting over gloo (the GPU node's code path)."""
    topology = tmp_path / "nccl.toml"
    text = CPU_CLUSTER.read_text().replace("[engine]\n", '[engine]\nweight_transfer = "nccl"\n', 1)
    assert 'weight_transfer = "nccl"' in text
    topology.write_text(text)
    launcher = launch(str(topology), "--model", str(tiny_model), "--updates", "3")
    code = launcher.finish()
    assert code == 0, launcher.lines[-20:]
    records = [json.loads(line) for line in (launcher.run_dir / "metrics.jsonl").open()]
    assert [r["step"] for r in records] == [1, 2, 3]
    loop_config = (launcher.run_dir / "cluster" / "loop.toml").read_text()
    assert 'weight_transfer = "nccl"' in loop_config
    # rank 0 broadcast versions 1..3 into both engines' groups (its log: one line per send)
    trainer_log = (launcher.run_dir / "logs" / "trainer.log").read_text().splitlines()
    sent = [json.loads(line) for line in trainer_log if '"weights_sent"' in line]
    assert sorted((s["engine_id"], s["version"]) for s in sent) == [
        (f"http-{e}", v) for e in range(2) for v in (1, 2, 3)
    ]
    assert launcher.leftovers() == []


@pytest.mark.slow  # heavy (CI time); nox -s nightly runs it
def test_killing_trainer_rank_1_stops_the_whole_cluster(
    launch: type[Launcher], tiny_model: Path
) -> None:
    launcher = launch(str(CPU_CLUSTER), "--model", str(tiny_model), "--updates", "50")
    launcher.wait_for("started loop")
    ranks = [pid for pid in launcher.leftovers() if _env_of(pid).get("LOCAL_RANK") == "1"]
    assert len(ranks) == 1, ranks
    os.kill(ranks[0], signal.SIGKILL)
    code = launcher.finish()
    assert code == 1  # a runtime failure (the error line names the process)
    last = launcher.lines[-1]
    assert last.startswith("arctic-swe: error: trainer exited with code")
    assert str(launcher.run_dir / "logs" / "trainer.log") in last
    assert launcher.leftovers() == []


@pytest.mark.parametrize(("signum", "expected"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_launcher_stops_every_process(
    launch: type[Launcher], tiny_model: Path, signum: int, expected: int
) -> None:
    launcher = launch(str(CPU_CLUSTER), "--model", str(tiny_model))
    launcher.wait_for("started trainer")
    assert len(launcher.leftovers()) >= 3  # two engines and torchrun, at least
    launcher.process.send_signal(signum)
    assert launcher.finish(120) == expected
    assert launcher.leftovers() == []
    assert MARKER not in os.environ  # the scan looked for the run's own marker only


@pytest.mark.slow
def test_killing_an_engine_stops_the_whole_cluster(
    launch: type[Launcher], tiny_model: Path
) -> None:
    launcher = launch(str(CPU_CLUSTER), "--model", str(tiny_model), "--updates", "50")
    launcher.wait_for("started loop")
    table = json.loads((launcher.run_dir / "cluster" / "processes.json").read_text())
    engine = next(row for row in table if row["name"] == "engine-1")
    os.kill(engine["pid"], signal.SIGKILL)
    assert launcher.finish() == 1  # a runtime failure (the error line names the process)
    assert launcher.lines[-1].startswith("arctic-swe: error: engine-1 was killed by SIGKILL; see ")
    assert launcher.leftovers() == []


@pytest.mark.slow
def test_a_stopped_cluster_resumes_where_it_stopped(
    launch: type[Launcher], tiny_model: Path
) -> None:
    first = launch(str(CPU_CLUSTER), "--model", str(tiny_model), "--updates", "2")
    assert first.finish() == 0, first.lines[-20:]
    again = launch(str(CPU_CLUSTER), "--model", str(tiny_model), "--updates", "3", "--resume")
    assert again.finish() == 0, again.lines[-20:]
    records = [json.loads(line) for line in (again.run_dir / "metrics.jsonl").open()]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert records[-1]["trainer_world_size"] == 2
    assert again.leftovers() == []
