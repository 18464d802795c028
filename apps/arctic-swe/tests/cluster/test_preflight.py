"""Bad input stops ``cluster up`` before anything starts: one ``error:`` line, exit 2, no run
directory written, no process carrying the run's marker."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arctic_swe._cli import main
from arctic_swe.cluster import PreflightError, marked_pids
from arctic_swe.cluster._preflight import check_sandbox
from swe_sandbox import BackendUnavailableError, NamespaceBackend

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


def test_vllm_engines_need_a_gpu(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "vllm-env" / "bin" / "python"  # answers the probe as vLLM 0.33 would
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho \'{"ok": true, "versions": {"vllm": "0.33.0"}}\'\n')
    fake.chmod(0o755)
    engines = f'backend = "vllm"\ncount = 1\ndevices = [40]\nport = 18000\npython = "{fake}"'
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    assert "devices [40]" in err
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
            if self.path == "/v1/models":  # what the loop's engine client asks for by name
                body = b'{"data": [{"id": "arctic-swe", "max_model_len": 32768}]}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
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


def test_engines_by_url_must_serve_the_model_name_the_loop_sends(
    engine: tuple[str, dict[str, Any]],
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, answers = engine
    answers["/v1/models"] = {"data": [{"id": "Qwen/Qwen3.5-4B", "max_model_len": 32768}]}
    config = write_topology(tmp_path, checkpoint, engines=f'count = 0\nurls = ["{url}"]')
    err = _up(config, tmp_path / "run", capsys)
    assert f"engine {url}: serves ['Qwen/Qwen3.5-4B'], not the model name 'arctic-swe'" in err


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


def test_vllm_from_a_launcher_without_vllm_says_what_to_run(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("vllm") is not None or _has("vllm"):
        pytest.skip("this environment has vllm")
    engines = 'backend = "vllm"\ncount = 1\ndevices = [40]\nport = 18000'
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    assert err == (
        f"arctic-swe: error: engines (backend vllm): {sys.executable} cannot run vllm 0.33 "
        "(ModuleNotFoundError: No module named 'vllm'); run instead: "
        "UV_PROJECT_ENVIRONMENT=.venv-vllm uv sync --locked --package arctic-swe --extra vllm "
        '--no-dev, then set [engines] python = ".venv-vllm/bin/python"'
    )


def test_a_missing_interpreter_is_one_typed_line(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = tmp_path / "nowhere" / "bin" / "python"
    config = write_topology(tmp_path, checkpoint, trainer=f'ranks = 1\npython = "{python}"')
    err = _up(config, tmp_path / "run", capsys)
    assert err.startswith(f"arctic-swe: error: trainer: {python} does not exist (trainer.python)")
    assert err.endswith(
        f"run instead: UV_PROJECT_ENVIRONMENT={tmp_path / 'nowhere'} uv sync --locked "
        "--all-packages --all-extras --no-extra vllm"
    )


@pytest.mark.parametrize(
    ("backend", "does"),
    [("vllm", "cannot run vllm 0.33"), ("torch", "cannot run arctic-swe serve")],
)
def test_engines_in_a_bare_second_environment(
    backend: str,
    does: str,
    bare_python: Path,
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    engines = f'backend = "{backend}"\ncount = 1\nport = 18000\npython = "{bare_python}"'
    engines += "\ndevices = [40]" if backend == "vllm" else ""
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    env = bare_python.parent.parent
    assert err.startswith(
        f"arctic-swe: error: engines (backend {backend}): {bare_python} {does} "
        "(ModuleNotFoundError: No module named "
    )
    sync = "--package arctic-swe --extra vllm --no-dev" if backend == "vllm" else "--all-packages"
    assert f"; run instead: UV_PROJECT_ENVIRONMENT={env} uv sync --locked {sync}" in err


def test_a_trainer_in_a_bare_second_environment(
    bare_python: Path, checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_topology(tmp_path, checkpoint, trainer=f'ranks = 1\npython = "{bare_python}"')
    err = _up(config, tmp_path / "run", capsys)
    assert err.startswith(
        f"arctic-swe: error: trainer: {bare_python} cannot run the trainer "
        "(ModuleNotFoundError: No module named 'arctic_swe'); run instead: "
    )


def test_serve_engines_from_a_linked_second_environment_pass(
    linked_python: Path,
    silent_port: int,
    checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the environment check passes, so the next check (a taken port) is the one that fails
    engines = f'count = 1\nport = {silent_port}\npython = "{linked_python}"'
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    assert f"port {silent_port} (engine-0)" in err


def test_max_model_len_beyond_the_checkpoints_positions(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines = "count = 1\nmax_model_len = 131072"  # the tiny checkpoint has 32768 positions
    err = _up(write_topology(tmp_path, checkpoint, engines=engines), tmp_path / "run", capsys)
    assert "engines.max_model_len = 131072 exceeds" in err
    assert "max_position_embeddings = 32768" in err


@pytest.mark.slow
def test_two_real_environments_pass_the_environment_checks(
    linked_python: Path, checkpoint: Path, tmp_path: Path
) -> None:
    import asyncio

    from arctic_swe.cluster._env_checks import check_environments
    from arctic_swe.cluster._envs import ENGINE, TRAINER
    from arctic_swe.cluster._topology import load_cluster

    config = load_cluster(
        write_topology(
            tmp_path,
            checkpoint,
            engines=f'count = 1\npython = "{linked_python}"',
            trainer=f'ranks = 1\npython = "{sys.executable}"',
        )
    )
    asyncio.run(check_environments(config, (ENGINE, TRAINER)))  # raises on a failing role


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_the_preflight_checks_the_named_backend_through_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import swe_sandbox._registry as registry

    class Unavailable(NamespaceBackend):
        def check(self) -> None:
            raise BackendUnavailableError("no engine here")

    monkeypatch.setattr(registry, "_factories", {**registry._factories, "other": Unavailable})
    with pytest.raises(PreflightError, match=r"sandbox\.backend = other: no engine here"):
        check_sandbox("other")
    with pytest.raises(PreflightError, match="unknown sandbox backend 'podman'"):
        check_sandbox("podman")
