"""Sandbox latency benchmark (swe-sandbox).

Per backend: create+prepare latency, ``execute_bash("true")`` round trip, grade latency
(median, p95) — this checkout's grade (`Sandbox.grade`: diff, allowlist policy, a fresh sandbox,
pristine configuration, canaries, sealed tree, the isolated run) interleaved call by call with
the grade of a baseline revision of swe-sandbox (``--baseline-ref``, default the grader before
the allowlist and canaries), run by a worker process that imports that revision's source
(``git archive``), on the same task and backend — and sustained tool calls/s with N concurrent
sandboxes driven from one asyncio loop — each against the raw floor measured in the same run on the same sandboxes: a raw
``docker exec`` of ``true`` (Docker SDK, no wrapper) for the Docker backend, a raw ``nsenter``
of ``true`` into the same namespaces for the namespace backend. Ratios are ours / floor.
For context the namespace/Docker result also holds ``raw_bash_exec_true``: the same raw path
running ``bash -c true`` (what ``execute_bash`` must start), not part of any ratio.

Prints one JSON object as the last stdout line.

    python benchmarks/sandbox_latency.py                 # full: both backends, 32 concurrent
    python benchmarks/sandbox_latency.py --smoke         # seconds: namespace, tiny sizes
    python benchmarks/sandbox_latency.py --backends namespace --grades 30 --baseline-ref REF

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
import sys
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
from swe_sandbox._namespace import NamespaceSession
from swe_sandbox._taskfile import task_to_json

#: The grader before the allowlist-by-role construction and the canaries.
BASELINE_REF = "233487d"
REPO_ROOT = Path(__file__).resolve().parent.parent
#: The baseline worker: imports the baseline revision's swe-sandbox (first on sys.path), makes
#: the same task's sandbox with the gold patch, and grades it once per stdin line, printing
#: ``<seconds> <reward>``; timing covers `Sandbox.grade` only, as on this side.
WORKER = """
import json, sys, time
from swe_sandbox import DockerBackend, NamespaceBackend, Sandbox
from swe_sandbox._taskfile import task_from_json
task = task_from_json(json.loads(sys.argv[2]), "spec")
backend = NamespaceBackend() if sys.argv[1] == "namespace" else DockerBackend()
with Sandbox.create(task, backend) as sandbox:
    sandbox.apply_patch(task.gold_patch)
    sandbox.grade()  # warm, as this side
    print("ready", flush=True)
    for _ in sys.stdin:
        began = time.perf_counter()
        reward = sandbox.grade().reward
        print(time.perf_counter() - began, reward, flush=True)
"""


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


class BaselineGrader:
    """A worker process grading the same task with the baseline revision's swe-sandbox."""

    def __init__(self, source: Path, backend: str, task: TaskSpec) -> None:
        env = {**os.environ, "PYTHONPATH": str(source)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, backend, json.dumps(task_to_json(task))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"baseline worker did not start: {ready!r}")

    def grade(self) -> tuple[float, int]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("grade\n")
        self.process.stdin.flush()
        seconds, reward = self.process.stdout.readline().split()
        return float(seconds), int(reward)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def baseline_source(ref: str, into: Path) -> Path | None:
    """swe-sandbox's source at `ref` (``git archive`` of this repository), importable; ``None``
    where this checkout does not hold `ref` (a shallow clone): the comparison is then skipped."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", ref, "packages/swe-sandbox/src"],
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "packages" / "swe-sandbox" / "src"


def grade_comparison(
    sandbox: Sandbox, backend_name: str, task: TaskSpec, repeats: int, baseline_src: Path | None
) -> dict[str, Any]:
    """This checkout's grade against the baseline's (or alone, said so, without a baseline)."""
    if baseline_src is None:
        grades = timed(sandbox.grade, repeats)
        return {"grade": stats(grades), "grade_baseline": "unavailable: ref not in this clone"}
    baseline = BaselineGrader(baseline_src, backend_name, task)
    try:
        grades, baseline_grades = compare_grades(sandbox, baseline, repeats)
    finally:
        baseline.close()
    ours, theirs = stats(grades), stats(baseline_grades)
    return {
        "grade": ours,
        "grade_baseline": theirs,
        "grade_extra_ms_median": ours["median_ms"] - theirs["median_ms"],
        "grade_extra_ms_p95": ours["p95_ms"] - theirs["p95_ms"],
        "grade_ratio_vs_baseline_median": ours["median_ms"] / theirs["median_ms"],
    }


def compare_grades(
    sandbox: Sandbox, baseline: BaselineGrader, repeats: int
) -> tuple[list[float], list[float]]:
    """This checkout's grade and the baseline's, alternated call by call (both reward 1)."""
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = sandbox.grade()
        ours.append(time.perf_counter() - began)
        assert result.reward == 1, result.reasons
        seconds, reward = baseline.grade()
        assert reward == 1
        theirs.append(seconds)
    return ours, theirs


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


def bench_backend(
    backend: Backend,
    backend_name: str,
    task: TaskSpec,
    size: dict[str, int],
    baseline_src: Path | None,
) -> dict[str, Any]:
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
        sandbox.grade()  # warm: the first grade of a task prepares its git tar
        grading = grade_comparison(sandbox, backend_name, task, size["grades"], baseline_src)
        diffs = timed(sandbox.diff, size["grades"])
    exec_stats, floor_stats = stats(ours), stats(floor)
    return {
        "create_prepare": stats(create),
        "exec_true": exec_stats,
        "raw_exec_true": floor_stats,
        "exec_ratio_vs_raw_median": exec_stats["median_ms"] / floor_stats["median_ms"],
        "raw_bash_exec_true": stats(bash_floor),
        **grading,
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
        "--grades",
        type=int,
        default=20,
        help="grades of each kind (this checkout, baseline), interleaved call by call",
    )
    parser.add_argument(
        "--baseline-ref",
        default=BASELINE_REF,
        help="git revision whose swe-sandbox grader is the baseline "
        f"(default {BASELINE_REF}: the grader before the allowlist and canaries)",
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
        baseline_src = baseline_source(args.baseline_ref, Path(tmp))
        for name in names:
            if name == "namespace" and os.geteuid() != 0:
                results[name] = {"skipped": "needs root"}
                continue
            backend: Backend = NamespaceBackend() if name == "namespace" else DockerBackend()
            results[name] = bench_backend(backend, name, task, size, baseline_src)
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
                "baseline_ref": args.baseline_ref,
                "results": results,
                "image_backed": image_results,
                "loadavg_before": loadavg_before,
                "loadavg_after": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
