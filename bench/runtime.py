"""Runtime benchmark: a real ``a01gym serve`` process and OpenEnv's reference server, both
driven through the real OpenEnv client in the same run.

The workload is a factory-built cache (``bench/workload.py``: every family, both data-access
styles; ``--cache`` serves another), each reset drawing a scenario at random (a random seed for
the gateway's sampler), as a trainer's sampler does. The reference (``bench/reference.py``) is
a trivial tool environment built only from ``openenv``'s ``create_app``, in its own process:
what the protocol costs with nothing behind it. Rounds alternate between the two servers, so
both see the same machine. Over ``/ws`` with ``GenericEnvClient``:

* ``random_reset_ms_p50`` / ``_p99``: resets on one session, against
  ``reference_reset_ms_p50`` / ``_p99``; ``random_reset_ratio_p50`` / ``_p99`` are the
  quotients (p50 over p50, p99 over p99);
* ``read_file_ms_p50`` (the app's entry module) against ``reference_step_ms_p50`` (the
  reference's ``read_file``): ``step_ratio_p50``; ``http_request_ms_p50`` (a GET through the
  app) and its ``http_request_ratio_p50``. After each reset the script waits ``--think-s``
  (0.25 s) before stepping, standing in for the agent's first generation (an LLM takes far
  longer): on two cores, a step timed while the pool refill that the reset triggered is still
  running measures the refill. The throughput phase below has no pauses;
* ``verify_ms_p50``: the terminal hidden verification (``verify_ms`` of the breakdown) on
  the same single session, each round ending with an edit and ``submit``, so grading loads
  a changed workspace and restarts the app; ``submit_ms_p50`` is that whole step;
* ``episodes_per_s``: a scripted agent (reset, ~6 steps, submit) on 16 concurrent sessions;
  ``verify_ms_p50_at_16_sessions`` is the grading time there, where every step of 16
  episodes queues for two cores;
* ``read_file_server_cpu_units`` and ``grading_server_cpu_units``: the gateway tree's CPU
  (gateway, zygote, every sandbox) per ``read_file`` step (100 in runs of 25; 500 without
  ``--quick``) and per grading (4 submits, each after an edit; 16), in units of the
  calibration workload timed in this run (``_ms`` beside them): costs that neither the load
  nor the machine's speed moves much (no target: a record for A/Bs, ``tools/bench_ab.py``);
* ``sessions_churn_leaks``: open/close 1,000 sessions (a quarter reset an episode, half hang
  up without a close message), then compare the server's processes, file descriptors, open
  sessions and sandboxes in use with the baseline, net of any change in the number of warm
  spares (a bounded cache). 0 means nothing leaked.

Targets are the ratios (issue 29): a random reset within 10× the reference's at p50 and 30×
at p99, a ``read_file`` within 2× the reference's step, and no leak. Absolute figures,
``calibration_ms`` (``bench/calibration.py``) and the load stay in the JSON beside them.

Prints the JSON report and one summary line (``bench/report.py``); ``--json-out FILE`` also
writes the JSON.

    python bench/runtime.py --quick --json-out runs/bench/runtime.json
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
from openenv.core.generic_client import GenericEnvClient

import calibration
import reference
import report
import serving
import workload

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"
TARGETS = {
    "random_reset_ratio_p50": ("<=", 10.0),
    "random_reset_ratio_p99": ("<=", 30.0),
    "step_ratio_p50": ("<=", 2.0),
    "sessions_churn_leaks": ("<=", 0),
}
_PROCESSES_PER_SANDBOX = 2  # supervisor, app (or its standby): the machine zygote launches apps
_REFERENCE_READ = {"tool": "read_file", "path": "app/db.py"}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


async def _timed(coro: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await coro
    return result, (time.perf_counter() - started) * 1000


def _ok(result: Any) -> Any:
    """``result``, after checking its observation carries no error."""
    error = result.observation.get("error")
    assert error is None, error
    return result


async def _reference_round(ref: GenericEnvClient, seed: int, into: dict[str, list]) -> None:
    _, ms = await _timed(ref.reset(seed=seed))
    into["ref_resets"].append(ms)
    for _ in range(3):
        result, ms = await _timed(ref.step(_REFERENCE_READ))
        _ok(result)
        into["ref_steps"].append(ms)


async def _gateway_round(
    env: GenericEnvClient, seed: int, think_s: float, into: dict[str, list]
) -> None:
    first, ms = await _timed(env.reset(seed=seed))
    into["resets"].append(ms)
    moves = workload.Moves.of(_ok(first).observation)
    await asyncio.sleep(think_s)
    for _ in range(3):
        result, ms = await _timed(env.step(moves.read()))
        into["reads"].append(ms)
        read = _ok(result).observation
        result, ms = await _timed(env.step(moves.request()))
        _ok(result)
        into["requests"].append(ms)
    # A changed workspace, so grading loads it and restarts the app.
    _ok(await env.step(moves.edit(read["result"]["content"])))
    result, ms = await _timed(env.step({"tool": "submit"}))
    into["submits"].append(ms)
    into["verify"].append(result.observation["reward_breakdown"]["verify_ms"])


async def _latencies(url: str, ref_url: str, n: int, think_s: float) -> dict[str, float]:
    """``n`` rounds, each one on the reference server and one on the gateway."""
    samples: dict[str, list[float]] = {
        k: []
        for k in ("ref_resets", "ref_steps", "resets", "reads", "requests", "submits", "verify")
    }
    seeds = random.Random(29)
    async with (
        GenericEnvClient(base_url=url) as env,
        GenericEnvClient(base_url=ref_url) as ref,
    ):
        for _ in range(n):
            seed = seeds.randrange(2**31)
            await _reference_round(ref, seed, samples)
            await _gateway_round(env, seed, think_s, samples)
    result = {
        "reference_reset_ms_p50": _pct(samples["ref_resets"], 0.5),
        "reference_reset_ms_p99": _pct(samples["ref_resets"], 0.99),
        "reference_step_ms_p50": _pct(samples["ref_steps"], 0.5),
        "reference_step_ms_p99": _pct(samples["ref_steps"], 0.99),
        "random_reset_ms_p50": _pct(samples["resets"], 0.5),
        "random_reset_ms_p99": _pct(samples["resets"], 0.99),
        "read_file_ms_p50": _pct(samples["reads"], 0.5),
        "http_request_ms_p50": _pct(samples["requests"], 0.5),
        "verify_ms_p50": _pct(samples["verify"], 0.5),
        "submit_ms_p50": _pct(samples["submits"], 0.5),
    }
    ratios = {
        "random_reset_ratio_p50": ("random_reset_ms_p50", "reference_reset_ms_p50"),
        "random_reset_ratio_p99": ("random_reset_ms_p99", "reference_reset_ms_p99"),
        "step_ratio_p50": ("read_file_ms_p50", "reference_step_ms_p50"),
        "http_request_ratio_p50": ("http_request_ms_p50", "reference_step_ms_p50"),
    }
    for name, (ours, theirs) in ratios.items():
        result[name] = round(result[ours] / result[theirs], 2)
    return result


async def _throughput(
    url: str,
    episodes: int,
    sessions: int,
    script: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None,
) -> dict[str, float]:
    """Scripted episodes on ``sessions`` concurrent sessions; ``script`` maps a first
    observation to the episode's actions (by default :meth:`workload.Moves.script`)."""
    plan = script or (lambda first: workload.Moves.of(first).script())
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(episodes):
        queue.put_nowait(i)
    verify: list[float] = []
    rewards: list[float] = []

    async def worker() -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=120) as env:
            while not queue.empty():
                seed = queue.get_nowait()
                first = await env.reset(seed=1000 + seed)
                for action in plan(_ok(first).observation):
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


