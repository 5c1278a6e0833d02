"""Scale benchmark: a GRPO-sized batch on one machine, through a real ``a01gym serve`` process
and the real OpenEnv client (``GenericEnvClient``), all sessions on one asyncio loop.

Measures, on the local backend:

* ``burst_512_errors`` / ``burst_512_reset_ms_p99``: 512 sessions connect and reset within
  4 s on a cold gateway (a pool of ``--pool-size`` empty sandboxes, no warm spares yet);
* ``steady_512_step_ms_p99``: the same 512 sessions each step after a 2-6 s think time
  (``read_file`` and ``http_request`` alternating, ``run_tests`` one step in ten at random) for
  ``--steady-s`` seconds (60; 20 with ``--quick``);
* ``uss_gb_512``: USS of the whole gateway process tree (gateway, zygote, every sandbox)
  with those 512 sessions live, GiB;
* ``prewarmed_burst_512_errors`` / ``prewarmed_burst_512_reset_ms_p99``: after every session
  closed and the warm spares refilled to the size of the last burst (``--warm-spares``
  bounds them), 512 new sessions reset within 4 s again;
* ``hang_submit_s`` / ``hang_submit_reward``: one episode whose agent adds a middleware that
  sleeps on every request, then submits: how long ``submit`` takes, and its reward.

Every episode uses the fixture scenario, as a GRPO group samples one prompt many times. Each
burst also reports the CPU it cost per reset (``*_server_cpu_ms_per_reset``: the gateway's
whole process tree; ``*_client_cpu_ms_per_reset``: this script), which, unlike latency on a
shared machine, does not depend on what else runs.
Prints the JSON report and one summary line (``bench/report.py``).

    python bench/scale.py --quick --json-out runs/bench/scale.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
from openenv.core.generic_client import GenericEnvClient

import report
import serving
from runtime import FIXTURE, _metric, _pct

TARGETS = {
    "burst_512_errors": ("<=", 0),
    "burst_512_reset_ms_p99": ("<=", 10_000.0),
    "prewarmed_burst_512_reset_ms_p99": ("<=", 250.0),
    "steady_512_step_ms_p99": ("<=", 100.0),
    "uss_gb_512": ("<=", 12.0),
    "hang_submit_s": ("<=", 15.0),
    "hang_submit_reward": ("<=", 0.0),
}
_READ = {"tool": "read_file", "path": "app/routers/notes.py"}
_REQUEST = {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "alice"}
_RUN_TESTS = {"tool": "run_tests"}
_HANG = """

import asyncio as _asyncio


@app.middleware("http")
async def _audit(request, call_next):
    await _asyncio.sleep(3600)
    return await call_next(request)
