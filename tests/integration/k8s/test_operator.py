"""The operator on a real kube-apiserver, under the chart's RBAC, with a process kubelet."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from apihelpers import Api
from stack import Stack

from a01gym.sandbox.host.kube_client import KubeApiError

pytestmark = pytest.mark.timeout(120)


async def test_episode_ready_from_warm_pool_moves_pod_ownership(api: Api) -> None:
    await api.create_pool("warm", 2)
    await api.wait_pool("warm", 2)
    created = await api.create_episode("warm-1", poolRef={"name": "warm"})
    started = time.monotonic()
    ready = await api.wait_phase("warm-1", "Ready")
    assert time.monotonic() - started < 2.0
    status = ready["status"]
    assert status["sandboxSource"] == "Warm"
    condition = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (condition["status"], condition["reason"]) == ("True", "SandboxReady")
    pod = await api.kube.get(api.path("pods", status["podName"]))
    assert pod["metadata"]["labels"]["a01gym.dev/state"] == "claimed"
    assert pod["metadata"]["labels"]["a01gym.dev/episode-uid"] == created["metadata"]["uid"]
    [owner] = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Episode", created["metadata"]["uid"])
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"http://{status['endpoint']}/healthz")).status_code == 200
    await api.wait_pool("warm", 2)  # refilled
    await api.kube.delete(api.path("episodes", "warm-1"))
    await api.wait_gone("pods", status["podName"])
    await api.wait_gone("secrets", status["tokenSecretName"])


async def test_episode_ready_from_cold_pod_without_pool(api: Api) -> None:
    started = time.monotonic()
    await api.create_episode("cold-1")
    ready = await api.wait_phase("cold-1", "Ready")
    assert time.monotonic() - started < 5.0
    assert ready["status"]["sandboxSource"] == "Cold"
    assert ready["status"]["podName"] == f"sbx-{ready['metadata']['uid']}"
    pod = await api.kube.get(api.path("pods", ready["status"]["podName"]))
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    container = spec["containers"][0]["securityContext"]
    assert container["readOnlyRootFilesystem"] is True
    assert container["capabilities"]["drop"] == ["ALL"]
    assert spec["activeDeadlineSeconds"] == 3600 + 60
    await api.kube.delete(api.path("episodes", "cold-1"))
    await api.wait_gone("pods", ready["status"]["podName"])


async def test_ttl_expiry_marks_expired_and_deletes_pod_and_token(api: Api) -> None:
    await api.create_episode("short", ttlSeconds=10)
    ready = await api.wait_phase("short", "Ready")
    expired = await api.wait_phase("short", "Expired", timeout_s=20)
    condition = next(c for c in expired["status"]["conditions"] if c["type"] == "Ready")
    assert condition["reason"] == "TTLExpired"
    assert expired["status"]["finishedTime"]
    await api.wait_gone("pods", ready["status"]["podName"])
    await api.wait_gone("secrets", ready["status"]["tokenSecretName"])
    reasons = await api.wait_event_reasons("short", {"Ready", "TTLExpired"})
    assert {"Ready", "TTLExpired"} <= reasons
    await api.kube.delete(api.path("episodes", "short"))


async def test_pod_vanishing_fails_the_episode_with_pod_lost(api: Api) -> None:
    await api.create_episode("lost")
    ready = await api.wait_phase("lost", "Ready")
    await api.kube.delete(api.path("pods", ready["status"]["podName"]), gracePeriodSeconds=0)
    failed = await api.wait_phase("lost", "Failed")
    condition = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
    assert condition["reason"] == "PodLost"
    await api.kube.delete(api.path("episodes", "lost"))


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"ttlSeconds": 5}, "ttlSeconds"),
        ({"scenarioHash": "not-a-hash"}, "scenarioHash"),
        ({"bogusField": 1}, "bogusField"),
        ({"poolRef": {}}, "poolRef.name"),
    ],
)
async def test_invalid_episode_spec_is_rejected_by_schema(
    api: Api, spec: dict, needle: str
) -> None:
    with pytest.raises(KubeApiError) as caught:
        await api.create_episode("invalid", **spec)
    assert caught.value.status in (400, 422)  # strict decoding: 400; schema: 422
    assert needle in str(caught.value)


async def test_semantically_invalid_episodes_fail_with_clear_reasons(api: Api) -> None:
    await api.create_episode("no-pool", poolRef={"name": "does-not-exist"})
    await api.create_episode(
        "bad-resources", resources={"requests": {"cpu": "2"}, "limits": {"cpu": "100m"}}
    )
    for name, reason, text in [
        ("no-pool", "PoolNotFound", "does-not-exist"),
        ("bad-resources", "InvalidSpec", "limit"),
    ]:
        failed = await api.wait_phase(name, "Failed")
        condition = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
        assert condition["reason"] == reason
        assert text in condition["message"]
        await api.kube.delete(api.path("episodes", name))


async def test_pool_scales_up_and_down_through_the_scale_subresource(api: Api) -> None:
    await api.create_pool("scaled", 1)
    await api.wait_pool("scaled", 1)
    scale = api.path("sandboxpools", "scaled", "scale")
    await api.kube.patch(scale, {"spec": {"replicas": 4}})
    await api.wait_pool("scaled", 4)
    assert (await api.kube.get(scale))["status"]["replicas"] == 4
    await api.kube.patch(scale, {"spec": {"replicas": 1}})
    await api.wait_pool("scaled", 1)
    await api.kube.delete(api.path("sandboxpools", "scaled"))
    deadline = time.monotonic() + 20
    while await api.pods("a01gym.dev/pool=scaled"):
        assert time.monotonic() < deadline, "pool pods outlived their pool"
        await asyncio.sleep(0.2)


async def test_a_pool_recreated_under_the_same_name_gets_its_status(api: Api) -> None:
    """The operator once cached the last status by name, so a re-created pool stayed blank."""
    for _ in range(2):
        await api.create_pool("again", 1)
        pool = await api.wait_pool("again", 1)
        assert pool["status"]["readyReplicas"] == 1
        await api.kube.delete(api.path("sandboxpools", "again"))
        await api.wait_gone("sandboxpools", "again")


async def test_operator_killed_mid_claim_leaves_no_orphans_or_double_claims(
    api: Api, stack: Stack
) -> None:
    await api.create_pool("crash", 3)
    await api.wait_pool("crash", 3)
    names = [f"crash-{i}" for i in range(12)]
    await asyncio.gather(*(api.create_episode(n, poolRef={"name": "crash"}) for n in names))
    await asyncio.sleep(0.05)
    stack.kill_operator()  # SIGKILL while claims and cold starts are in flight
    stack.start_operator()
    episodes = await asyncio.gather(*(api.wait_phase(n, "Ready", timeout_s=30) for n in names))
    uids = {e["metadata"]["uid"] for e in episodes}
    pods = [
        p
        for p in await api.pods("a01gym.dev/component=sandbox")
        if not p["metadata"].get("deletionTimestamp")
    ]
    bound = [p for p in pods if p["metadata"]["labels"].get("a01gym.dev/episode-uid") in uids]
    assert len(bound) == len(names), "every Episode has exactly one pod"
    assert len({p["metadata"]["labels"]["a01gym.dev/episode-uid"] for p in bound}) == len(names)
    assert {e["status"]["podName"] for e in episodes} == {p["metadata"]["name"] for p in bound}
    await asyncio.gather(*(api.kube.delete(api.path("episodes", n)) for n in names))
    await api.kube.delete(api.path("sandboxpools", "crash"))
    deadline = time.monotonic() + 30
    while True:
        left = [
            p
            for p in await api.pods("a01gym.dev/component=sandbox")
            if p["metadata"]["labels"].get("a01gym.dev/episode-uid") in uids
            or p["metadata"]["labels"].get("a01gym.dev/pool") == "crash"
        ]
        secrets = (
            await api.kube.list(
                api.path("secrets"), labelSelector="a01gym.dev/component=sandbox-token"
            )
        )["items"]
        unowned = [s for s in secrets if not s["metadata"].get("ownerReferences")]
        if not left and not unowned:
            break
        assert time.monotonic() < deadline, (
            f"orphans: {[p['metadata']['name'] for p in left]}, {len(unowned)} unowned secrets"
        )
        await asyncio.sleep(0.25)
