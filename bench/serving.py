"""The real gateway a benchmark drives: one ``a01gym serve`` process on a free loopback port.

Started as a subprocess (so its CPU and memory are the gateway's own, apart from the client's),
awaited until ``/health`` answers, and stopped by PID with SIGTERM when the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx

__all__ = ["Served", "gateway"]


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
        RuntimeError: when ``/health`` does not answer within 30 s.
    """
    from a01gym.gateway.server import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "a01gym.cli", "serve", "--port", str(port)),
        *("--cache", str(cache), "--runs-dir", str(runs_dir), *args),
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=None if log else asyncio.subprocess.DEVNULL,
    )
    try:
        await _healthy(url)
        yield Served(url, proc.pid)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)  # the server this script started, by PID
        async with asyncio.timeout(stop_timeout_s):
            await proc.wait()


async def _healthy(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(url + "/health")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the gateway at {url} did not answer /health within 30 s")
