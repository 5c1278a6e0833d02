"""A simulated kubelet for scale runs: binds sandbox pods to a fake node and reports them
Running and Ready with a pod IP, but runs nothing.

It stands in for thousands of nodes' kubelets where thousands of real supervisors cannot
run (two cores): the API traffic a kubelet causes per pod (a Binding, a status patch, the
final delete of a terminating pod) is real, against the real kube-apiserver; the container
is not. Every pod reports the same IP, where one tiny HTTP server answers the operator's
``/healthz`` probe on the sandbox port, so the operator's path to Ready is unchanged.

Run: ``python simkubelet.py --kubeconfig K --namespace NS``. Stop with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import signal
import socket
import sys
from typing import Any

from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, KubeConnectionError
from a01gym.sandbox.host.kube_credentials import KubeCredentials

NODE = "simulated-node"
SELECTOR = "a01gym.dev/component=sandbox"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatedKubelet:
    """Watches sandbox pods of one namespace; ``concurrency`` bounds its API calls in flight."""

    def __init__(self, kube: KubeClient, namespace: str, ip: str, concurrency: int = 32) -> None:
        self.kube, self.ns, self.ip = kube, namespace, ip
        self.slots = asyncio.Semaphore(concurrency)
        self.started: set[str] = set()  # pod uids bound and reported Ready (or in progress)
        self.finishing: set[str] = set()
        """Terminating pod uids whose final delete was sent: a kubelet sends it once, though
        the delete itself (grace period 0) is one more MODIFIED event before DELETED."""
        self.tasks: set[asyncio.Task[None]] = set()

    def path(self, name: str = "", sub: str = "") -> str:
        return f"/api/v1/namespaces/{self.ns}/pods" + (f"/{name}" if name else "") + sub

    async def run(self) -> None:
        while True:
            listing = await self.kube.list(self.path(), labelSelector=SELECTOR)
            for pod in listing["items"]:
                self.handle("ADDED", pod)
            version = listing["metadata"]["resourceVersion"]
            try:
                async for kind, pod in self.kube.watch(
                    self.path(), resource_version=version, labelSelector=SELECTOR
                ):
                    if kind != "BOOKMARK":
                        self.handle(kind, pod)
            except (KubeApiError, KubeConnectionError) as exc:
                print(f"simkubelet: watch: {exc}", file=sys.stderr, flush=True)
                await asyncio.sleep(0.2)

    def handle(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        if kind == "DELETED":
            self.started.discard(uid)
            self.finishing.discard(uid)
        elif meta.get("deletionTimestamp"):
            if (pod.get("spec") or {}).get("nodeName") == NODE and uid not in self.finishing:
                self.finishing.add(uid)
                self._spawn(self._finish_delete(meta["name"], uid))
        elif uid not in self.started:
            self.started.add(uid)
            self._spawn(self._start(pod))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _start(self, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        name = meta["name"]
        now = _now()
        container = spec["containers"][0]
        status = {
            "phase": "Running",
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "hostIP": "127.0.0.1",
            "startTime": now,
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
            ],
        }
        try:
            async with self.slots:
                if not spec.get("nodeName"):
                    binding = {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": name},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
                    }
                    await self.kube.create(self.path(name, "/binding"), binding)
                await self.kube.patch(self.path(name, "/status"), {"status": status})
        except KubeApiError as exc:
            if exc.status not in (404, 409):  # gone, or deleted before it was bound
                print(f"simkubelet: pod {name}: {exc}", file=sys.stderr, flush=True)

    async def _finish_delete(self, name: str, uid: str) -> None:
        """What a kubelet does once a terminating pod's containers stopped: delete it for good."""
        async with self.slots:
            with contextlib.suppress(KubeApiError):
                await self.kube.delete(self.path(name), uid=uid, gracePeriodSeconds=0)


async def _healthz(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer one request with 200 (the operator probes every pod's ``/healthz``)."""
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
    writer.close()


def _free_ip(port: int, prefix: str) -> str:
    """A loopback address whose ``port`` is free (other stacks may hold some)."""
    a, b = prefix.split(".")
    for i in range(1000):
        ip = f"{a}.{b}.{i // 250}.{i % 250 + 2}"
        with socket.socket() as probe:
            try:
                probe.bind((ip, port))
            except OSError:
                continue
        return ip
    raise RuntimeError("no free pod IP")


async def _main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--port", type=int, default=8080, help="the operator's sandbox port")
    parser.add_argument("--ip-prefix", default=f"127.{64 + os.getpid() % 160}")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    ip = _free_ip(args.port, args.ip_prefix)
    server = await asyncio.start_server(_healthz, ip, args.port, backlog=1024)
    kube = KubeClient(KubeCredentials.load(args.kubeconfig), max_connections=args.concurrency)
    kubelet = SimulatedKubelet(kube, args.namespace, ip, args.concurrency)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    task = asyncio.create_task(kubelet.run())
    print(f"simkubelet: ready, pods answer on {ip}:{args.port}", flush=True)
    await stop.wait()
    task.cancel()
    server.close()
    await kube.aclose()


if __name__ == "__main__":
    asyncio.run(_main())
