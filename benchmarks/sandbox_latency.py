"""Sandbox latency benchmark (swe-sandbox).

Per backend: create+prepare latency, ``execute_bash("true")`` round trip, grade latency
(median, p95) — the fresh-environment grade (`Sandbox.grade`: diff, policy, a new sandbox, the
isolated run) interleaved with the in-place grade it replaced (graded tests restored into the
agent's own sandbox and the plugin run there), with the extra cost per grade — and sustained tool calls/s with N concurrent sandboxes driven from one asyncio
loop — each against the raw floor measured in the same run on the same sandboxes: a raw
``docker exec`` of ``true`` (Docker SDK, no wrapper) for the Docker backend, a raw ``nsenter``
of ``true`` into the same namespaces for the namespace backend. Ratios are ours / floor.
For context the namespace/Docker result also holds ``raw_bash_exec_true``: the same raw path
running ``bash -c true`` (what ``execute_bash`` must start), not part of any ratio.

Prints one JSON object as the last stdout line.

    python benchmarks/sandbox_latency.py                 # full: both backends, 32 concurrent
    python benchmarks/sandbox_latency.py --smoke         # seconds: namespace, tiny sizes

Image-backed part (``image_backed``): the same per-backend figures for a task whose
environment is an image built by `build_env_image` (the base's Python plus `six`, which its
test imports), and `--concurrent` such sandboxes created at once (create+prepare and one
command each: median, p95, failures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from swe_sandbox import (
    Backend,
    DockerBackend,
    EnvSpec,
    NamespaceBackend,
    RepoSource,
    Sandbox,
    SandboxError,
    SandboxPool,
    TaskSpec,
    build_env_image,
)
from swe_sandbox._docker_backend import DockerSession
from swe_sandbox._grader import PLUGIN_MODULE, PLUGIN_SOURCE, parse_report
from swe_sandbox._namespace import NamespaceSession
from swe_sandbox._prepare import prepare_repo
from swe_sandbox._results import reward_contract


def make_task(root: Path, environment: str | None = None) -> TaskSpec:
    """A small plain-tree task: one bug, one graded test file, its fix as the gold patch.

    With an `environment` the test also imports `six`, which only the environment has.
    """
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("def inc(x):\n    return x + 2\n")
    header = (
        "import six  # noqa: F401  (only the environment image has it)\n" if environment else ""
    )
    (root / "test_pkg.py").write_text(
        header + "from pkg import inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n"
    )
    gold = (
        "--- a/pkg/__init__.py\n+++ b/pkg/__init__.py\n@@ -1,2 +1,2 @@\n"
        " def inc(x):\n-    return x + 2\n+    return x + 1\n"
    )
    return TaskSpec(
        instance_id="bench-inc-env" if environment else "bench-inc",
        repo=RepoSource.directory(root),
        environment=environment,
        graded_files=("test_pkg.py",),
        fail_to_pass=("test_pkg.py::test_inc",),
        gold_patch=gold,
        test_command="python3 -m pytest -q -p no:cacheprovider test_pkg.py",
    )


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": statistics.median(ordered) * 1e3, "p95_ms": p95 * 1e3, "n": len(ordered)}


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return samples


def interleaved(
    first: Callable[[], object], second: Callable[[], object], repeats: int
) -> tuple[list[float], list[float]]:
    """Alternate the two measurements call by call."""
    one: list[float] = []
    two: list[float] = []
    for _ in range(repeats):
        one += timed(first, 1)
        two += timed(second, 1)
    return one, two


def raw_exec(sandbox: Sandbox, program: tuple[str, ...] = ("/bin/true",)) -> Callable[[], object]:
    """The floor: the same command with nothing of ours around it."""
    session = sandbox._live()
    if isinstance(session, DockerSession):
        container = session._container
        assert container is not None
        command = ["true"] if program == ("/bin/true",) else list(program)
        return lambda: container.exec_run(command)
    assert isinstance(session, NamespaceSession)
    argv = [
        "nsenter",
        "-t",
        str(session._init_pid),
        "-m",
        "-p",
        "-n",
        "-i",
        "-u",
        "-r",
        "-w",
        "--",
        *program,
    ]
    return lambda: subprocess.run(argv, check=True)


def in_place_grade(sandbox: Sandbox, task: TaskSpec) -> int:
    """The grade this package used to do: in the agent's own sandbox (restore, run, read)."""
    sandbox.kill_agent_processes()
    installed = sandbox.run_internal(
        f"mkdir -p /grader/plugin /grader/r && cat > /grader/plugin/{PLUGIN_MODULE}.py"
        " && chmod -R a+rX /grader && chmod 0733 /grader/r",
        user="root",
        stdin=PLUGIN_SOURCE.encode(),
    )
    assert installed.ok, installed.output
    restore = prepare_repo(task).restore_files
    sandbox.restore(restore)
    env = {"SWE_SANDBOX_REPORT": "/grader/r/report.jsonl", "PYTEST_ADDOPTS": f"-p {PLUGIN_MODULE}"}
    run = sandbox.run_internal(task.test_command, env=env)
    sandbox.kill_agent_processes()
    raw = sandbox.run_internal("cat /grader/r/report.jsonl; rm -rf /grader/r", user="root")
    sandbox.restore(dict.fromkeys(restore))  # withheld again
    report = parse_report(raw.output.splitlines())
    reward, _ = reward_contract(
        report.outcomes,
        task.fail_to_pass,
        task.pass_to_pass,
        run.exit_code,
        report_found=report.exit_status is not None,
        collection_error=bool(report.collection_errors),
    )
    return reward


