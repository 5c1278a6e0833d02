"""The gateway side: KubernetesBackend as the gateway's ServiceAccount, then a full OpenEnv
episode through the real gateway app and the real `openenv` client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from apihelpers import Api
from openenv.core.generic_client import GenericEnvClient
from stack import Stack

from a01gym.config import Settings
from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.errors import SandboxCapacityError
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.sandbox import protocol
from a01gym.sandbox.host.kubernetes import KubernetesBackend
from a01gym.scenario.bundle import Bundle

pytestmark = pytest.mark.timeout(120)

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"
EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest_asyncio.fixture
async def backend(stack: Stack, api: Api) -> AsyncIterator[KubernetesBackend]:
    await api.create_pool("gw", 2)
    try:
        await api.wait_pool("gw", 2)
        async with KubernetesBackend(
            namespace=stack.namespace, pool="gw", kubeconfig=stack.gateway_kubeconfig
        ) as started:
            yield started
    finally:
        await api.kube.delete(api.path("sandboxpools", "gw"))
        await api.wait_gone("sandboxpools", "gw")


async def test_backend_runs_an_episode_and_release_deletes_it(
    backend: KubernetesBackend, api: Api, idor_bundle: Bundle
) -> None:
    sandbox = await backend.acquire()
    episode = await api.episode(sandbox.id)
    assert episode["status"]["sandboxSource"] == "Warm"
    await sandbox.client.load_workspace(
        idor_bundle.workspace, entrypoint=idor_bundle.manifest.entrypoint
    )
    status = await sandbox.client.restart_app()
    assert status.state == "running", status
    response = await sandbox.client.request(protocol.ProxyRequest(method="GET", path="/health"))
    assert response.status < 500
    assert backend.stats().in_use == 1
    await backend.release(sandbox)
    await api.wait_gone("episodes", sandbox.id)
    await api.wait_gone("pods", episode["status"]["podName"])
    assert backend.stats().in_use == 0


async def test_kubectl_applied_example_episode_can_be_attached_by_name(
    backend: KubernetesBackend, api: Api
) -> None:
    manifest = yaml.safe_load((EXAMPLES / "episode.yaml").read_text())
    manifest["spec"]["poolRef"] = {"name": "gw"}
    await api.kube.request(
        "POST", api.path("episodes"), body=manifest, params={"fieldValidation": "Strict"}
    )
    sandbox = await backend.acquire(manifest["metadata"]["name"])
    assert (await sandbox.client.health()).status == "ok"
    await backend.release(sandbox)
    await api.wait_gone("episodes", manifest["metadata"]["name"])


async def test_full_openenv_episode_through_the_gateway_on_kubernetes(
    backend: KubernetesBackend, tmp_path: Path, idor_bundle: Bundle
) -> None:
    runtime = environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURE)),
        logger=RunLogger(tmp_path),
    )
    deps = gateway_app.runtime_deps(runtime, own_backend=False)
    app = gateway_app.create_app(Settings(gateway=GatewaySettings(runs_dir=tmp_path)), deps=deps)
    async with server.background(app) as url, GenericEnvClient(base_url=url) as env:
        first = await env.reset(seed=7)
        assert first.observation["result"]["scenario"] == idor_bundle.manifest.content_hash
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            await env.step({"tool": "write_file", "path": path, "content": content})
        result = await env.step({"tool": "submit"})
        assert (result.reward, result.done) == (1.0, True)


def _gated(stack: Stack, **settings: Any) -> KubernetesBackend:
    return KubernetesBackend(
        namespace=stack.namespace, pool="gw", kubeconfig=stack.gateway_kubeconfig, **settings
    )


async def test_a_burst_beyond_start_concurrency_queues_and_every_reset_gets_a_sandbox(
    backend: KubernetesBackend, stack: Stack
) -> None:
    async with _gated(stack, start_concurrency=1, acquire_timeout_s=90) as gated:
        seen = {"running": 0, "waiting": 0}

        async def watch() -> None:
            while True:
                seen["running"] = max(seen["running"], gated.gate.running)
                seen["waiting"] = max(seen["waiting"], gated.stats().waiting)
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch())
        try:
            sandboxes = await asyncio.gather(*(gated.acquire() for _ in range(3)))
        finally:
            watcher.cancel()
        assert seen == {"running": 1, "waiting": 2}  # one Episode started at a time
        for sandbox in sandboxes:
            assert (await sandbox.client.health()).status == "ok"
        assert gated.stats().in_use == 3 and gated.stats().waiting == 0
        await asyncio.gather(*(gated.release(s) for s in sandboxes))


async def test_a_reset_past_acquire_timeout_names_the_setting_and_creates_nothing(
    backend: KubernetesBackend, stack: Stack, api: Api
) -> None:
    """A turn held by the test stands in for a start that takes longer than the deadline."""
    async with _gated(stack, start_concurrency=1, acquire_timeout_s=0.3) as gated:
        async with gated.gate.turn():
            with pytest.raises(SandboxCapacityError, match=r"kubernetes\.acquire_timeout_s") as e:
                await gated.acquire()
        assert "A01GYM_KUBERNETES__ACQUIRE_TIMEOUT_S" in e.value.hint
        mine = f"a01gym.dev/backend={gated._id}"
        listed = await api.kube.list(api.path("episodes"), labelSelector=mine)
        assert listed["items"] == []  # it never got as far as creating an Episode
        sandbox = await gated.acquire()  # the gate is free again: the next reset goes on
        assert (await sandbox.client.health()).status == "ok"
        await gated.release(sandbox)
