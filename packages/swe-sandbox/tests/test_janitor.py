"""Guaranteed cleanup when the owner dies by SIGKILL: nothing survives the janitor (both
backends). The namespace backend's processes die with the owner on their own (the init's
keep-alive pipe closes); its host-side leftovers and Docker containers are reaped by label /
owner file at the next start-up."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from sandbox_testkit.leaks import leftovers, processes_with

from swe_sandbox import Backend, DockerBackend, TaskSpec

OWNER = """
import sys, time
from swe_sandbox import DockerBackend, NamespaceBackend, RepoSource, Sandbox, TaskSpec
backend = DockerBackend() if sys.argv[1] == "docker" else NamespaceBackend()
task = TaskSpec(instance_id="orphan", repo=RepoSource.directory(sys.argv[2]),
                base_commit=sys.argv[3], test_command="python3 -m pytest")
sandbox = Sandbox.create(task, backend)
sandbox.execute_bash("setsid sleep 86395 >/dev/null 2>&1 &")
print(sandbox._live().sandbox_id, flush=True)
time.sleep(600)
"""


def test_sigkilled_owner_leaves_nothing_after_the_janitor(
    backend: Backend, toy_task: TaskSpec
) -> None:
    name = "docker" if isinstance(backend, DockerBackend) else "namespace"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, name, toy_task.repo.location, str(toy_task.base_commit)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        sandbox_id = owner.stdout.readline().strip()
        assert sandbox_id, "the owner did not start its sandbox"
        assert processes_with("sleep 86395")
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    if name == "docker":  # the owner-death watchdog removes the container by itself
        deadline = time.monotonic() + 60
        while leftovers(backend, sandbox_id) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert leftovers(backend, sandbox_id) == []
        assert processes_with("sleep 86395") == []
        return
    assert leftovers(backend, sandbox_id)  # the owner died without cleaning up
    if name == "namespace":  # the init's pipe closed: the kernel killed the PID namespace
        deadline = time.monotonic() + 10
        while processes_with("sleep 86395") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_with("sleep 86395") == []
    assert backend.reap_orphans() >= 1
    assert leftovers(backend, sandbox_id) == []
    assert processes_with("sleep 86395") == []


def test_janitor_spares_live_owners(backend: Backend, toy_task: TaskSpec) -> None:
    from swe_sandbox import Sandbox

    with Sandbox.create(toy_task, backend) as sandbox:
        backend.reap_orphans()
        assert sandbox.execute_bash("echo still-here").output.strip() == "still-here"


@pytest.mark.docker
def test_docker_janitor_is_scoped_to_the_runtime_root(docker_backend: DockerBackend) -> None:
    from swe_sandbox._docker_backend import HOST_LABEL, LABEL, OWNER_LABEL, RUNTIME_LABEL, _host_id
    from swe_sandbox._namespace import runtime_root

    dead_owner = "1:0"  # pid 1 never has start time 0: an owner that is gone
    labels = {LABEL: "1", OWNER_LABEL: dead_owner, HOST_LABEL: _host_id()}
    ours, theirs = (
        docker_backend.client.containers.run(
            docker_backend.base_image(),
            command=["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels={**labels, RUNTIME_LABEL: root},
        )
        for root in (str(runtime_root()), "/elsewhere/swe-sandbox-runtime")
    )
    try:
        assert docker_backend.reap_orphans() >= 1
        names = {c.id for c in docker_backend.client.containers.list(all=True)}
        assert ours.id not in names
        assert theirs.id in names  # another caller's runtime root: not ours to reap
    finally:
        for container in (ours, theirs):
            with contextlib.suppress(Exception):
                container.remove(force=True)
