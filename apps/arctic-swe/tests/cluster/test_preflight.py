"""Bad input stops ``cluster up`` before anything starts: one ``error:`` line, exit 2, no run
directory written, no process carrying the run's marker."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arctic_swe._cli import main
from arctic_swe.cluster import marked_pids

from .conftest import write_topology

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _up(config: Path, run_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["cluster", "up", str(config), "--run-dir", str(run_dir), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("arctic-swe: error: ")
    assert not run_dir.exists()  # nothing written ...
    assert marked_pids(str(run_dir.resolve())) == []  # ... and nothing started
    return err


def test_a_missing_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_topology(tmp_path, tmp_path / "absent")
    err = _up(config, tmp_path / "run", capsys)
    assert "model.path" in err
    assert "absent" in err
    assert "checkpoint directory not found" in err


def test_a_directory_that_is_not_a_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    err = _up(write_topology(tmp_path, tmp_path / "empty"), tmp_path / "run", capsys)
    assert "config.json" in err
    assert "safetensors" in err


def test_the_b200_placeholder_must_be_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _up(CONFIGS / "b200.toml", tmp_path / "run", capsys)
    assert "model.path is not set" in err
    assert "--model" in err


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", ["silent", "closed"])
def test_an_engine_url_that_does_not_answer(
    kind: str,
    silent_port: int,
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = silent_port if kind == "silent" else _closed_port()
    url = f"http://127.0.0.1:{port}"
    engines = f'count = 0\nurls = ["{url}"]\nhealth_timeout_s = 1.0'
    config = write_topology(tmp_path, checkpoint, engines=engines)
    started = time.monotonic()
    err = _up(config, tmp_path / "run", capsys)
    assert time.monotonic() - started < 15  # the bound, not the loop's 300 s start-up wait
    assert f"engine URL {url} does not answer /health within 1 s" in err


def test_more_cpu_ranks_than_cpus(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ranks = len(os.sched_getaffinity(0)) + 1
    config = write_topology(tmp_path, checkpoint, trainer=f"ranks = {ranks}")
    err = _up(config, tmp_path / "run", capsys)
    assert f"trainer.ranks = {ranks} CPU ranks" in err
    assert "usable CPUs" in err


def test_gpu_ranks_without_the_gpus(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_topology(tmp_path, checkpoint, trainer="ranks = 2\ndevices = [40, 41]")
    err = _up(config, tmp_path / "run", capsys)
    assert "devices [40, 41]" in err
    assert "CUDA devices" in err


def test_vllm_engines_need_the_extra_and_a_gpu(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines = 'backend = "vllm"\ncount = 1\ndevices = [40]\nport = 18000'
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    if shutil.which("vllm") is None:
        assert "arctic-swe[vllm]" in err
    else:
        assert "CUDA devices" in err


def test_a_port_already_in_use(
    silent_port: int, checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines = f"count = 2\nport = {silent_port - 1}"  # engine-1 wants the taken port
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    assert f"port {silent_port} (engine-1)" in err
    assert "in use" in err


def test_a_run_directory_that_holds_a_run(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.toml").write_text("")
    code = main(["cluster", "up", str(write_topology(tmp_path, checkpoint)), "--run-dir", str(run)])
    assert code == 2
    assert "already holds a run" in capsys.readouterr().err
    assert sorted(p.name for p in run.iterdir()) == ["config.toml"]


def test_check_passes_a_good_topology(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the namespace sandbox needs root and unshare")
    assert main(["cluster", "check", str(write_topology(tmp_path, checkpoint))]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_a_checkpoint_without_its_chat_template(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    broken = tmp_path / "no-template"
    shutil.copytree(checkpoint, broken)
    settings = json.loads((broken / "tokenizer_config.json").read_text())
    settings.pop("chat_template", None)
    (broken / "tokenizer_config.json").write_text(json.dumps(settings))
    (broken / "chat_template.jinja").unlink(missing_ok=True)
    err = _up(write_topology(tmp_path, broken), tmp_path / "run", capsys)
    assert "no chat template" in err


@pytest.fixture
def health_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering ``GET /health`` with 200."""
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_check_passes_engines_that_answer(
    health_server: str, checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the namespace sandbox needs root and unshare")
    engines = f'count = 0\nurls = ["{health_server}"]'
    config = write_topology(tmp_path, checkpoint, engines=engines)
    assert main(["cluster", "check", str(config)]) == 0
    assert "ok: " in capsys.readouterr().out


def test_docker_sandboxes_without_a_docker_engine(
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    config = write_topology(tmp_path, checkpoint, sandbox='backend = "docker"\ncapacity = 2')
    err = _up(config, tmp_path / "run", capsys)
    assert err.startswith("arctic-swe: error: sandbox.backend = docker: ")


@pytest.mark.docker
def test_check_passes_docker_sandboxes_with_an_engine(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_topology(tmp_path, checkpoint, sandbox='backend = "docker"\ncapacity = 2')
    assert main(["cluster", "check", str(config)]) == 0
    assert "ok: " in capsys.readouterr().out


def test_resume_needs_a_run(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _up(write_topology(tmp_path, checkpoint), tmp_path / "run", capsys, "--resume")
    assert "nothing to resume" in err
