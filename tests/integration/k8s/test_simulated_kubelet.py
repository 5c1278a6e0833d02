"""The simulated kubelet that ``bench/k8s.py --scale`` runs on: pods are bound to a fake
node and reported Ready, nothing runs. A stand-in for a cluster's nodes, needed because ten
thousand real supervisors cannot run on this machine; the API server and the operator are
real. These tests check that the operator drives Episodes through it exactly as through the
process kubelet: Ready, one pod each, cleaned up after deletion."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from apihelpers import Api
from controlplane import ControlPlane, MissingPrerequisite
from simkubelet import NODE
from stack import Stack

from a01gym.sandbox.host.kube_client import KubeClient
from a01gym.sandbox.host.kube_credentials import KubeCredentials


@pytest.fixture(scope="module")
def simulated() -> Iterator[Stack]:
    try:
        ControlPlane(Path(tempfile.gettempdir())).check()
    except MissingPrerequisite as exc:  # as conftest's stack fixture does
        if os.environ.get("A01GYM_REQUIRE_K8S") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with tempfile.TemporaryDirectory(prefix="a01gym-k8s-sim-") as workdir:
        started = Stack(Path(workdir), namespace="sim", simulated_kubelet=True).start()
        yield started
        started.stop()


@pytest_asyncio.fixture
async def sim_api(simulated: Stack) -> AsyncIterator[Api]:
    client = KubeClient(KubeCredentials.load(simulated.admin_kubeconfig))
    yield Api(client, simulated.namespace)
    await client.aclose()


async def test_episodes_become_ready_on_simulated_nodes_and_leave_nothing(sim_api: Api) -> None:
    await sim_api.create_pool("sim", 3)
    await sim_api.wait_pool("sim", 3)
    names = [f"sim-{i}" for i in range(20)]
    await asyncio.gather(*(sim_api.create_episode(n, poolRef={"name": "sim"}) for n in names))
    ready = await asyncio.gather(*(sim_api.wait_phase(n, "Ready", timeout_s=60) for n in names))
    sources = {e["status"]["sandboxSource"] for e in ready}
    assert sources == {"Warm", "Cold"}, "three claims from the pool, the rest cold"
    pod_names = [e["status"]["podName"] for e in ready]
    assert len(set(pod_names)) == len(names), "no pod serves two Episodes"
    pods = await sim_api.pods("a01gym.dev/state=claimed")
    assert {p["metadata"]["name"] for p in pods} == set(pod_names)
    assert {p["spec"]["nodeName"] for p in pods} == {NODE}
    await asyncio.gather(*(sim_api.kube.delete(sim_api.path("episodes", n)) for n in names))
    deadline = time.monotonic() + 30
    while True:
        claimed = await sim_api.pods("a01gym.dev/state=claimed")
        secrets = await sim_api.kube.list(
            sim_api.path("secrets"), labelSelector="a01gym.dev/component=sandbox-token"
        )
        live = {p["metadata"]["name"] for p in await sim_api.pods("a01gym.dev/component=sandbox")}
        stray = [s for s in secrets["items"] if s["metadata"]["name"] not in live]
        if not claimed and not stray:
            break
        assert time.monotonic() < deadline, f"{len(claimed)} pods, {len(stray)} Secrets left"
        await asyncio.sleep(0.25)
    await sim_api.kube.delete(sim_api.path("sandboxpools", "sim"))
