"""Runtime benchmark: a real ``a01gym serve`` process driven through the real OpenEnv client.

Measures, over ``/ws`` with ``GenericEnvClient``:

* ``reset_ms_p50`` / ``reset_ms_p99``: resets on one session;
* ``read_file_ms_p50`` / ``http_request_ms_p50``: steps on one session. After each reset
  the script waits ``--think-s`` (0.25 s) before stepping, standing in for the agent's first
  generation (an LLM takes far longer): on two cores, a step timed while the pool refill that
  the reset triggered is still running measures the refill. The throughput phase below has
  no pauses;
* ``verify_ms_p50``: the terminal hidden verification (``verify_ms`` of the breakdown) on
  the same single session, each round ending with an edit and ``submit``, so grading loads
  a changed workspace and restarts the app; ``submit_ms_p50`` is that whole step;
* ``episodes_per_s``: a scripted agent (reset, ~6 steps, submit) on 16 concurrent sessions;
  ``verify_ms_p50_at_16_sessions`` is the grading time there, where every step of 16
  episodes queues for two cores (no target; reported so nothing is hidden);
* ``sessions_churn_leaks``: open/close 1,000 sessions (a quarter reset an episode, half hang
  up without a close message), then compare the server's processes, file descriptors, open
  sessions and sandboxes in use with the baseline, net of any change in the number of warm
  spares (a bounded cache). 0 means nothing leaked.

Prints the JSON report and one summary line (``bench/report.py``); ``--json-out FILE`` also
writes the JSON.

    python bench/runtime.py --quick --json-out runs/bench/runtime.json
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
from openenv.core.generic_client import GenericEnvClient

import report
import serving

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"
TARGETS = {
    "reset_ms_p50": ("<=", 30.0),
    "reset_ms_p99": ("<=", 120.0),
    "read_file_ms_p50": ("<=", 3.0),
    "http_request_ms_p50": ("<=", 6.0),
    "verify_ms_p50": ("<=", 500.0),
    "episodes_per_s": (">=", 8.0),
    "sessions_churn_leaks": ("<=", 0),
}
_PROCESSES_PER_SANDBOX = 2  # supervisor, app (or its standby): the machine zygote launches apps
SCRIPT = [
    {"tool": "list_files"},
    {"tool": "read_file", "path": "app/routers/notes.py"},
    {"tool": "search", "pattern": "owner_id"},
    {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "alice"},
    {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "bob"},
    {"tool": "read_file", "path": "app/auth.py"},
    {"tool": "submit"},
]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


async def _timed(coro: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await coro
    return result, (time.perf_counter() - started) * 1000


EDIT = {
    "tool": "edit_file",
    "path": "app/db.py",
    "old": '"""SQLite access for the notes service."""',
    "new": '"""SQLite access for the notes service (reviewed)."""',
}


async def _latencies(url: str, n: int, think_s: float) -> dict[str, float]:
    resets, reads, requests, verify, submits = [], [], [], [], []
    async with GenericEnvClient(base_url=url) as env:
        for i in range(n):
            _, ms = await _timed(env.reset(seed=i))
            resets.append(ms)
            await asyncio.sleep(think_s)
            for _ in range(3):
                result, ms = await _timed(env.step({"tool": "read_file", "path": "app/db.py"}))
                assert result.observation["error"] is None
                reads.append(ms)
                result, ms = await _timed(
                    env.step(
                        {
                            "tool": "http_request",
                            "method": "GET",
                            "path": "/notes",
                            "actor": "alice",
                        }
                    )
                )
                assert result.observation["error"] is None, result.observation["error"]
                requests.append(ms)
            result = await env.step(EDIT)  # grading then loads a changed workspace
            assert result.observation["error"] is None, result.observation["error"]
            result, ms = await _timed(env.step({"tool": "submit"}))
            submits.append(ms)
            verify.append(result.observation["reward_breakdown"]["verify_ms"])
    return {
        "reset_ms_p50": _pct(resets, 0.5),
        "reset_ms_p99": _pct(resets, 0.99),
        "read_file_ms_p50": _pct(reads, 0.5),
        "http_request_ms_p50": _pct(requests, 0.5),
        "verify_ms_p50": _pct(verify, 0.5),
        "submit_ms_p50": _pct(submits, 0.5),
    }


async def _throughput(url: str, episodes: int, sessions: int) -> dict[str, float]:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(episodes):
        queue.put_nowait(i)
    verify: list[float] = []
    rewards: list[float] = []

    async def worker() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            while not queue.empty():
                seed = queue.get_nowait()
                await env.reset(seed=1000 + seed)
                for action in SCRIPT:
                    result = await env.step(action)
                breakdown = result.observation["reward_breakdown"]
                verify.append(breakdown["verify_ms"])
                rewards.append(result.reward)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(sessions)))
    elapsed = time.perf_counter() - started
    return {
        "episodes_per_s": round(episodes / elapsed, 3),
        "verify_ms_p50_at_16_sessions": _pct(verify, 0.5),
        "throughput_episodes": episodes,
        "throughput_sessions": sessions,
        "throughput_mean_reward": round(statistics.fmean(rewards), 4),
    }


def _metric(text: str, name: str, labels: str = "") -> float:
    pattern = (
        re.escape(name) + (re.escape("{" + labels + "}") if labels else r"(?:\{\})?") + r" (\S+)"
    )
    match = re.search(r"^" + pattern + r"$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def _snapshot(url: str, server: psutil.Process, pool_size: int) -> dict[str, int]:
    """Server resources once the pool has settled back to ``pool_size`` idle sandboxes."""
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            text = (await http.get(url + "/metrics")).text
            idle = _metric(text, "a01gym_sandbox_pool_sandboxes", 'state="idle"')
            starting = _metric(text, "a01gym_sandbox_pool_sandboxes", 'state="starting"')
            spares = _metric(text, "a01gym_env_warm_spares_sandboxes")
            in_use = _metric(text, "a01gym_sandbox_pool_sandboxes", 'state="in_use"') - spares
            active = sum(
                float(v)
                for v in re.findall(r"^a01gym_gateway_sessions_active\{[^}]*\} (\S+)$", text, re.M)
            )
            if idle == pool_size and starting == 0 and in_use == 0 and active == 0:
                break
            await asyncio.sleep(0.1)
    processes = server.children(recursive=True)
    return {
        "processes": len(processes),
        "fds": server.num_fds(),
        "sandboxes_in_use": int(in_use),
        "sessions_active": int(active),
        "warm_spares": int(spares),
    }


async def _churn(url: str, server: psutil.Process, sessions: int, pool_size: int) -> dict[str, Any]:
    before = await _snapshot(url, server, pool_size)
    semaphore = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with semaphore:
            env = GenericEnvClient(base_url=url)
            await env.connect()
            if i % 4 == 0:
                await env.reset(seed=i)
            if i % 2 == 0:
                await env.close()
            else:
                assert env._ws is not None
                await env._ws.close()  # hang up without a close message

    await asyncio.gather(*(one(i) for i in range(sessions)))
    after = await _snapshot(url, server, pool_size)
    # Warm spares are a cache, not a leak, and their number may differ: each one holds
    # _PROCESSES_PER_SANDBOX processes and one keep-alive connection (an fd) of the server.
    spares = after["warm_spares"] - before["warm_spares"]
    allowed = {"processes": _PROCESSES_PER_SANDBOX * spares, "fds": spares, "warm_spares": spares}
    leaks = sum(max(0, after[k] - before[k] - allowed.get(k, 0)) for k in before)
    return {
        "sessions_churn_leaks": leaks,
        "churn_sessions": sessions,
        "churn_before": before,
        "churn_after": after,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    env = {
        "A01GYM_SANDBOX__POOL_SIZE": str(args.pool_size),
        "A01GYM_GATEWAY__MAX_SESSIONS": "256",
        # The churn hangs up mid-episode on purpose; with resume on, those sessions are kept
        # for a client that never comes back and would read as leaks until their grace ends.
        "A01GYM_GATEWAY__RESUME_GRACE_S": "0",
    }
    async with serving.gateway(args.cache, args.runs_dir, env=env) as served:
        url, server = served.url, psutil.Process(served.pid)
        await asyncio.sleep(1.0)
        result: dict[str, Any] = {}
        result.update(await _latencies(url, args.latency_rounds, args.think_s))
        result.update(await _throughput(url, args.episodes, args.sessions))
        result.update(await _churn(url, server, args.churn, args.pool_size))
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about a minute)")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--cache", type=Path, default=FIXTURE, help="scenario source")
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/a01gym-bench-runs"))
    parser.add_argument("--sessions", type=int, default=16, help="concurrent sessions")
    parser.add_argument("--pool-size", type=int, default=8, help="warm sandboxes")
    parser.add_argument(
        "--think-s", type=float, default=0.25, help="pause after each reset in the step timing"
    )
    args = parser.parse_args()
    args.latency_rounds = 40 if args.quick else 200
    args.episodes = 64 if args.quick else 320
    args.churn = 1000
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    report.emit("runtime", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
