"""The app's supervisor on real child processes: readiness, a child that dies early (its exit
code and log tail in a typed error), the first exit, and stops that escalate to SIGKILL."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from arctic_swe._process import (
    READY_LINE,
    READY_NONE,
    ChildFailedError,
    ProcessSpec,
    Supervisor,
    last_line,
    ready_url,
)

#: Ignores SIGTERM, says so, then sleeps: only SIGKILL stops it.
STUBBORN = r"""
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("stubborn", flush=True)
time.sleep(600)
"""


def _spec(name: str, code: str, ready: str = READY_NONE) -> ProcessSpec:
    return ProcessSpec(name, "engine", (sys.executable, "-c", code), (), ready)


def test_a_child_that_exits_before_ready_names_itself_and_its_log(tmp_path: Path) -> None:
    code = "import sys; print('no checkpoint here', file=sys.stderr); sys.exit(3)"

    async def scenario() -> str:
        async with Supervisor(tmp_path / "logs") as supervisor:
            child = await supervisor.spawn(_spec("engine-1", code, READY_LINE))
            with pytest.raises(ChildFailedError) as caught:
                await supervisor.wait_ready(child, timeout=60)
            assert caught.value.child is child
            return str(caught.value)

    message = asyncio.run(scenario())
    assert message.startswith("engine-1 exited with code 3")
    assert str(tmp_path / "logs" / "engine-1.log") in message
    assert "no checkpoint here" in message
    assert message.endswith("before it was ready")


def test_a_silent_child_times_out_naming_its_log(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with Supervisor(tmp_path, grace=2.0) as supervisor:
            child = await supervisor.spawn(
                _spec("mute", "import time; time.sleep(600)", READY_LINE)
            )
            with pytest.raises(ChildFailedError) as caught:
                await supervisor.wait_ready(child, timeout=0.5)
            return str(caught.value)

    assert (
        asyncio.run(scenario()) == f"mute was not ready within 0.5 s; see {tmp_path / 'mute.log'}"
    )


def test_first_exit_is_the_child_that_died(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with Supervisor(tmp_path, grace=2.0) as supervisor:
            await supervisor.spawn(_spec("long", "import time; time.sleep(600)"))
            await supervisor.spawn(_spec("short", "import time; time.sleep(0.5)"))
            ended = await asyncio.wait_for(supervisor.first_exit(supervisor.children), 60)
            return ended.name

    assert asyncio.run(scenario()) == "short"


@pytest.mark.parametrize("new_session", [True, False])
def test_stop_escalates_to_sigkill_after_the_grace_period(
    tmp_path: Path, new_session: bool
) -> None:
    async def scenario() -> int | None:
        async with Supervisor(tmp_path, grace=0.5, new_session=new_session) as supervisor:
            child = await supervisor.spawn(_spec("stubborn", STUBBORN))
            while "stubborn" not in child.log.read_text():
                await asyncio.sleep(0.05)
        assert not child.alive
        return child.process.returncode

    assert asyncio.run(scenario()) == -9


def test_environment_and_ready_line_reach_the_child_and_its_log(tmp_path: Path) -> None:
    code = (
        "import json, os; "
        "print(json.dumps({'event': 'ready', 'url': 'http://x:' + os.environ['PORT_HINT']}))"
    )

    async def scenario() -> str:
        supervisor = Supervisor(tmp_path, env={"PORT_HINT": "7"})
        async with supervisor:
            child = await supervisor.spawn(_spec("c", code, READY_LINE))
            url = await asyncio.wait_for(child.ready_line, 60)
            await child.process.wait()
        return url

    assert asyncio.run(scenario()) == "http://x:7"
    assert json.loads(last_line(tmp_path / "c.log"))["url"] == "http://x:7"


def test_ready_url_accepts_only_an_http_url_in_a_json_object() -> None:
    assert ready_url(b'{"event": "ready", "url": "http://127.0.0.1:5"}\n') == "http://127.0.0.1:5"
    assert ready_url(b'{"url": "ftp://x"}') is None
    assert ready_url(b"[1]") is None
    assert ready_url(b"\xff") is None


def test_shell_line_puts_the_environment_first() -> None:
    spec = ProcessSpec("e", "engine", ("vllm", "serve", "a b"), (("CUDA_VISIBLE_DEVICES", "0"),))
    assert spec.shell_line() == "CUDA_VISIBLE_DEVICES=0 vllm serve 'a b'"
