"""Sandboxes as hardened containers on a real Docker engine (:mod:`a01gym.sandbox.host.docker`).

Real parts throughout: the sandbox image built by ``tools/images.sh``, the supervisor inside
it, the gateway and OpenEnv's own client. The escape payloads are the list
:mod:`a01gym.sandbox.host.escapes` gives ``bench/containers.py`` too.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from openenv.core.generic_client import GenericEnvClient

from a01gym.config import Settings
from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.sandbox.host import container, escapes
from a01gym.sandbox.host.docker import DockerBackend, DockerSandbox
from a01gym.scenario.bundle import Bundle

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(3600),  # the first image build takes minutes
    pytest.mark.asyncio(loop_scope="module"),
]

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def backend(images: dict[str, tuple[str, int]]) -> AsyncIterator[DockerBackend]:
    async with DockerBackend(pool_size=1) as started:
        yield started


def _docker(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def _runtime(backend: DockerBackend, runs: Path) -> environment.EnvRuntime:
    return environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURE)),
        logger=RunLogger(runs),
    )


async def test_reference_fix_scores_1_and_the_noop_0_through_the_gateway(
    backend: DockerBackend, tmp_path: Path, idor_bundle: Bundle
) -> None:
    deps = gateway_app.runtime_deps(_runtime(backend, tmp_path), own_backend=False)
    app = gateway_app.create_app(Settings(gateway=GatewaySettings(runs_dir=tmp_path)), deps=deps)
    async with server.background(app) as url, GenericEnvClient(base_url=url) as env:
        first = await env.reset(seed=7)
        assert first.observation["result"]["scenario"] == idor_bundle.manifest.content_hash
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            await env.step({"tool": "write_file", "path": path, "content": content})
        fixed = await env.step({"tool": "submit"})
        assert (fixed.reward, fixed.done) == (1.0, True)
        await env.reset(seed=8)
        noop = await env.step({"tool": "submit"})
        assert (noop.reward, noop.done) == (0.0, True)
    assert backend.stats().in_use == 0


async def test_the_running_container_is_hardened_as_the_pod_spec_says(
    backend: DockerBackend,
) -> None:
    sandbox = await backend.acquire()
    try:
        (details,) = json.loads(_docker("inspect", sandbox.container_id))
        host = details["HostConfig"]
        assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
        assert "no-new-privileges" in host["SecurityOpt"] and not host["Privileged"]
        assert set(host["Tmpfs"]) == {container.WORKSPACE_DIR, container.TMP_DIR}
        assert host["PidsLimit"] == backend.settings.pids
        assert host["Memory"] == host["MemorySwap"] == backend.settings.memory_mb * 2**20
        (network,) = details["NetworkSettings"]["Networks"]
        assert network == backend.settings.network
        (config,) = json.loads(_docker("network", "inspect", network))
        assert config["Internal"] is True
        assert config["Options"]["com.docker.network.bridge.enable_icc"] == "false"
        # the supervisor, pid 1: the image's uid, no capabilities, no new privileges, seccomp
        status = dict(
            line.split(":\t", 1)
            for line in _docker("exec", sandbox.container_id, "cat", "/proc/1/status").splitlines()
            if ":\t" in line
        )
        assert status["Uid"].split()[0] == str(container.UID)
        assert int(status["CapEff"], 16) == int(status["CapPrm"], 16) == 0
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "2"  # filter mode: the engine's default profile
    finally:
        await backend.release(sandbox)


async def _host_listener() -> tuple[asyncio.Server, int, list[bool]]:
    accepted: list[bool] = []

    def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(True)
        writer.close()

    listener = await asyncio.start_server(on_connect, "0.0.0.0", 0)  # every host address
    return listener, listener.sockets[0].getsockname()[1], accepted


def _gateway_ip(backend: DockerBackend) -> str:
    (config,) = json.loads(_docker("network", "inspect", backend.settings.network))
    return config["IPAM"]["Config"][0]["Gateway"]


async def test_every_escape_payload_is_denied(backend: DockerBackend) -> None:
    listener, port, accepted = await _host_listener()
    hostile, neighbour = await backend.acquire(), await backend.acquire()
    try:
        await escapes.load(hostile)
        attempts = escapes.payloads(
            host=_gateway_ip(backend), host_port=port, neighbour=neighbour.endpoint
        )
        results = await escapes.run(hostile, attempts)
        assert len(results) == len(attempts) >= 13
        escaped = [f"{r.name}: {r.detail}" for r in results if not r.denied]
        assert escaped == [], escaped
        assert accepted == []
        assert (await neighbour.client.health()).status == "ok"  # the neighbour is unharmed
    finally:
        listener.close()
        await backend.release(hostile)
        await backend.release(neighbour)


async def test_the_container_itself_reaches_nothing_but_answers_its_supervisor_port(
    backend: DockerBackend,
) -> None:
    """Outside the supervisor's own confinement of the app (a process ``docker exec`` starts
    in the container): the container's network reaches neither the host, nor another
    sandbox, nor the outside, while the host reaches the supervisor."""
    listener, port, accepted = await _host_listener()
    probe, neighbour = await backend.acquire(), await backend.acquire()
    targets = [
        (_gateway_ip(backend), port),
        tuple(neighbour.endpoint.split(":")),
        ("1.1.1.1", 443),
    ]
    script = (
        "import socket, sys\n"
        "for host, port in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    try:\n"
        "        socket.create_connection((host, int(port)), timeout=3).close()\n"
        "        print(host, 'reachable')\n"
        "    except OSError as exc:\n"
        "        print(host, 'denied', exc)\n"
    )
    try:
        argv = [str(part) for target in targets for part in target]
        printed = await asyncio.to_thread(
            _docker, "exec", probe.container_id, "python", "-c", script, *argv
        )
        assert printed.count("denied") == len(targets), printed
        assert accepted == []
        assert (await probe.client.health()).status == "ok"
    finally:
        listener.close()
        await backend.release(probe)
        await backend.release(neighbour)


async def test_a_killed_container_is_replaced_and_the_agents_changes_survive(
    backend: DockerBackend, tmp_path: Path, idor_bundle: Bundle
) -> None:
    env = environment.A01Environment(_runtime(backend, tmp_path))
    try:
        await env.reset(seed=6)
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            await env.step({"tool": "write_file", "path": path, "content": content})
        sandbox = env._episode.sandbox  # the test started this backend and its containers
        assert isinstance(sandbox, DockerSandbox)
        _docker("kill", sandbox.container_id)
        wire = (await env.step({"tool": "list_files"})).wire()
        assert wire["observation"]["error"]["code"] == "sandbox_lost"
        assert "replaced" in wire["observation"]["output"]
        final = (await env.step({"tool": "submit"})).wire()
        assert final["reward"] == 1.0
    finally:
        await env.close()
    assert backend.stats().crashed_total == 0  # a killed in-use container is not a failed start


async def test_a_dead_warm_container_is_never_handed_out(backend: DockerBackend) -> None:
    await asyncio.wait_for(_warm(backend), 60)
    (idle,) = backend._idle  # one warm container (pool_size=1)
    _docker("kill", idle.container_id)
    for _ in range(100):  # the engine's die event reaches the backend's watcher
        if idle.died:
            break
        await asyncio.sleep(0.1)
    assert idle.died and not idle.alive
    sandbox = await backend.acquire()
    try:
        assert sandbox.container_id != idle.container_id
        assert (await sandbox.client.health()).status == "ok"
    finally:
        await backend.release(sandbox)
    containers = _docker("ps", "-aq", "--no-trunc", "--filter", f"id={idle.container_id}")
    assert containers.strip() == ""  # the dead one was removed


async def _warm(backend: DockerBackend) -> None:
    while backend.stats().idle < 1:
        await asyncio.sleep(0.2)
