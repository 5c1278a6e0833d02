"""The chart on a real node: every pod a container run by a real kubelet through containerd
and runc, installed by ``helm install`` with default values (``realnode.py``).

What the process kubelet of ``tests/integration/k8s`` cannot show: image resolution, probes
run by the kubelet, a read-only root and dropped capabilities enforced by runc, the pod's own
``/proc``, Services through kube-proxy, and what happens when containers, pods, the operator or
the kubelet itself die, and the chart's NetworkPolicy enforced (by kube-router beside the
``bridge`` CNI, which enforces none).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from node import BRIDGE_ADDRESS
from openenv.core.generic_client import GenericEnvClient
from realnode import NAMESPACE, SANDBOXES, RealCluster

from a01gym.scenario.cache import ScenarioCache

ROOT = Path(__file__).resolve().parents[3]
A01GYM = str(Path(sys.executable).with_name("a01gym"))

pytestmark = pytest.mark.timeout(900)


def _eval(cluster: RealCluster, agent: str, tmp_path: Path) -> dict:
    done = subprocess.run(
        [
            A01GYM, "eval", "--agent", agent, "--url", cluster.gateway_url(),
            "--cache", str(cluster.volume), "--split", "train", "--episodes", "3",
            "--concurrency", "3", "--out", str(tmp_path), "--json",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_default_install_runs_every_pod_as_a_container(cluster: RealCluster) -> None:
    pods = cluster.get("pods", "-A")["items"]
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    components = {p["metadata"]["labels"].get("app.kubernetes.io/component") for p in running}
    assert {"operator", "gateway"} <= components
    assert len(cluster.sandbox_pods("idle")) >= 4  # the default pool's replicas
    for pod in running:
        (status,) = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        assert status["ready"], pod["metadata"]["name"]
        assert status["imageID"], "the image was resolved by the runtime"
    images = {p["spec"]["containers"][0]["image"] for p in running}
    assert images == {"ghcr.io/a01gym/a01gym:0.1.0", "ghcr.io/a01gym/sandbox:0.1.0"}
    factory = cluster.get("-n", NAMESPACE, "job", "a01gym-factory-1")  # -<revision>
    assert factory["status"]["succeeded"] == 1
    assert (cluster.volume / "index.sqlite").exists(), "the factory Job filled the claim"


def test_example_episode_becomes_ready_from_the_warm_pool(cluster: RealCluster) -> None:
    cluster.kubectl("-n", SANDBOXES, "apply", "-f", str(ROOT / "examples" / "episode.yaml"))
    episode = cluster.wait_episode("example", "Ready")
    pod = cluster.get("-n", SANDBOXES, "pod", episode["status"]["podName"])
    assert pod["metadata"]["labels"]["a01gym.dev/state"] == "claimed"
    assert pod["metadata"]["labels"]["a01gym.dev/episode-uid"] == episode["metadata"]["uid"]
    cluster.kubectl("-n", SANDBOXES, "delete", "episode", "example", "--wait=true")
    deadline = time.monotonic() + 60
    while any(p["metadata"]["name"] == pod["metadata"]["name"] for p in cluster.sandbox_pods()):
        assert time.monotonic() < deadline, "the Episode's pod outlived it"
        time.sleep(0.5)


def test_eval_through_the_clusters_gateway(cluster: RealCluster, tmp_path: Path) -> None:
    reference = _eval(cluster, "reference", tmp_path)
    assert reference["completed"] == 3 and reference["errors"] == 0
    assert reference["mean_reward"] == 1.0
    noop = _eval(cluster, "noop", tmp_path)
    assert noop["completed"] == 3 and noop["errors"] == 0
    assert noop["mean_reward"] == 0.0


def test_sandbox_hardening_is_enforced_by_the_runtime(cluster: RealCluster) -> None:
    pod = cluster.wait_pool_ready(1)[0]["metadata"]["name"]
    code, out = cluster.exec(pod, "touch", "/written-to-root")
    assert code != 0 and "Read-only file system" in out
    code, out = cluster.exec(pod, "id", "-u")
    assert (code, out.strip()) == (0, "10001")
    code, out = cluster.exec(pod, "grep", "^Cap", "/proc/self/status")
    assert code == 0
    caps = dict(line.split(":\t") for line in out.strip().splitlines())
    assert set(caps.values()) == {"0000000000000000"}, caps  # no capability, not even bounded
    code, out = cluster.exec(pod, "ls", "/var/run/secrets/kubernetes.io/serviceaccount")
    assert code != 0 and "No such file" in out  # no service-account token mounted
    code, out = cluster.exec(pod, "cat", "/proc/1/cmdline")
    assert "a01gym.sandbox.inside.control" in out  # its own PID namespace: PID 1 is its own
    code, out = cluster.exec(pod, "sh", "-c", "echo x > /sandbox/ok && cat /sandbox/ok")
    assert (code, out.strip()) == (0, "x")  # the workspace volume stays writable


def test_the_charts_network_policy_is_enforced(cluster: RealCluster) -> None:
    """The chart's sandbox policy (no egress; ingress on the supervisor's port only from the
    gateway and the operator), enforced by kube-router on the node: a sandbox reaches neither
    the gateway, nor another sandbox, nor the API server (its Service or the node's address),
    while the gateway and the operator still reach it, and the gateway (no policy) still
    reaches the API server."""
    policies = cluster.get("-n", SANDBOXES, "networkpolicy")["items"]
    assert [p["spec"]["policyTypes"] for p in policies] == [["Ingress", "Egress"]]
    sandboxes = cluster.wait_pool_ready(2)
    source, other = sandboxes[0]["metadata"]["name"], sandboxes[1]["status"]["podIP"]
    gateway = cluster.get("-n", NAMESPACE, "pods", "-l", "app.kubernetes.io/component=gateway")
    api_port = cluster.plane.url.rsplit(":", 1)[1]

    def reach(pod: str, namespace: str, host: str, port: int | str) -> str:
        probe = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('{host}', {port}), timeout=3); print('open')\n"
            "except OSError as exc:\n"
            "    print(type(exc).__name__)"
        )
        code, out = cluster.exec(pod, "python", "-c", probe, namespace=namespace)
        assert code == 0, out
        return out.strip()

    gateway_pod = gateway["items"][0]["metadata"]["name"]
    operator = cluster.get("-n", NAMESPACE, "pods", "-l", "app.kubernetes.io/component=operator")
    operator_pod = operator["items"][0]["metadata"]["name"]
    denied = {
        "gateway": reach(source, SANDBOXES, gateway["items"][0]["status"]["podIP"], 8000),
        "sandbox": reach(source, SANDBOXES, other, 8080),
        "api service": reach(source, SANDBOXES, "10.96.0.1", 443),
        "api on the node": reach(source, SANDBOXES, BRIDGE_ADDRESS, api_port),
    }
    assert "open" not in denied.values(), denied
    allowed = {
        "gateway": reach(gateway_pod, NAMESPACE, other, 8080),
        "operator": reach(operator_pod, NAMESPACE, other, 8080),
        "gateway to api": reach(gateway_pod, NAMESPACE, "10.96.0.1", 443),
    }
    assert set(allowed.values()) == {"open"}, allowed


def test_services_resolve_by_name_except_from_a_sandbox(cluster: RealCluster) -> None:
    """Cluster DNS: the gateway's pod resolves the chart's Services by name (what the GRPO
    Job's default ``--gateway-url http://a01gym-gateway:8000`` needs); a sandbox cannot even
    ask (the chart's policy allows it no egress, DNS included)."""
    service = cluster.get("-n", NAMESPACE, "service", "a01gym-gateway")["spec"]["clusterIP"]
    lookup = "import socket, sys; print(socket.gethostbyname(sys.argv[1]))"
    gateway = cluster.get("-n", NAMESPACE, "pods", "-l", "app.kubernetes.io/component=gateway")
    pod = gateway["items"][0]["metadata"]["name"]
    for name in ("a01gym-gateway", "a01gym-gateway.a01gym.svc.cluster.local"):
        code, out = cluster.exec(pod, "python", "-c", lookup, name, namespace=NAMESPACE)
        assert (code, out.strip()) == (0, service), out
    sandbox = cluster.wait_pool_ready(1)[0]["metadata"]["name"]
    code, out = cluster.exec(sandbox, "python", "-c", lookup, "kubernetes.default")
    assert code != 0 and "gaierror" in out, out


def test_deleting_a_claimed_pod_fails_its_episode(cluster: RealCluster) -> None:
    cluster.apply(_episode("lost"), SANDBOXES)
    ready = cluster.wait_episode("lost", "Ready")
    cluster.kubectl("-n", SANDBOXES, "delete", "pod", ready["status"]["podName"], "--wait=false")
    failed = cluster.wait_episode("lost", "Failed")
    condition = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
    assert condition["reason"] == "PodLost", condition
    cluster.kubectl("-n", SANDBOXES, "delete", "episode", "lost")


def test_killing_a_sandbox_container_fails_its_episode(cluster: RealCluster) -> None:
    """The container's process dies (as on an OOM kill): the kubelet sees it exit, the pod
    turns Failed or restarts, and the Episode must not stay Ready on a sandbox that lost its
    workspace."""
    cluster.apply(_episode("killed"), SANDBOXES)
    ready = cluster.wait_episode("killed", "Ready")
    pod = cluster.get("-n", SANDBOXES, "pod", ready["status"]["podName"])
    container = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
    cluster.node.ctr("tasks", "kill", "--signal", "SIGKILL", container)
    failed = cluster.wait_episode("killed", "Failed")
    condition = next(c for c in failed["status"]["conditions"] if c["type"] == "Ready")
    assert condition["status"] == "False" and condition["reason"], condition
    cluster.kubectl("-n", SANDBOXES, "delete", "episode", "killed")


def test_operator_killed_mid_claim_and_kubelet_restart_leave_no_orphans(
    cluster: RealCluster,
) -> None:
    names = [f"burst-{i}" for i in range(6)]
    for name in names:
        cluster.apply(_episode(name), SANDBOXES)
    operator = cluster.get("-n", NAMESPACE, "pods", "-l", "app.kubernetes.io/component=operator")
    cluster.kubectl(
        "-n", NAMESPACE, "delete", "pod", operator["items"][0]["metadata"]["name"],
        "--grace-period=0", "--force", "--wait=false",
    )  # fmt: skip
    cluster.node.restart_kubelet()
    episodes = [cluster.wait_episode(n, "Ready", timeout_s=240) for n in names]
    uids = {e["metadata"]["uid"] for e in episodes}
    bound = [
        p for p in cluster.sandbox_pods() if p["metadata"]["labels"].get("a01gym.dev/episode-uid")
    ]
    by_uid = [p for p in bound if p["metadata"]["labels"]["a01gym.dev/episode-uid"] in uids]
    assert len(by_uid) == len(names), "every Episode has exactly one pod"
    assert {e["status"]["podName"] for e in episodes} == {p["metadata"]["name"] for p in by_uid}
    for name in names:
        cluster.kubectl("-n", SANDBOXES, "delete", "episode", name, "--wait=false")
    deadline = time.monotonic() + 120
    while True:
        left = [
            p["metadata"]["name"]
            for p in cluster.sandbox_pods()
            if p["metadata"]["labels"].get("a01gym.dev/episode-uid") in uids
        ]
        containers = cluster.node.containers()
        pods = cluster.get("pods", "-A")["items"]
        if not left and len(containers) <= 2 * len(pods):  # a pause and one container a pod
            break
        assert time.monotonic() < deadline, f"orphans: pods {left}, {len(containers)} containers"
        time.sleep(1)


async def test_a_sandbox_killed_mid_episode_is_replaced_and_the_gateway_goes_on(
    cluster: RealCluster,
) -> None:
    """Through the cluster's gateway with OpenEnv's own client: the container under a live
    session is killed; the next step that needs it says so plainly (``sandbox_lost``), the
    agent's edit survives in the replacement, and the reference fix still scores 1.0. A second
    kill in one episode ends it with a grade, and the next reset gets a fresh sandbox. The
    cluster's blocking calls (kubectl, ctr) run in a thread, so the session's websocket goes on
    answering keepalive pings while they take their seconds."""
    cache = ScenarioCache(cluster.volume)
    search = {"tool": "search", "pattern": "def "}  # answered by the sandbox, not the gateway
    async with GenericEnvClient(base_url=cluster.gateway_url()) as env:
        first = await env.reset(seed=3)
        bundle = cache.load(first.observation["result"]["scenario"])
        fix = sorted(bundle.hidden.reference_fix.files.items())
        marker = uuid.uuid4().hex  # finds the session's pod: the gateway keeps warm spares too
        path, content = fix[0]
        await env.step({"tool": "write_file", "path": path, "content": f"{content}\n# {marker}\n"})
        killed = await asyncio.to_thread(cluster.kill_sandbox_holding, marker)
        lost = await env.step(search)
        assert lost.observation["error"]["code"] == "sandbox_lost", lost.observation
        assert "replaced" in lost.observation["output"] and not lost.done
        code, _ = await asyncio.to_thread(cluster.exec, killed, "true")
        assert code != 0, "the killed pod is gone or stopped"
        again = await env.step(search)
        assert again.observation["error"] is None
        for path, content in fix[1:]:
            await env.step({"tool": "write_file", "path": path, "content": content})
        result = await env.step({"tool": "submit"})  # the first file's edit was replayed
        assert (result.reward, result.done) == (1.0, True)

        second = await env.reset(seed=4)
        workspace = cache.load(second.observation["result"]["scenario"]).workspace
        path, content = next(
            (p, c.decode()) for p, c in sorted(workspace.items()) if p[-3:] == ".py"
        )
        marker = uuid.uuid4().hex
        await env.step({"tool": "write_file", "path": path, "content": f"{content}\n# {marker}\n"})
        await asyncio.to_thread(cluster.kill_sandbox_holding, marker)
        replaced = await env.step(search)
        assert replaced.observation["error"]["code"] == "sandbox_lost"
        # The replacement holds the agent's files too:
        await asyncio.to_thread(cluster.kill_sandbox_holding, marker)
        ended = await env.step(search)
        assert ended.done and ended.reward is not None, ended.observation  # graded, not hung
        third = await env.reset(seed=5)
        assert not third.done and third.observation["result"]["scenario"]
        assert (await env.step(search)).observation["error"] is None


def _episode(name: str) -> dict:
    return {
        "apiVersion": "a01gym.dev/v1alpha1",
        "kind": "Episode",
        "metadata": {"name": name},
        "spec": {"poolRef": {"name": "default"}, "ttlSeconds": 900},
    }
