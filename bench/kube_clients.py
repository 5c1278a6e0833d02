"""Our aiohttp KubeClient against kubernetes_asyncio, on the operator's request mix.

Each iteration is what the operator and a kubelet send for one cold-started Episode's pod,
with the operator's real manifests: create the token Secret, create the pod, patch the
Secret's ownerReference, patch the pod's labels (a claim), read it, list it by label,
delete it, delete the Secret; a pod watch runs alongside and decodes every event. The same
iterations run, ``--concurrency`` at a time, against the local kube-apiserver with:

* ``ours``: :class:`a01gym.sandbox.host.kube_client.KubeClient` (dicts in, dicts out);
* ``library``: kubernetes_asyncio's typed ``CoreV1Api`` (dicts in, generated models out,
  which is how the library is meant to be used);
* ``library_raw``: the same calls with ``_preload_content=False`` and our own JSON
  decoding (the library as a transport only, what a dict-based operator would adopt).

Reported per client: ``<client>_cpu_us_per_request`` (this process's CPU, which runs
nothing but the client, over every request and watch event) and
``<client>_requests_per_s``; ``library_cpu_ratio`` is library over ours. The decision
rule of issue 14: adopt the library if it comes within 10% of ours.

    python bench/kube_clients.py --iterations 1000 --json-out FILE
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "k8s"))

from controlplane import ControlPlane
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

import report
from a01gym.operator import builders
from a01gym.sandbox.host.kube_client import KubeClient, resource_path
from a01gym.sandbox.host.kube_credentials import KubeCredentials

NAMESPACE = "clients"
MERGE = "application/merge-patch+json"


class Client(Protocol):
    async def call(self, op: str, name: str, body: Any = None) -> Any: ...
    def watch(self, selector: str) -> AsyncIterator[Any]: ...
    async def close(self) -> None: ...


class Ours:
    def __init__(self, kubeconfig: Path, connections: int) -> None:
        self.kube = KubeClient(KubeCredentials.load(kubeconfig), max_connections=connections)

    def _path(self, plural: str, name: str | None = None) -> str:
        return resource_path("", "v1", plural, NAMESPACE, name)

    async def call(self, op: str, name: str, body: Any = None) -> Any:
        kube, path = self.kube, self._path
        if op == "create_secret":
            return await kube.create(path("secrets"), body)
        if op == "create_pod":
            return await kube.create(path("pods"), body)
        if op == "patch_secret":
            return await kube.patch(path("secrets", name), body)
        if op == "patch_pod":
            return await kube.patch(path("pods", name), body)
        if op == "get_pod":
            return await kube.get(path("pods", name))
        if op == "list_pods":
            return await kube.list(path("pods"), labelSelector=f"bench/name={name}")
        if op == "delete_pod":
            return await kube.delete(path("pods", name), gracePeriodSeconds=0)
        return await kube.delete(path("secrets", name))

    async def watch(self, selector: str) -> AsyncIterator[Any]:
        version = (await self.kube.list(self._path("pods"), limit=1))["metadata"]["resourceVersion"]
        async for _, obj in self.kube.watch(
            self._path("pods"), resource_version=version, labelSelector=selector
        ):
            yield obj

    async def close(self) -> None:
        await self.kube.aclose()


class Library:
    """kubernetes_asyncio's CoreV1Api; ``raw`` skips its model deserialisation."""

    def __init__(self, api: k8s.ApiClient, raw: bool) -> None:
        self.api, self.core, self.raw = api, k8s.CoreV1Api(api), raw

    @classmethod
    async def create(cls, kubeconfig: Path, connections: int, raw: bool) -> Library:
        configuration = k8s.Configuration()
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        configuration.connection_pool_maxsize = connections
        return cls(k8s.ApiClient(configuration), raw)

    async def call(self, op: str, name: str, body: Any = None) -> Any:
        core, ns = self.core, NAMESPACE
        extra: dict[str, Any] = {"_preload_content": False} if self.raw else {}
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "create_secret": lambda: core.create_namespaced_secret(ns, body, **extra),
            "create_pod": lambda: core.create_namespaced_pod(ns, body, **extra),
            "patch_secret": lambda: core.patch_namespaced_secret(
                name, ns, body, _content_type=MERGE, **extra
            ),
            "patch_pod": lambda: core.patch_namespaced_pod(
                name, ns, body, _content_type=MERGE, **extra
            ),
            "get_pod": lambda: core.read_namespaced_pod(name, ns, **extra),
            "list_pods": lambda: core.list_namespaced_pod(
                ns, label_selector=f"bench/name={name}", **extra
            ),
            "delete_pod": lambda: core.delete_namespaced_pod(
                name, ns, grace_period_seconds=0, **extra
            ),
            "delete_secret": lambda: core.delete_namespaced_secret(name, ns, **extra),
        }
        result = await calls[op]()
        if not self.raw:
            return result
        data = await result.read()
        result.release()
        if result.status >= 400:
            raise RuntimeError(f"{op} {name}: {result.status} {data[:200]!r}")
        return json.loads(data)

    async def watch(self, selector: str) -> AsyncIterator[Any]:
        listing = await self.core.list_namespaced_pod(NAMESPACE, limit=1, _preload_content=False)
        version = json.loads(await listing.read())["metadata"]["resourceVersion"]
        listing.release()
        watcher = k8s_watch.Watch()
        async with watcher.stream(
            self.core.list_namespaced_pod,
            NAMESPACE,
            label_selector=selector,
            resource_version=version,
            timeout_seconds=600,
        ) as stream:
            async for event in stream:
                yield event["object"]

    async def close(self) -> None:
        await self.api.close()


