"""Benchmark the Docker backend against the local backend, measured in the same run.

What a container costs over a local sandbox, on one machine, one after the other:

* ``container_start_ms_p50``: a container of the sandbox image created and started, until its
  supervisor answers (the Docker backend with no warm pool), beside two references:
  ``engine_floor_ms_p50``, the engine's own cost for the same container doing the least work
  (created with the same hardening and network, started, running ``python -c pass`` to its
  exit: what any one-container-per-task harness pays), and ``local_acquire_ms_p50``, a local
  sandbox spawned cold until its supervisor answers (the local backend with no warm pool).
  ``container_to_floor_ratio`` and ``container_to_local_ratio`` are the quotients.
* ``container_warm_acquire_ms_p50`` and ``local_warm_acquire_ms_p50``: an acquire that a warm
  pool serves (what an episode's reset pays once pools are full), and their quotient.
* ``container_uss_mb`` and ``local_uss_mb``: unique memory of every process of one sandbox
  serving the example app (supervisor and app).
* ``escape_payloads`` and ``escape_payloads_denied`` (:mod:`a01gym.sandbox.host.escapes`) in a
  container.

Targets are ratios to references measured in the same run: a cold start within 2× the
engine's floor (what the supervisor adds, importing itself and answering, costs no more than
the engine's own start of the container), a warm acquire within 1.5× the local backend's
(both hand out a sandbox that already answers), and every escape payload denied. The ratio
to a cold local spawn has no target: a local spawn forks a warm zygote, with no network
endpoint, mounts or cgroup to create, so that ratio measures what a container is, not our
code. Needs a running Docker engine and the images (``make images``).

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
from a01gym.sandbox import protocol
from a01gym.sandbox.host import docker_engine, escapes
from a01gym.sandbox.host.docker import DockerBackend, DockerSandbox
from a01gym.sandbox.host.local import LocalBackend, LocalSandbox
from a01gym.scenario.bundle import Bundle

BUNDLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "idor_notes"

TARGETS = {
    "container_to_floor_ratio": ("<=", 2),
    "warm_acquire_ratio": ("<=", 1.5),
    "escape_payloads_escaped": ("==", 0),
}


async def _acquires(
    backend: DockerBackend | LocalBackend, rounds: int, *, warm: bool
) -> list[float]:
    """Acquire until the supervisor answers, ``rounds`` times; ``warm``: each round first
    waits for the pool to refill, so every acquire is one the pool serves."""
    samples = []
    for _ in range(rounds):
        while warm and backend.stats().idle < 1:
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


async def _floor(backend: DockerBackend, rounds: int) -> list[float]:
    """The engine's own cost of one hardened container that runs an interpreter and exits."""
    body = docker_engine.container_config(backend.settings, token_dir=backend._tokens, labels={})  # type: ignore[arg-type]
    body["Entrypoint"], body["Cmd"] = ["python", "-c", "pass"], []
    samples = []
    for _ in range(rounds):
        began = time.perf_counter()
        created = await backend._call("POST", "/containers/create", json=body)
        identifier = created.json()["Id"]
        await backend._call("POST", f"/containers/{identifier}/start")
        await backend._call("POST", f"/containers/{identifier}/wait")
        samples.append((time.perf_counter() - began) * 1000)
        await backend._call("DELETE", f"/containers/{identifier}", params={"force": 1})
    return samples


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
        local_cold = await _acquires(local, rounds, warm=False)
        sandbox = await _serving(local)
        metrics["local_uss_mb"] = _uss_mb(_local_pids(local, sandbox))
        await local.release(sandbox)
    async with LocalBackend(pool_size=2) as local:
        local_warm = await _acquires(local, rounds, warm=True)
    async with DockerBackend(pool_size=0) as engine:
        floor = await _floor(engine, rounds)
        container_cold = await _acquires(engine, rounds, warm=False)
        sandbox = await _serving(engine)
        metrics["container_uss_mb"] = _uss_mb(await _container_pids(engine, sandbox))
        await engine.release(sandbox)
        hostile, neighbour = await engine.acquire(), await engine.acquire()
        listener = await asyncio.start_server(lambda _r, w: w.close(), "0.0.0.0", 0)
        network = await engine._call("GET", f"/networks/{engine.settings.network}")
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
            await engine.release(hostile)
            await engine.release(neighbour)
    async with DockerBackend(pool_size=2) as engine:
        container_warm = await _acquires(engine, rounds, warm=True)
    metrics["container_start_ms_p50"] = statistics.median(container_cold)
    metrics["engine_floor_ms_p50"] = statistics.median(floor)
    metrics["container_to_floor_ratio"] = (
        metrics["container_start_ms_p50"] / metrics["engine_floor_ms_p50"]
    )
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
