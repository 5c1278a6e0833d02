"""Benchmark the Docker backend against the local backend, measured in the same run.

What a container costs over a local sandbox, on one machine, one after the other:

* ``container_start_ms_p50``: a container of the sandbox image created and started, until its
  supervisor answers (the Docker backend with no warm pool), beside ``local_acquire_ms_p50``:
  a local sandbox spawned cold until its supervisor answers (the local backend with no warm
  pool). ``container_to_local_ratio`` is their quotient.
* ``container_warm_acquire_ms_p50`` and ``local_warm_acquire_ms_p50``: an acquire that a warm
  pool serves (what an episode's reset pays once pools are full), and their quotient.
* ``container_uss_mb`` and ``local_uss_mb``: unique memory of every process of one sandbox
  serving the example app (supervisor and app).
* ``escape_payloads`` and ``escape_payloads_denied`` (:mod:`a01gym.sandbox.escapes`) in a
  container.

Targets are ratios to the local backend in the same run (the machine's floor for the same
work): a cold container start within 25× a cold local spawn (it creates a network endpoint,
mounts and a cgroup, then starts a Python interpreter that imports the supervisor, where a
local spawn forks a warm zygote), a warm acquire within 3× (both hand out a sandbox that
already answers), and every escape payload denied. Needs a running Docker engine and the
images (``make images``).

    python bench/containers.py --quick --json-out bench/results/containers.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

import report
from a01gym.sandbox import escapes, protocol
from a01gym.sandbox.docker import DockerBackend, DockerSandbox
from a01gym.sandbox.local import LocalBackend, LocalSandbox
from a01gym.scenario.bundle import Bundle

BUNDLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "idor_notes"

TARGETS = {
    "container_to_local_ratio": ("<=", 25),
    "warm_acquire_ratio": ("<=", 3),
    "escape_payloads_escaped": ("==", 0),
}


async def _cold(backend: DockerBackend | LocalBackend, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        sandbox = await backend.acquire()
        await sandbox.client.health()
        samples.append((time.perf_counter() - began) * 1000)
        await backend.release(sandbox)  # type: ignore[arg-type]
    return samples


async def _warm(backend: DockerBackend | LocalBackend, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        while backend.stats().idle < 1:  # the pool refilled
            await asyncio.sleep(0.01)
        began = time.perf_counter()
        sandbox = await backend.acquire()
        await sandbox.client.health()
        samples.append((time.perf_counter() - began) * 1000)
        await backend.release(sandbox)  # type: ignore[arg-type]
    return samples


async def _serving(backend: DockerBackend | LocalBackend) -> DockerSandbox | LocalSandbox:
    bundle = Bundle.load(BUNDLE)
    sandbox = await backend.acquire()
    status = await sandbox.client.load_workspace(
        bundle.workspace, entrypoint=bundle.manifest.entrypoint, start=True
    )
    assert status.state is protocol.AppState.RUNNING, status.error
    for _ in range(5):
        await sandbox.client.request(protocol.ProxyRequest(path="/health"))
    return sandbox


def _uss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_full_info().uss
        except psutil.Error:
            continue
    return total / 2**20


async def _container_pids(backend: DockerBackend, sandbox: DockerSandbox) -> list[int]:
    top = await backend._call("GET", f"/containers/{sandbox.container_id}/top", params={})
    column = top.json()["Titles"].index("PID")
    return [int(row[column]) for row in top.json()["Processes"]]


def _local_pids(backend: LocalBackend, sandbox: LocalSandbox) -> list[int]:
    uid = backend.uid_of(sandbox)
    zygote = psutil.Process(backend._zygote.pid)  # type: ignore[union-attr]
    return [p.pid for p in zygote.children(recursive=True) if p.uids().real == uid]


async def run(quick: bool) -> dict[str, Any]:
    rounds = 10 if quick else 40
    metrics: dict[str, Any] = {"rounds": rounds}
    async with LocalBackend(pool_size=0) as local:
        local_cold = await _cold(local, rounds)
        sandbox = await _serving(local)
        metrics["local_uss_mb"] = _uss_mb(_local_pids(local, sandbox))
        await local.release(sandbox)
    async with LocalBackend(pool_size=2) as local:
        local_warm = await _warm(local, rounds)
    async with DockerBackend(pool_size=0) as docker:
        container_cold = await _cold(docker, rounds)
        sandbox = await _serving(docker)
        metrics["container_uss_mb"] = _uss_mb(await _container_pids(docker, sandbox))
        await docker.release(sandbox)
        hostile, neighbour = await docker.acquire(), await docker.acquire()
        listener = await asyncio.start_server(lambda _r, w: w.close(), "0.0.0.0", 0)
        network = await docker._call("GET", f"/networks/{docker.settings.network}")
        try:
            await escapes.load(hostile)
            results = await escapes.run(
                hostile,
                escapes.payloads(
                    host=network.json()["IPAM"]["Config"][0]["Gateway"],
                    host_port=listener.sockets[0].getsockname()[1],
                    neighbour=neighbour.endpoint,
                ),
            )
        finally:
            listener.close()
            await docker.release(hostile)
            await docker.release(neighbour)
    async with DockerBackend(pool_size=2) as docker:
        container_warm = await _warm(docker, rounds)
    metrics["container_start_ms_p50"] = statistics.median(container_cold)
    metrics["local_acquire_ms_p50"] = statistics.median(local_cold)
    metrics["container_to_local_ratio"] = (
        metrics["container_start_ms_p50"] / metrics["local_acquire_ms_p50"]
    )
    metrics["container_warm_acquire_ms_p50"] = statistics.median(container_warm)
    metrics["local_warm_acquire_ms_p50"] = statistics.median(local_warm)
    metrics["warm_acquire_ratio"] = (
        metrics["container_warm_acquire_ms_p50"] / metrics["local_warm_acquire_ms_p50"]
    )
    metrics["escape_payloads"] = len(results)
    metrics["escape_payloads_denied"] = sum(r.denied for r in results)
    metrics["escape_payloads_escaped"] = len(results) - metrics["escape_payloads_denied"]
    metrics["escaped"] = [f"{r.name}: {r.detail}" for r in results if not r.denied]
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in metrics.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (~1 min)")
    parser.add_argument("--json-out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    began = time.perf_counter()
    metrics = asyncio.run(run(args.quick))
    report.emit(
        "containers", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out
    )


if __name__ == "__main__":
    main()
