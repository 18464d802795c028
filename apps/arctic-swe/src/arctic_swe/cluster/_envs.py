"""Which Python environment each role of a cluster runs in (Arctic-SWE §3.3, §5).

vLLM pins its own ``torch`` and ``transformers``, so the engines and the trainer cannot share
one environment: vLLM lives in its own (``UV_PROJECT_ENVIRONMENT=.venv-vllm uv sync --locked
--package arctic-swe --extra vllm --no-dev``), the trainer in the workspace's
(``uv sync --locked --all-packages --all-extras --no-extra vllm``). The topology names each
role's interpreter (``[engines] python``, ``[trainer] python``; empty: the launcher's own);
the orchestrator loop always runs in the launcher's environment.

:func:`resolve_argv` turns a planned command (``vllm …``, ``arctic-swe …``, ``torchrun …``)
into one that runs in a given environment: the console script next to that interpreter, or
``<python> -m <module>`` when the environment has no such script. :func:`probe` asks an
interpreter, in a subprocess, whether it can play a role (:mod:`._env_probe`), and
:func:`fix_command` says what to run when it cannot.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs

from arctic_swe._process import die_with_parent

#: Console scripts the launcher starts -> the module ``python -m`` runs instead.
MODULES = {
    "arctic-swe": "arctic_swe._cli",
    "torchrun": "torch.distributed.run",
    "vllm": "vllm.entrypoints.cli.main",
}
#: The vLLM release the engines' command lines are written for.
VLLM_SERIES = "0.33."
#: Where the documented environments live (relative to the workspace root).
VLLM_ENV, DEV_ENV = ".venv-vllm", ".venv"
#: What creates each environment (run in the workspace root).
VLLM_SYNC = "uv sync --locked --package arctic-swe --extra vllm --no-dev"
DEV_SYNC = "uv sync --locked --all-packages --all-extras --no-extra vllm"
#: Probe kinds (:mod:`._env_probe`): a vLLM engine, an ``arctic-swe serve`` engine, the trainer.
VLLM, ENGINE, TRAINER = "vllm", "engine", "trainer"
#: Seconds one probe may take (the trainer's builds a tiny model; vLLM's import is slow).
PROBE_TIMEOUT_S = 300.0


def interpreter(python: str) -> str:
    """The interpreter of a role: ``python``, or the launcher's own when it is empty."""
    return python or sys.executable


def resolve_argv(argv: tuple[str, ...] | list[str], python: str = "") -> list[str]:
    """``argv`` with its console-script name replaced by the script of ``python``'s environment
    (empty: the launcher's), else by ``<python> -m <module>`` (:data:`MODULES`).

    The interpreter path is used as given, symlinks unresolved: a virtual environment's
    ``bin/python`` is usually a link to a shared base interpreter, and the scripts live next to
    the link. An ``argv[0]`` that is already a path is returned unchanged.
    """
    name, rest = argv[0], list(argv[1:])
    if "/" in name:
        return [name, *rest]
    python = interpreter(python)
    script = Path(python).parent / name
    if script.is_file():
        return [str(script), *rest]
    if name in MODULES:
        return [python, "-m", MODULES[name], *rest]
    found = shutil.which(name) if python == sys.executable else None
    return [found or name, *rest]


@attrs.frozen
class EnvProbeResult:
    """What :func:`probe` learned: ``ok``, a one-line ``problem`` when not, and the versions
    the environment reported (``python``, ``vllm``, ``torch``, ``transformers`` …)."""

    ok: bool
    problem: str = ""
    versions: dict[str, str] = attrs.field(factory=dict)


def probe_command(python: str, kind: str) -> list[str]:
    """``<python> -c <probe source> <kind>``: runs without ``arctic_swe`` in that env."""
    source = Path(__file__).with_name("_env_probe.py").read_text()
    return [interpreter(python), "-c", source, kind]


async def probe(python: str, kind: str, *, timeout: float = PROBE_TIMEOUT_S) -> EnvProbeResult:
    """Run the ``kind`` probe in ``python`` and read its JSON line; never raises."""
    command = probe_command(python, kind)
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent,  # a killed launcher leaves no probe behind
        )
    except OSError as exc:
        return EnvProbeResult(False, f"cannot run it ({exc.strerror or exc})")
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        return EnvProbeResult(False, f"the {kind} probe took more than {timeout:g} s")
    finally:  # timed out, or preflight interrupted (Ctrl-C): stop the probe now
        if process.returncode is None:
            process.kill()
            await process.wait()
    report = _last_json(out.decode(errors="replace"))
    if report is None:  # the interpreter died before the probe could answer
        tail = err.decode(errors="replace").strip().splitlines()
        why = tail[-1] if tail else f"exit code {process.returncode}"
        return EnvProbeResult(False, f"the {kind} probe failed: {why}")
    versions = {str(k): str(v) for k, v in dict(report.get("versions", {})).items()}
    if not report.get("ok"):
        return EnvProbeResult(False, str(report.get("problem", "unknown failure")), versions)
    if kind == VLLM and not versions.get("vllm", "").startswith(VLLM_SERIES):
        found = versions.get("vllm", "?")
        return EnvProbeResult(False, f"has vllm {found}, not {VLLM_SERIES}x", versions)
    return EnvProbeResult(True, "", versions)


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else None
    return None


def fix_command(python: str, kind: str) -> str:
    """What to run (in the workspace root) so that ``python``'s environment can play ``kind``:
    sync that environment from the lock when the topology names a virtual environment's
    interpreter (``ENV/bin/python``, ``ENV`` a virtual environment or not there yet), else
    create the documented environment and point the topology key at it."""
    sync = VLLM_SYNC if kind == VLLM else DEV_SYNC
    key = "[engines] python" if kind in (VLLM, ENGINE) else "[trainer] python"
    if python:
        env = Path(python).parent.parent
        fresh = not env.exists() or (env / "pyvenv.cfg").is_file()
        if Path(python).parent.name == "bin" and fresh:
            return f"UV_PROJECT_ENVIRONMENT={shlex.quote(str(env))} {sync}"
    default = VLLM_ENV if kind == VLLM else DEV_ENV
    prefix = f"UV_PROJECT_ENVIRONMENT={default} " if default != DEV_ENV else ""
    return f'{prefix}{sync}, then set {key} = "{default}/bin/python"'