def throughput(backend: Backend, task: TaskSpec, sandboxes: int, calls: int) -> dict[str, float]:
    """Sustained tool calls/s: `sandboxes` concurrent sandboxes, `calls` each, one event loop."""

    async def main() -> tuple[float, float]:
        async with SandboxPool(backend, max_concurrency=sandboxes) as pool:
            handles = await asyncio.gather(*(pool.acquire(task) for _ in range(sandboxes)))

            async def agent(handle: Any) -> None:
                for _ in range(calls):
                    await handle.execute_bash("true")

            began = time.perf_counter()
            await asyncio.gather(*(agent(h) for h in handles))
            ours = time.perf_counter() - began
            floors = [raw_exec(h.sync) for h in handles]
            with ThreadPoolExecutor(sandboxes) as threads:
                began = time.perf_counter()
                list(threads.map(lambda f: [f() for _ in range(calls)], floors))
                raw = time.perf_counter() - began
            for handle in handles:
                await pool.release(handle)
        return ours, raw

    ours, raw = asyncio.run(main())
    total = sandboxes * calls
    return {
        "sandboxes": sandboxes,
        "calls": total,
        "calls_per_s": total / ours,
        "raw_calls_per_s": total / raw,
        "ratio_vs_raw": (total / raw) / (total / ours),
    }


def bench_backend(backend: Backend, task: TaskSpec, size: dict[str, int]) -> dict[str, Any]:
    create = timed(lambda: Sandbox.create(task, backend).close(), size["creates"])
    with Sandbox.create(task, backend) as sandbox:
        sandbox.execute_bash("true")  # warm caches
        # Interleaved, so that load from other jobs on the machine hits both series alike.
        ours, floor = interleaved(
            lambda: sandbox.execute_bash("true"), raw_exec(sandbox), size["execs"]
        )
        # Context, not the target: what `bash -c true` alone costs through the same raw path
        # (execute_bash must start a bash; the floor above starts only /bin/true).
        _, bash_floor = interleaved(
            lambda: sandbox.execute_bash("true"),
            raw_exec(sandbox, ("/bin/bash", "-c", "true")),
            size["execs"] // 2,
        )
        sandbox.apply_patch(task.gold_patch)

        def fresh() -> None:
            result = sandbox.grade()
            assert result.reward == 1, result.reasons

        def in_place() -> None:
            assert in_place_grade(sandbox, task) == 1

        fresh()  # warm: the first grade of a task prepares its git tar
        grades, in_place_grades = interleaved(fresh, in_place, size["grades"])
        diffs = timed(sandbox.diff, size["grades"])
    exec_stats, floor_stats = stats(ours), stats(floor)
    fresh_stats, place_stats = stats(grades), stats(in_place_grades)
    return {
        "create_prepare": stats(create),
        "exec_true": exec_stats,
        "raw_exec_true": floor_stats,
        "exec_ratio_vs_raw_median": exec_stats["median_ms"] / floor_stats["median_ms"],
        "raw_bash_exec_true": stats(bash_floor),
        "grade": fresh_stats,
        "grade_in_place": place_stats,
        "grade_extra_ms_median": fresh_stats["median_ms"] - place_stats["median_ms"],
        "grade_extra_ms_p95": fresh_stats["p95_ms"] - place_stats["p95_ms"],
        "grade_ratio_vs_in_place_median": fresh_stats["median_ms"] / place_stats["median_ms"],
        "diff": stats(diffs),
        "throughput": throughput(backend, task, size["concurrent"], size["calls"]),
    }


#: The environment image of the image-backed part: the base's Python plus `six` (a wheel from
#: the host's pip download); built once per machine, then a content-hash cache hit.
BENCH_ENV = EnvSpec(name="bench-env", requirements=("six==1.16.0",))


def bench_env_image(build: bool) -> str | None:
    """The benchmark's environment image tag; ``None`` when it is not built and `build` is off."""
    client = DockerBackend().client
    tag = build_env_image(BENCH_ENV, client=client) if build else None
    if tag is None:
        found = client.images.list(filters={"label": "swe-sandbox.env=bench-env"})
        tag = found[0].tags[0] if found and found[0].tags else None
    return tag


