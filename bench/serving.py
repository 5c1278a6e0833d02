"""The real servers a benchmark drives, each its own process on a free loopback port.

:func:`gateway` runs ``a01gym serve``; :func:`process` any server command (the reference server
of ``bench/reference.py``). Each is started as a subprocess (so its CPU and memory are its own,
apart from the client's) in a session of its own (so a scheduler autogroup of its own, as each
sandbox app has: the gateway and the reference server get the same share of the machine),
awaited until ``/health`` answers, and stopped by PID with SIGTERM when the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import psutil

__all__ = ["START_TIMEOUT_S", "Served", "gateway", "process", "tree_cpu_s"]

START_TIMEOUT_S = 300.0
"""How long a server may take to answer ``/health``: OpenEnv's server imports gradio, which
takes ~20 s on two busy cores, and minutes at nice 19 beside a full machine."""


@dataclasses.dataclass(frozen=True)
class Served:
    url: str
    pid: int


@contextlib.asynccontextmanager
async def gateway(
    cache: Path,
    runs_dir: Path,
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    log: bool = False,
    stop_timeout_s: float = 60,
) -> AsyncIterator[Served]:
    """Serve ``cache`` until the block ends.

    Args:
        args: more ``a01gym serve`` options.
        env: environment variables added to this process's.
        log: let the server's stderr through (for debugging a run).

    Raises:
        RuntimeError: when ``/health`` does not answer within ``START_TIMEOUT_S``.
    """
    from a01gym.gateway.server import free_port

    port = free_port()
    command = [sys.executable, "-m", "a01gym.cli", "serve", "--port", str(port)]
    command += ["--cache", str(cache), "--runs-dir", str(runs_dir), *args]
    async with process(
        command, f"http://127.0.0.1:{port}", env=env, log=log, stop_timeout_s=stop_timeout_s
    ) as served:
        yield served


@contextlib.asynccontextmanager
async def process(
    command: Sequence[str],
    url: str,
    *,
    env: dict[str, str] | None = None,
    log: bool = False,
    stop_timeout_s: float = 60,
) -> AsyncIterator[Served]:
    """Run ``command``, a server that answers ``url + "/health"``, until the block ends.

    Raises:
        RuntimeError: when ``/health`` does not answer within ``START_TIMEOUT_S``.
    """
    proc = await asyncio.create_subprocess_exec(
        *command,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=None if log else asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await _healthy(url, proc)
        yield Served(url, proc.pid)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)  # the server this script started, by PID
        async with asyncio.timeout(stop_timeout_s):
            await proc.wait()


async def _healthy(url: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline and proc.returncode is None:
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(url + "/health")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    if proc.returncode is not None:
        raise RuntimeError(f"the server for {url} exited {proc.returncode} before it answered")
    raise RuntimeError(f"the server at {url} did not answer /health within {START_TIMEOUT_S} s")


def tree_cpu_s(server: psutil.Process) -> float:
    """CPU seconds used by a served process's tree (the gateway, its zygote and every
    sandbox), reaped children included."""
    total = 0.0
    for proc in [server, *server.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # exited meanwhile
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total
