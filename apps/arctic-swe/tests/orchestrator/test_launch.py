"""``ServerFleet``: real ``arctic-swe serve`` processes on 127.0.0.1 — started, answering over
HTTP, and always stopped (normal exit, a server that fails to start, a cancelled start)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from arctic_swe.engine import HttpEngine
from arctic_swe.model import build_policy, policy_config, save_policy
from arctic_swe.orchestrator._launch import LaunchError, ServerFleet, ServerSpec, serve_command


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_policy(build_policy(policy_config(96), 0), tmp_path_factory.mktemp("p") / "pol")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
    except OSError:
        return False
    return state != "Z"


def test_serve_command_runs_the_cli_on_localhost_with_a_free_port(tmp_path: Path) -> None:
    argv = serve_command(ServerSpec(tmp_path, capacity=6, threads=2), "http-3")
    flags = dict(zip(argv[4::2], argv[5::2], strict=False))
    assert argv[3] == "serve"
    assert flags == {
        "--model": str(tmp_path),
        "--host": "127.0.0.1",
        "--port": "0",
        "--capacity": "6",
        "--threads": "2",
        "--engine-id": "http-3",
        "--mamba-ssm-cache-dtype": "float32",
    }


@pytest.mark.slow  # 28 s: two server processes; integration test_http_loop launches two and checks none is left
def test_two_servers_answer_over_http_and_stop(policy_dir: Path, tmp_path: Path) -> None:
    async def scenario() -> tuple[tuple[str, ...], tuple[int, ...]]:
        spec = ServerSpec(policy_dir, capacity=4)
        async with ServerFleet(spec, ["a", "b"], tmp_path, startup_timeout=120) as fleet:
            assert len(set(fleet.urls)) == 2
            assert all(url.startswith("http://127.0.0.1:") for url in fleet.urls)
            for url in fleet.urls:
                engine = HttpEngine("probe", url, capacity=4)
                try:
                    assert await engine.health()
                finally:
                    await engine.close()
            pids = fleet.pids
            assert all(_alive(pid) for pid in pids)
        return fleet.urls, pids

    _, pids = asyncio.run(scenario())
    assert not any(_alive(pid) for pid in pids)
    assert {p.name for p in tmp_path.iterdir()} == {"a.log", "b.log"}


def test_a_server_that_cannot_start_is_a_launch_error_and_nothing_is_left(
    policy_dir: Path, tmp_path: Path
) -> None:
    fleet = ServerFleet(
        ServerSpec(tmp_path / "no-such-model", capacity=4), ["bad"], tmp_path, startup_timeout=120
    )

    async def scenario() -> None:
        async with fleet:
            raise AssertionError("must not be reached")

    with pytest.raises(LaunchError, match=r"bad exited with code [1-9].*bad\.log"):
        asyncio.run(scenario())
    assert not any(_alive(pid) for pid in fleet.pids)


def test_cancelling_the_start_leaves_no_server(policy_dir: Path, tmp_path: Path) -> None:
    fleet = ServerFleet(
        ServerSpec(policy_dir, capacity=4), ["x", "y"], tmp_path, startup_timeout=120
    )

    async def scenario() -> None:
        async def enter() -> None:
            async with fleet:
                await asyncio.sleep(3600)

        task = asyncio.ensure_future(enter())
        while len(fleet.servers) < 2:  # both spawned, neither ready yet
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert len(fleet.pids) == 2
    assert not any(_alive(pid) for pid in fleet.pids)
