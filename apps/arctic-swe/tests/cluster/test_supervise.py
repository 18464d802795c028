"""The supervisor on real child processes: ready lines and ``/health``, logs, a child that dies
early, and a stop that leaves no process behind — not even one in a session of its own (as
torchrun starts its ranks)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from arctic_swe.cluster import MARKER, ProcessSpec, marked_pids
from arctic_swe.cluster._plan import READY_LINE, READY_NONE
from arctic_swe.cluster._supervise import ChildFailedError, Supervisor

#: A child serving GET /health on a free port, printing the ready line, then a log line.
SERVER = r"""
import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(json.dumps({"event": "ready", "url": f"http://127.0.0.1:{s.server_port}"}), flush=True)
print("serving", flush=True)
s.serve_forever()
"""
#: A child that starts a grandchild in a new session (its own process group) and waits.
FORKER = r"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print("forked", flush=True)
time.sleep(600)
"""


def _spec(name: str, code: str, ready: str = READY_NONE, role: str = "engine") -> ProcessSpec:
    return ProcessSpec(name, role, (sys.executable, "-c", code), (), ready)


def test_ready_line_health_and_log_then_everything_stops(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, list[int]]:
        async with Supervisor(tmp_path) as supervisor:
            child = await supervisor.spawn(_spec("engine-0", SERVER, READY_LINE))
            url = await supervisor.wait_ready(child, timeout=60)
            assert marked_pids(supervisor.token) == [child.process.pid]
        return url, marked_pids(supervisor.token)

    url, left = asyncio.run(scenario())
    assert url.startswith("http://127.0.0.1:")
    assert left == []
    log = (tmp_path / "logs" / "engine-0.log").read_text()
    assert '"event": "ready"' in log
    assert "serving" in log


def test_a_grandchild_in_its_own_session_is_swept(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, list[int]]:
        supervisor = Supervisor(tmp_path, grace=2.0)
        async with supervisor:
            child = await supervisor.spawn(_spec("trainer", FORKER, role="trainer"))
            deadline = time.monotonic() + 60
            while len(marked_pids(supervisor.token)) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            found = len(marked_pids(supervisor.token))
            assert child.alive
        return found, marked_pids(supervisor.token)

    found, left = asyncio.run(scenario())
    assert found == 2  # the child and its grandchild, both carrying the marker
    assert left == []


def test_a_child_that_exits_before_ready_names_itself_and_its_log(tmp_path: Path) -> None:
    code = "import sys; print('no checkpoint here', file=sys.stderr); sys.exit(3)"

    async def scenario() -> str:
        async with Supervisor(tmp_path) as supervisor:
            child = await supervisor.spawn(_spec("engine-1", code, READY_LINE))
            with pytest.raises(ChildFailedError) as caught:
                await supervisor.wait_ready(child, timeout=60)
            assert caught.value.child is child
            return str(caught.value)

    message = asyncio.run(scenario())
    assert message.startswith("engine-1 exited with code 3")
    assert str(tmp_path / "logs" / "engine-1.log") in message
    assert "no checkpoint here" in message


def test_first_exit_is_the_child_that_died(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with Supervisor(tmp_path, grace=2.0) as supervisor:
            await supervisor.spawn(_spec("long", "import time; time.sleep(600)"))
            await supervisor.spawn(_spec("short", "import time; time.sleep(0.5)"))
            ended = await asyncio.wait_for(supervisor.first_exit(supervisor.children), 60)
            return ended.name

    assert asyncio.run(scenario()) == "short"


def test_the_marker_is_the_run_directory(tmp_path: Path) -> None:
    assert MARKER == "ARCTIC_SWE_CLUSTER"
    assert Supervisor(tmp_path).token == str(tmp_path.resolve())