async def _cpu_costs(
    url: str, server: psutil.Process, unit_ms: float, steps: int, gradings: int
) -> dict[str, float]:
    """The gateway tree's CPU per ``read_file`` step and per grading, in calibration units.

    Measured apart from the latency rounds, whose samples are too short for the process
    clock's 10 ms tick: ``steps`` steps in runs of 25 in a row (tree CPU before and after each
    run, ÷ steps), and ``gradings`` episodes whose ``submit`` alone is bracketed (an edit
    first, so grading restarts the app on a changed workspace, as in the latency rounds)."""
    step_s = grading_ms = 0.0
    async with GenericEnvClient(base_url=url) as env:
        done = 0
        while done < steps:  # runs of 25, each in a fresh episode (its step budget is ~50)
            moves = workload.Moves.of(_ok(await env.reset(seed=290 + done)).observation)
            await asyncio.sleep(1.0)  # the app's background start and the pool refill settle
            before = serving.tree_cpu_s(server)
            for _ in range(min(25, steps - done)):
                _ok(await env.step(moves.read()))
                done += 1
            step_s += serving.tree_cpu_s(server) - before
        for seed in range(gradings):
            moves = workload.Moves.of(_ok(await env.reset(seed=291 + seed)).observation)
            read = _ok(await env.step(moves.read())).observation
            _ok(await env.step(moves.edit(read["result"]["content"])))
            await asyncio.sleep(1.0)
            before = serving.tree_cpu_s(server)
            _ok(await env.step({"tool": "submit"}))
            grading_ms += (serving.tree_cpu_s(server) - before) * 1000
    per_step, per_grading = step_s * 1000 / steps, grading_ms / gradings
    return {
        "read_file_server_cpu_ms": round(per_step, 3),
        "read_file_server_cpu_units": calibration.units(per_step, unit_ms),
        "grading_server_cpu_ms": round(per_grading, 1),
        "grading_server_cpu_units": calibration.units(per_grading, unit_ms),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    # the build runs its own event loop (and takes minutes the first time): not on this one
    cache = args.cache or await asyncio.to_thread(workload.factory_cache)
    result: dict[str, Any] = {"cache": str(cache), **workload.cache_mix(cache)}
    result["calibration_ms"] = calibration.measure()
    env = {
        "A01GYM_SANDBOX__POOL_SIZE": str(args.pool_size),
        "A01GYM_GATEWAY__MAX_SESSIONS": "256",
        # The churn hangs up mid-episode on purpose; with resume on, those sessions are kept
        # for a client that never comes back and would read as leaks until their grace ends.
        "A01GYM_GATEWAY__RESUME_GRACE_S": "0",
    }
    async with (
        serving.gateway(cache, args.runs_dir, env=env) as served,
        reference.serve() as ref,
    ):
        url, server = served.url, psutil.Process(served.pid)
        await asyncio.sleep(1.0)
        result.update(await _latencies(url, ref.url, args.latency_rounds, args.think_s))
        unit_ms = result["calibration_ms"]
        result.update(await _cpu_costs(url, server, unit_ms, args.cpu_steps, args.cpu_gradings))
        result.update(await _throughput(url, args.episodes, args.sessions))
        result.update(await _churn(url, server, args.churn, args.pool_size))
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (about a minute)")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument(
        "--cache", type=Path, help="scenario source (default: the factory-built bench cache)"
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/a01gym-bench-runs"))
    parser.add_argument("--sessions", type=int, default=16, help="concurrent sessions")
    parser.add_argument("--pool-size", type=int, default=8, help="warm sandboxes")
    parser.add_argument(
        "--think-s", type=float, default=0.25, help="pause after each reset in the step timing"
    )
    args = parser.parse_args()
    args.latency_rounds = 40 if args.quick else 200
    args.cpu_steps, args.cpu_gradings = (100, 4) if args.quick else (500, 16)
    args.episodes = 64 if args.quick else 320
    args.churn = 1000
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    report.emit(
        "runtime",
        metrics,
        TARGETS,
        quick=args.quick,
        began=began,
        json_out=args.json_out,
        calibration_ms=metrics["calibration_ms"],
    )


if __name__ == "__main__":
    cli()
