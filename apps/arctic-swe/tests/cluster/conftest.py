"""A real tiny checkpoint directory (Qwen3.5 config, safetensors, tokenizer with the chat
template, from ``arctic-swe model init``) and topology files written next to it."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arctic_swe.model import init_checkpoint


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``arctic-swe model init`` writes (the tiny preset, the Qwen3.5 chat template)."""
    return init_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny")


def write_topology(folder: Path, model: Path | str, **sections: str) -> Path:
    """A small CPU topology; ``sections`` replace whole sections by TOML text."""
    parts = {
        "model": f'path = "{model}"',
        "engines": "count = 2\ncapacity = 4",
        "trainer": "ranks = 0",
        "sandbox": "capacity = 2",
        "deck": "pool_size = 2\ngroups_per_update = 1\nrollouts_per_group = 2",
        "engine": "max_resident = 4",
    }
    parts.update(sections)
    path = folder / "topology.toml"
    path.write_text("".join(f"[{name}]\n{body}\n\n" for name, body in parts.items()))
    return path


def make_venv(folder: Path, *, link_to_this_environment: bool = False) -> Path:
    """A real virtual environment (``python -m venv``, no pip) and its interpreter. Bare, it has
    only the standard library; linked, a ``.pth`` line adds this environment's site-packages
    (and the editable installs listed there), so the workspace's packages import from it."""
    import subprocess
    import sys
    import sysconfig

    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120
    )
    python = folder / "bin" / "python"
    if link_to_this_environment:
        here = sysconfig.get_paths()["purelib"]
        there = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()  # fmt: skip
        (Path(there) / "link-to-dev.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    return python


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a second, empty environment (no arctic_swe, no torch, no vllm)."""
    return make_venv(tmp_path_factory.mktemp("envs") / "bare")


@pytest.fixture(scope="session")
def linked_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a second environment that sees this one's packages (no vllm)."""
    return make_venv(tmp_path_factory.mktemp("envs") / "linked", link_to_this_environment=True)


@pytest.fixture
def engine() -> Iterator[tuple[str, dict[str, Any]]]:
    """A fake engine whose ``/health``, ``/v1/models`` and ``/server_info`` answer what
    ``answers`` holds (anything else: 404)."""
    answers: dict[str, Any] = {
        "/health": {},
        "/v1/models": {"object": "list", "data": [{"id": "arctic-swe", "max_model_len": 4096}]},
    }

    class Engine(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            if path not in answers or (path == "/server_info" and query != "config_format=json"):
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps(answers[path]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", answers
    finally:
        server.shutdown()
        server.server_close()