def _manifests(run: str, i: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    name = f"{run}-{i:05d}"
    spec = builders.SandboxPodSpec(
        image="a01gym/sandbox:test",
        port=8080,
        uid=10001,
        resources={"requests": {"cpu": "50m", "memory": "128Mi"}},
        runtime_class_name=None,
        image_pull_policy="IfNotPresent",
        workspace_size_limit="256Mi",
        overrides={},
    )
    pod = builders.build_sandbox_pod(
        name=name,
        namespace=NAMESPACE,
        spec=spec,
        token_secret=name,
        extra_labels={"bench/name": name, "bench/run": run},
        owner=builders.build_owner_reference(
            "Episode", "e", "00000000-0000-0000-0000-000000000000"
        ),
        active_deadline_s=3600,
    )
    pod["metadata"]["ownerReferences"] = []  # no such Episode: keep the collector out of it
    secret = builders.build_token_secret(name=name, namespace=NAMESPACE, token="t", pod_name=name)
    return name, pod, secret


async def _iteration(client: Client, run: str, i: int) -> int:
    name, pod, secret = _manifests(run, i)
    owner = {"metadata": {"ownerReferences": []}}
    claim = {"metadata": {"labels": {"a01gym.dev/state": "claimed"}}}
    await client.call("create_secret", name, secret)
    await client.call("create_pod", name, pod)
    await client.call("patch_secret", name, owner)
    await client.call("patch_pod", name, claim)
    await client.call("get_pod", name)
    await client.call("list_pods", name)
    await client.call("delete_pod", name)
    await client.call("delete_secret", name)
    return 8


async def _measure(client: Client, run: str, iterations: int, concurrency: int) -> dict[str, float]:
    events = 0

    async def count() -> None:
        nonlocal events
        async for _ in client.watch(f"bench/run={run}"):
            events += 1

    watching = asyncio.create_task(count())
    await asyncio.sleep(0.5)  # the watch is open before the first create
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> int:
        async with gate:
            return await _iteration(client, run, i)

    cpu, wall = time.process_time(), time.perf_counter()
    requests = sum(await asyncio.gather(*(one(i) for i in range(iterations))))
    deadline = time.perf_counter() + 10
    while events < 4 * iterations and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)  # ADDED, MODIFIED (claim), MODIFIED (delete), DELETED
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)
    return {
        "cpu_us_per_request": round(cpu * 1e6 / (requests + events), 1),
        "requests_per_s": round(requests / wall, 1),
        "watch_events": events,
    }


async def run(kubeconfig: Path, iterations: int, concurrency: int, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {"iterations": iterations, "concurrency": concurrency}
    samples: dict[str, list[dict[str, float]]] = {"ours": [], "library": [], "library_raw": []}
    for round_ in range(rounds):  # interleaved, so a load spike hits every client alike
        for kind in samples:
            client: Client
            if kind == "ours":
                client = Ours(kubeconfig, concurrency)
            else:
                client = await Library.create(kubeconfig, concurrency, raw=kind == "library_raw")
            try:
                run_name = f"{kind.replace('_', '-')}-{round_}"  # a valid object name
                samples[kind].append(await _measure(client, run_name, iterations, concurrency))
            finally:
                await client.close()
    for kind, runs in samples.items():
        best = min(runs, key=lambda r: r["cpu_us_per_request"])
        results[f"{kind}_cpu_us_per_request"] = best["cpu_us_per_request"]
        results[f"{kind}_requests_per_s"] = max(r["requests_per_s"] for r in runs)
        results[f"{kind}_watch_events"] = best["watch_events"]
    for kind in ("library", "library_raw"):
        results[f"{kind}_cpu_ratio"] = round(
            results[f"{kind}_cpu_us_per_request"] / results["ours_cpu_us_per_request"], 2
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000, help="pods per client per round")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="a01gym-bench-clients-") as workdir:
        plane = ControlPlane(Path(workdir)).start()
        try:
            plane.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            results = asyncio.run(
                run(plane.kubeconfig("admin"), args.iterations, args.concurrency, args.rounds)
            )
        finally:
            plane.stop()
    results["load_avg_at_end"] = round(os.getloadavg()[0], 2)
    # Not a target for our code: the adoption rule (library within 10% of ours) as a check.
    targets: report.Targets = {"library_cpu_ratio": ("<=", 1.1)}
    report.emit("kube-clients", results, targets, quick=False, began=began, json_out=args.json_out)


if __name__ == "__main__":
    main()