def concurrent_image_backed(backend: Backend, task: TaskSpec, sandboxes: int) -> dict[str, Any]:
    """`sandboxes` image-backed sandboxes created at once, each running one command: latency of
    create+prepare and of the command (median, p95) and how many failed."""

    async def main() -> tuple[list[float], list[float], int, float]:
        creates: list[float] = []
        execs: list[float] = []
        failures = 0
        async with SandboxPool(backend, max_concurrency=sandboxes) as pool:

            async def one() -> None:
                nonlocal failures
                began = time.perf_counter()
                try:
                    handle = await pool.acquire(task)
                except Exception:
                    failures += 1
                    return
                creates.append(time.perf_counter() - began)
                try:
                    began = time.perf_counter()
                    done = await handle.execute_bash("python3 -c 'import six'")
                    execs.append(time.perf_counter() - began)
                    failures += 0 if done.ok else 1
                finally:
                    await pool.release(handle)

            began = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(sandboxes)))
            wall = time.perf_counter() - began
        return creates, execs, failures, wall

    creates, execs, failures, wall = asyncio.run(main())
    return {
        "sandboxes": sandboxes,
        "create_prepare": stats(creates) if creates else None,
        "exec_import_six": stats(execs) if execs else None,
        "failures": failures,
        "wall_s": wall,
    }


def bench_image_backed(backend: Backend, task: TaskSpec, size: dict[str, int]) -> dict[str, Any]:
    """Create+prepare, exec round trip (against the raw floor) and grade of a task whose
    environment is an image, then the concurrent run."""
    Sandbox.create(task, backend).close()  # warm: the namespace backend exports the rootfs once
    create = timed(lambda: Sandbox.create(task, backend).close(), size["creates"])
    with Sandbox.create(task, backend) as sandbox:
        sandbox.execute_bash("true")
        ours, floor = interleaved(
            lambda: sandbox.execute_bash("true"), raw_exec(sandbox), size["execs"]
        )
        sandbox.apply_patch(task.gold_patch)

        def grade() -> None:
            result = sandbox.grade()
            assert result.reward == 1, result.reasons

        grade()
        grades = timed(grade, size["grades"])
    exec_stats, floor_stats = stats(ours), stats(floor)
    return {
        "create_prepare": stats(create),
        "exec_true": exec_stats,
        "raw_exec_true": floor_stats,
        "exec_ratio_vs_raw_median": exec_stats["median_ms"] / floor_stats["median_ms"],
        "grade": stats(grades),
        "concurrent": concurrent_image_backed(backend, task, size["image_concurrent"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    parser.add_argument(
        "--backends",
        default=None,
        help="comma list of namespace,docker (default: both; smoke: namespace)",
    )
    parser.add_argument("--concurrent", type=int, default=32, help="concurrent sandboxes")
    parser.add_argument(
        "--image-backed",
        choices=["auto", "yes", "no"],
        default="auto",
        help="also measure tasks on an environment image (built with build_env_image: one "
        "docker build on a fresh machine). auto: yes, except with --smoke where it runs only "
        "if the image is already built",
    )
    parser.add_argument(
        "--grades", type=int, default=20, help="grades of each kind (fresh, in place), interleaved"
    )
    args = parser.parse_args()
    size = (
        {"creates": 2, "execs": 10, "grades": 2, "concurrent": 2, "calls": 3, "image_concurrent": 2}
        if args.smoke
        else {
            "creates": 10,
            "execs": 200,
            "grades": args.grades,
            "concurrent": args.concurrent,
            "calls": 20,
            "image_concurrent": args.concurrent,
        }
    )
    loadavg_before = os.getloadavg()
    names = (args.backends or ("namespace" if args.smoke else "namespace,docker")).split(",")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        task = make_task(Path(tmp) / "repo")
        for name in names:
            if name == "namespace" and os.geteuid() != 0:
                results[name] = {"skipped": "needs root"}
                continue
            backend: Backend = NamespaceBackend() if name == "namespace" else DockerBackend()
            results[name] = bench_backend(backend, task, size)
        image_results: dict[str, Any] = {}
        if args.image_backed != "no":
            try:
                tag = bench_env_image(build=args.image_backed == "yes" or not args.smoke)
            except SandboxError as exc:  # no engine here: say so, measure the rest
                tag, image_results["skipped"] = None, f"{type(exc).__name__}: {exc}"
            if tag is None:
                image_results.setdefault("skipped", "environment image not built")
            else:
                env_task = make_task(Path(tmp) / "env-repo", environment=tag)
                for name in names:
                    if name == "namespace" and os.geteuid() != 0:
                        continue
                    backend = NamespaceBackend() if name == "namespace" else DockerBackend()
                    image_results[name] = bench_image_backed(backend, env_task, size)
    print(
        json.dumps(
            {
                "benchmark": "sandbox_latency",
                "smoke": args.smoke,
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
                "sizes": size,
                "results": results,
                "image_backed": image_results,
                "loadavg_before": loadavg_before,
                "loadavg_after": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
