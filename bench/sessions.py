"""Many sessions at once through the real OpenEnv client: a burst of resets, and steady stepping
after think times, the load ``bench/scale.py`` and ``bench/reset_cpu.py`` put on a gateway.

:func:`burst` opens ``n`` sessions whose resets are spread over a few seconds, each group of
``group_size`` sharing one random seed (so one scenario: a GRPO group). :func:`steady` has
them step as agents do, and :func:`ladder` finds the most sessions per core whose step p99
stays within a latency objective.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import time
from typing import Any

from openenv.core.generic_client import GenericEnvClient

import workload
from runtime import _pct

__all__ = ["RUNGS", "Session", "burst", "close", "ladder", "steady"]

RUNGS = (32, 64, 128, 256)
"""Session counts of the ladder below the whole burst."""
_RUN_TESTS = {"tool": "run_tests"}


@dataclasses.dataclass
class Session:
    """An open session and what its scenario lets it do (None on the reference server)."""

    env: GenericEnvClient
    moves: workload.Moves | None


async def _open(
    url: str, i: int, spread_s: float, n: int, seed: int, plain: bool
) -> tuple[Session, float | str]:
    """Connect and reset session ``i`` at its moment in the burst; latency ms or an error.

    Args:
        plain: the server is the reference, whose first observation names no scenario.
    """
    await asyncio.sleep(spread_s * i / n)
    env = GenericEnvClient(base_url=url, message_timeout_s=180)
    started = time.perf_counter()
    try:
        await env.connect()
        first = await env.reset(seed=seed)
    except Exception as exc:
        return Session(env, None), f"{type(exc).__name__}: {exc}"[:300]
    latency = (time.perf_counter() - started) * 1000
    return Session(env, None if plain else workload.Moves.of(first.observation)), latency


async def burst(
    url: str, n: int, spread_s: float, name: str, group_size: int = 1, plain: bool = False
) -> tuple[list[Session], dict[str, Any]]:
    """``n`` sessions reset within ``spread_s``; each group of ``group_size`` shares a seed."""
    seeds = random.Random(29)
    groups = [seeds.randrange(2**31) for _ in range(0, n, group_size)]
    opened = await asyncio.gather(
        *(_open(url, i, spread_s, n, groups[i // group_size], plain) for i in range(n))
    )
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
    return [session for session, r in opened if isinstance(r, float)], result


async def steady(sessions: list[Session], duration_s: float, name: str) -> dict[str, Any]:
    """Every session steps after each think time for ``duration_s``; ``name_*`` figures."""
    steps: dict[str, list[float]] = {"read_file": [], "http_request": [], "run_tests": []}
    errors: list[str] = []
    stop = time.perf_counter() + duration_s

    async def agent(session: Session, rng: random.Random) -> None:
        assert session.moves is not None
        n = 0
        while True:
            await asyncio.sleep(rng.uniform(2.0, 6.0))
            if time.perf_counter() > stop:
                return
            n += 1  # one step in ten runs the tests, drawn so short runs get their share
            moves = session.moves
            action = (
                _RUN_TESTS if rng.random() < 0.1 else moves.read() if n % 2 else moves.request()
            )
            started = time.perf_counter()
            try:
                result = await session.env.step(action)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                return
            steps[action["tool"]].append((time.perf_counter() - started) * 1000)
            if result.observation.get("error") is not None:
                errors.append(str(result.observation["error"])[:200])

    await asyncio.gather(*(agent(s, random.Random(i)) for i, s in enumerate(sessions)))
    every = [ms for values in steps.values() for ms in values]
    return {
        f"{name}_step_ms_p99": _pct(every, 0.99) if every else float("inf"),
        f"{name}_step_ms_p50": _pct(every, 0.5) if every else None,
        f"{name}_sessions": len(sessions),
        f"{name}_steps": len(every),
        f"{name}_errors": len(errors),
        f"{name}_ms_p99_by_tool": {t: _pct(v, 0.99) for t, v in steps.items() if v},
        **({f"{name}_first_errors": sorted(set(errors))[:3]} if errors else {}),
    }


async def ladder(sessions: list[Session], duration_s: float, slo_ms: float) -> dict[str, Any]:
    """Steady phases at each of ``RUNGS`` sessions (disjoint slices of ``sessions``, so no
    episode runs out of steps), then at all of them; the most per core within ``slo_ms``."""
    result: dict[str, Any] = {}
    fits, start = [], 0
    for rung in RUNGS:
        if start + rung > len(sessions):  # a burst with errors leaves fewer
            break
        name = f"steady_{rung}"
        result.update(await steady(sessions[start : start + rung], duration_s, name))
        start += rung
        if result[f"{name}_step_ms_p99"] <= slo_ms and not result[f"{name}_errors"]:
            fits.append(rung)
    name = "steady_512"  # all of them: 512 unless --sessions or errors say otherwise
    result.update(await steady(sessions, duration_s, name))
    if result[f"{name}_step_ms_p99"] <= slo_ms and not result[f"{name}_errors"]:
        fits.append(len(sessions))
    cores = len(os.sched_getaffinity(0))
    result["cores"] = cores
    result["step_slo_ms"] = round(slo_ms, 2)
    result["sessions_per_core_at_slo"] = max(fits, default=0) / cores
    return result


async def close(sessions: list[Session]) -> None:
    async def one(session: Session) -> None:
        with contextlib.suppress(Exception):  # the measurement is over; the server reaps
            await session.env.close()

    await asyncio.gather(*(one(s) for s in sessions))
