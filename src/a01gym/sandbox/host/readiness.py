"""Waiting for a new sandbox's supervisor to serve.

The supervisor writes its token, then binds its control socket; a socket that accepts means it
serves. There is no event to wait on across the fork, so the backend polls, backing off from
1 ms to 20 ms (a start takes ~10-30 ms when the machine is idle, seconds in a burst); a
supervisor that dies first ends the wait at once, through the zygote's exit event, rather than
at the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

from a01gym.errors import SandboxError
from a01gym.sandbox.layout import Layout

__all__ = ["wait_ready"]


async def wait_ready(layout: Layout, deadline: float, exited: asyncio.Event) -> str:
    """The supervisor's token, once its control socket answers.

    Args:
        deadline: a ``time.perf_counter()`` value.
        exited: set when the supervisor's process exits.

    Raises:
        SandboxError: it exited first.
        TimeoutError: it did not serve by ``deadline``.
    """
    delay = 0.001
    while time.perf_counter() < deadline:
        if layout.token.exists() and _accepts(str(layout.control_sock)):
            return layout.token.read_text().strip()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await exited.wait()
        if exited.is_set():
            raise SandboxError("the supervisor exited during start")
        delay = min(delay * 1.5, 0.02)
    raise TimeoutError("control socket never answered")


def _accepts(path: str) -> bool:
    """Whether a Unix socket at ``path`` accepts connections right now."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True
