"""The cluster's supervisor on real child processes: ready lines and ``/health``, logs under
``RUN/logs/``, the marker, and a stop that leaves no process behind — not even one in a session
of its own (as torchrun starts its ranks). The shared supervisor's own tests: tests/test_process.py."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from arctic_swe._process import READY_LINE, READY_NONE
from arctic_swe.cluster import MARKER, ProcessSpec, marked_pids
from arctic_swe.cluster._supervise import ClusterSupervisor

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
        async with ClusterSupervisor(tmp_path) as supervisor:
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
        supervisor = ClusterSupervisor(tmp_path, grace=2.0)
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


#: A child that appends its name to a file on SIGTERM, then exits (or, ``stay``, keeps running).
ON_TERM = r"""
import signal, sys, time
def note(*_):
    with open(sys.argv[1], "a") as out:
        out.write(sys.argv[2] + "\n")
    if sys.argv[3] != "stay":
        sys.exit(0)
signal.signal(signal.SIGTERM, note)
print("waiting", flush=True)
while True:
    time.sleep(0.1)
"""


def test_the_loop_stops_first_and_a_child_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    notes = tmp_path / "notes"

    def spec(name: str, role: str, then: str) -> ProcessSpec:
        argv = (sys.executable, "-c", ON_TERM, str(notes), name, then)
        return ProcessSpec(name, role, argv)

    async def scenario() -> tuple[list[int | None], list[int]]:
        supervisor = ClusterSupervisor(tmp_path, grace=1.0)
        async with supervisor:
            children = [
                await supervisor.spawn(spec("engine-0", "engine", "stay")),
                await supervisor.spawn(spec("loop", "loop", "exit")),
            ]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and any(
                "waiting" not in c.log.read_text() for c in children
            ):
                await asyncio.sleep(0.05)
        return [c.process.returncode for c in children], marked_pids(supervisor.token)

    codes, left = asyncio.run(scenario())
    assert notes.read_text().splitlines() == ["loop", "engine-0"]  # the loop checkpoints first
    assert codes == [-9, 0]  # the engine ignored SIGTERM: SIGKILL after the grace period
    assert left == []


def test_the_marker_is_the_run_directory(tmp_path: Path) -> None:
    assert MARKER == "ARCTIC_SWE_CLUSTER"
    assert ClusterSupervisor(tmp_path).token == str(tmp_path.resolve())