"""


async def _open(url: str, i: int, spread_s: float, n: int) -> tuple[GenericEnvClient, float | str]:
    """Connect and reset session ``i`` at its moment in the burst; latency ms or an error."""
    await asyncio.sleep(spread_s * i / n)
    env = GenericEnvClient(base_url=url, message_timeout_s=180)
    started = time.perf_counter()
    try:
        await env.connect()
        await env.reset(seed=i)
    except Exception as exc:
        return env, f"{type(exc).__name__}: {exc}"[:300]
    return env, (time.perf_counter() - started) * 1000


async def _burst(url: str, n: int, spread_s: float, name: str) -> tuple[list[Any], dict[str, Any]]:
    opened = await asyncio.gather(*(_open(url, i, spread_s, n) for i in range(n)))
    latencies = [r for _, r in opened if isinstance(r, float)]
    errors = [r for _, r in opened if isinstance(r, str)]
    result: dict[str, Any] = {
        f"{name}_errors": len(errors),
        f"{name}_reset_ms_p50": _pct(latencies, 0.5) if latencies else None,
        f"{name}_reset_ms_p99": _pct(latencies, 0.99) if latencies else float("inf"),
        f"{name}_reset_ms_max": round(max(latencies), 1) if latencies else None,
    }
    if errors:
        result[f"{name}_first_errors"] = sorted(set(errors))[:3]
    return [env for env, r in opened if isinstance(r, float)], result


async def _steady(envs: list[GenericEnvClient], duration_s: float) -> dict[str, Any]:
    steps: dict[str, list[float]] = {"read_file": [], "http_request": [], "run_tests": []}
    errors: list[str] = []
    stop = time.perf_counter() + duration_s

    async def agent(env: GenericEnvClient, rng: random.Random) -> None:
        n = 0
        while True:
            await asyncio.sleep(rng.uniform(2.0, 6.0))
            if time.perf_counter() > stop:
                return
            n += 1  # one step in ten runs the tests, drawn so short runs get their share
            action = _RUN_TESTS if rng.random() < 0.1 else _READ if n % 2 else _REQUEST
            started = time.perf_counter()
            try:
                result = await env.step(action)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                return
            steps[action["tool"]].append((time.perf_counter() - started) * 1000)
            if result.observation.get("error") is not None:
                errors.append(str(result.observation["error"])[:200])

    await asyncio.gather(*(agent(env, random.Random(i)) for i, env in enumerate(envs)))
    every = [ms for values in steps.values() for ms in values]
    return {
        "steady_512_step_ms_p99": _pct(every, 0.99) if every else float("inf"),
        "steady_512_step_ms_p50": _pct(every, 0.5) if every else None,
        "steady_steps": len(every),
        "steady_errors": len(errors),
        "steady_ms_p99_by_tool": {t: _pct(v, 0.99) for t, v in steps.items() if v},
        **({"steady_first_errors": sorted(set(errors))[:3]} if errors else {}),
    }


def _tree_cpu_s(server: psutil.Process) -> float:
    """CPU seconds used by the gateway's process tree, reaped children included."""
    total = 0.0
    for proc in [server, *server.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # exited meanwhile
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


async def _measured_burst(
    url: str, server: psutil.Process, n: int, spread_s: float, name: str
) -> tuple[list[Any], dict[str, Any]]:
    """A burst plus the CPU it cost per reset: the gateway's tree, and this client."""
    tree, own = _tree_cpu_s(server), _own_cpu_s()
    envs, result = await _burst(url, n, spread_s, name)
    result[f"{name}_server_cpu_ms_per_reset"] = round((_tree_cpu_s(server) - tree) * 1000 / n, 1)
    result[f"{name}_client_cpu_ms_per_reset"] = round((_own_cpu_s() - own) * 1000 / n, 1)
    return envs, result


def _uss_gb(server: psutil.Process) -> float:
    total = 0
    for proc in [server, *server.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # exited meanwhile
            total += proc.memory_full_info().uss
    return round(total / 2**30, 3)


async def _close(envs: list[GenericEnvClient]) -> None:
    async def one(env: GenericEnvClient) -> None:
        with contextlib.suppress(Exception):  # the measurement is over; the server reaps
            await env.close()

    await asyncio.gather(*(one(env) for env in envs))


async def _gauges(http: httpx.AsyncClient, url: str) -> dict[str, float]:
    text = (await http.get(url + "/metrics")).text
    return {
        "spares": _metric(text, "a01gym_env_warm_spares_sandboxes"),
        "in_use": _metric(text, "a01gym_sandbox_pool_sandboxes", 'state="in_use"'),
        "starting": _metric(text, "a01gym_sandbox_pool_sandboxes", 'state="starting"'),
    }


async def _refilled(url: str, want: int, timeout_s: float) -> dict[str, float]:
    """Wait until the warm spares hold ``want`` sandboxes (or stop growing); returns gauges."""
    async with httpx.AsyncClient(timeout=30) as http:
        began, last, since = time.perf_counter(), -1.0, time.perf_counter()
        while time.perf_counter() - began < timeout_s:
            gauges = await _gauges(http, url)
            if gauges["spares"] >= want:
                break
            if gauges["spares"] != last:
                last, since = gauges["spares"], time.perf_counter()
            elif time.perf_counter() - since > 20:
                break  # stopped growing: report what it reached
            await asyncio.sleep(0.5)
        gauges["refill_s"] = round(time.perf_counter() - began, 1)
        return gauges


async def _hang_submit(url: str) -> dict[str, Any]:
    async with GenericEnvClient(base_url=url, message_timeout_s=600) as env:
        await env.reset(seed=99_999)
        main = (await env.step({"tool": "read_file", "path": "app/main.py"})).observation
        source = main["result"]["content"] if main.get("result") else None
        if source is None:
            raise RuntimeError(f"could not read app/main.py: {main.get('error')}")
        await env.step({"tool": "write_file", "path": "app/main.py", "content": source + _HANG})
        started = time.perf_counter()
        result = await env.step({"tool": "submit"})
        return {
            "hang_submit_s": round(time.perf_counter() - started, 2),
            "hang_submit_reward": result.reward,
        }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from a01gym.capacity import default_max_sandboxes, default_max_sessions

    n = args.sessions
    result: dict[str, Any] = {
        "sessions": n,
        "max_sessions": args.max_sessions,
        "max_sandboxes": args.max_sandboxes,
        "pool_size": args.pool_size,
        "default_max_sessions_here": default_max_sessions(),
        "default_max_sandboxes_here": default_max_sandboxes(),
    }
    options = ["--max-sessions", str(args.max_sessions), "--max-sandboxes", str(args.max_sandboxes)]
    options += ["--pool-size", str(args.pool_size), "--warm-spares", str(args.sessions)]
    async with serving.gateway(
        args.cache,
        args.runs_dir,
        args=options,
        env={"A01GYM_GATEWAY__IDLE_TIMEOUT_S": "0"},
        log=args.server_log,
        stop_timeout_s=120,
    ) as served:
        url, server = served.url, psutil.Process(served.pid)
        await asyncio.sleep(2.0)  # the pool of --pool-size fills
        envs, burst = await _measured_burst(url, server, n, args.spread_s, "burst_512")
        result.update(burst)
        result.update(await _steady(envs, args.steady_s))
        result["uss_gb_512"] = _uss_gb(server)
        result["processes_512"] = len(server.children(recursive=True))
        await _close(envs)
        result["refill"] = await _refilled(url, n, timeout_s=args.refill_timeout_s)
        envs, burst = await _measured_burst(url, server, n, args.spread_s, "prewarmed_burst_512")
        result.update(burst)
        await _close(envs)
        if not args.no_hang:
            result.update(await _hang_submit(url))
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a 20 s steady phase, not 60 s")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--cache", type=Path, default=FIXTURE, help="scenario source")
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/a01gym-bench-runs"))
    parser.add_argument("--sessions", type=int, default=512, help="sessions in each burst")
    parser.add_argument("--spread-s", type=float, default=4.0, help="a burst's resets span this")
    parser.add_argument("--max-sessions", type=int, default=600)
    parser.add_argument("--max-sandboxes", type=int, default=600)
    parser.add_argument("--pool-size", type=int, default=4, help="empty sandboxes kept warm")
    parser.add_argument("--steady-s", type=float, help="steady phase length (default 60, 20)")
    parser.add_argument("--refill-timeout-s", type=float, default=180.0)
    parser.add_argument("--server-log", action="store_true", help="show the gateway's stderr")
    parser.add_argument(
        "--no-hang", action="store_true", help="skip the hanging submit (for tuning runs)"
    )
    args = parser.parse_args()
    args.steady_s = args.steady_s or (20.0 if args.quick else 60.0)
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    targets = {k: v for k, v in TARGETS.items() if k in metrics}
    report.emit("scale", metrics, targets, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
