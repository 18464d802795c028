"""Preflight of each role's environment (Arctic-SWE §3.3, §5): the interpreter exists, and a
probe run by it (:mod:`._env_probe`) shows it can play the role — vLLM 0.33.x for vLLM
engines, ``arctic_swe`` with torch for ``arctic-swe serve`` engines, ``arctic_swe`` plus a
Qwen3.5 patch that applies to that environment's ``transformers`` for the trainer.

A failure is one :class:`RoleEnvironmentError` line naming the role, the interpreter and the
command to run instead (:func:`arctic_swe.cluster._envs.fix_command`).
"""

from __future__ import annotations

import asyncio
import os

import attrs

from arctic_swe.cluster._envs import ENGINE, TRAINER, VLLM, fix_command, interpreter, probe
from arctic_swe.cluster._errors import RoleEnvironmentError
from arctic_swe.cluster._topology import ClusterConfig

#: What each probe kind means in the error line.
_DOES = {VLLM: "cannot run vllm 0.33", ENGINE: "cannot run arctic-swe serve", TRAINER: "cannot "
         "run the trainer"}  # fmt: skip


@attrs.frozen
class RoleEnv:
    """One role this node starts and the environment it runs in: ``label`` for messages,
    the topology ``key`` of its interpreter, ``python`` as configured (``""``: the
    launcher's), and the probe ``kind``."""

    label: str
    key: str
    python: str
    kind: str

    @property
    def interpreter(self) -> str:
        return interpreter(self.python)

    def error(self, problem: str) -> RoleEnvironmentError:
        return RoleEnvironmentError(
            self.label, self.interpreter, problem, fix_command(self.python, self.kind)
        )


def role_envs(config: ClusterConfig) -> list[RoleEnv]:
    """The roles this node starts (engines on node 0 unless given by URL; trainer ranks)."""
    e, t = config.engines, config.trainer
    roles: list[RoleEnv] = []
    if e.count and not e.urls and t.node_rank == 0:
        kind = VLLM if e.backend == "vllm" else ENGINE
        roles.append(RoleEnv(f"engines (backend {e.backend})", "engines.python", e.python, kind))
    if t.ranks:
        roles.append(RoleEnv("trainer", "trainer.python", t.python, TRAINER))
    return roles


def check_interpreters(config: ClusterConfig) -> None:
    """Every configured interpreter is an executable file (cheap; before any probe)."""
    for role in role_envs(config):
        if role.python and not os.path.isfile(role.python):
            raise role.error(f"does not exist ({role.key})")
        if role.python and not os.access(role.python, os.X_OK):
            raise role.error(f"is not executable ({role.key})")


async def check_environments(config: ClusterConfig, kinds: tuple[str, ...]) -> None:
    """Probe the roles of ``kinds`` at once (each distinct interpreter and kind once); the
    first failing role, in role order, raises."""
    roles = [role for role in role_envs(config) if role.kind in kinds]
    results = await asyncio.gather(*(probe(role.python, role.kind) for role in roles))
    for role, result in zip(roles, results, strict=True):
        if not result.ok:
            raise role.error(f"{_DOES[role.kind]} ({result.problem})")
