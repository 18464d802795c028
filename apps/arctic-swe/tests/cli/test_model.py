"""Tests for ``arctic_swe.cli._model``: ``arctic-swe model init`` writes a checkpoint that
``model check`` and ``arctic-swe serve`` accept; bad input is one ``error:`` line, exit 2."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from arctic_swe._cli import main


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("cli") / "tiny-qwen35"
    assert main(["model", "init", str(target), "--seed", "1"]) == 0
    return target


def test_init_then_check(written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "check", str(written)]) == 0
    shown = capsys.readouterr().out
    assert "qwen3_coder" in shown
    assert "Qwen3_5ForCausalLM" in shown


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["model", "check", "{root}/absent"], "checkpoint directory not found"),
        (["model", "check", "{root}/empty"], "no config.json; no *.safetensors weights"),
        (["model", "init", "{root}/busy"], "exists and is not empty"),
    ],
)
def test_bad_input_is_one_error_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "f").write_text("x")
    assert main([a.format(root=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("arctic-swe: error: ")
    assert message in err
    assert len(err.splitlines()) == 1


def test_serve_takes_the_checkpoint(written: Path, tmp_path: Path) -> None:
    """``arctic-swe serve --model DIR`` on an initialised checkpoint answers a completion."""
    command = [sys.executable, "-m", "arctic_swe._cli", "serve", "--model", str(written)]
    with (tmp_path / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [*command, "--port", "0", "--threads", "1"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or ()], daemon=True).start()
    try:
        ready = json.loads(lines.get(timeout=120))
        assert ready["event"] == "ready", ready
        body = {
            "model": "arctic-swe",
            "prompt": [1, 5, 9],
            "max_tokens": 4,
            "seed": 0,
            "return_token_ids": True,
        }
        reply = httpx.post(f"{ready['url']}/v1/completions", json=body, timeout=60).json()
        assert 1 <= len(reply["choices"][0]["token_ids"]) <= 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)
