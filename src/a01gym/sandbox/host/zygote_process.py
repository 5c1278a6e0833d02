"""The local backend's handle on the zygote: one subprocess, commands in, events out.

The zygote (:mod:`a01gym.sandbox.inside.zygote`) runs inside the sandboxes' world; this is the
host's side of the pipe to it. :class:`ZygoteProcess` starts it (inside a bubblewrap view
when that is the filesystem guard) and waits for its ``ready`` line, writes one JSON command
a line to its stdin (``spawn``, ``kill``) and reads the JSON events it writes to its stdout:
``spawned`` answers a spawn with its pid, and every ``exited`` goes to the backend, in order,
as it arrives. The pool logic of
:class:`~a01gym.sandbox.host.local.LocalBackend` stays apart from this protocol.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from a01gym.config import SandboxSettings
from a01gym.errors import SandboxError, SandboxStartError
from a01gym.sandbox import isolation
from a01gym.tasks import cancel_and_wait

__all__ = ["READY_TIMEOUT_S", "ZygoteProcess"]

READY_TIMEOUT_S = 20.0
"""How long the zygote may take to say ``ready``, and a new sandbox to serve."""


class ZygoteProcess:
    """The zygote subprocess: started once, then driven over its stdin and stdout."""

    def __init__(
        self, on_exit: Callable[[dict[str, Any]], None], on_eof: Callable[[], None]
    ) -> None:
        self._on_exit = on_exit
        self._on_eof = on_eof
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self._spawned: dict[str, asyncio.Future[int]] = {}  # spawns waiting for their pid

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        """The zygote's pid while it runs (what its sandboxes are forked from)."""
        return None if self._process is None else self._process.pid

    async def start(
        self, root: Path, capabilities: isolation.Capabilities, preload: Sequence[str]
    ) -> None:
        """Start the zygote for sandboxes under ``root`` and wait until it is ready.

        Raises:
            SandboxStartError: it did not say ``ready`` within :data:`READY_TIMEOUT_S`.
        """
        command = [
            sys.executable,
            "-m",
            "a01gym.sandbox.inside.zygote",
            "--filesystem",
            capabilities.filesystem,
            *(f"--preload={name}" for name in preload),
        ]
        if capabilities.filesystem == "bwrap":
            view = isolation.bwrap_command(isolation.interpreter_paths(), [str(root)])
            command = [*view, *command]
        self._process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=1024 * 1024,
        )
        assert self._process.stdout is not None
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                line = await self._process.stdout.readline()
            if json.loads(line or b"{}").get("event") != "ready":
                raise ValueError(line)
        except (TimeoutError, ValueError) as exc:
            await self.stop()
            raise SandboxStartError(
                "the sandbox zygote did not start",
                hint="run `python -m a01gym.sandbox.inside.zygote` by hand to see its error",
            ) from exc
        self._reader = asyncio.create_task(self._read_events(), name="a01gym-zygote-events")

    async def stop(self) -> None:
        """Close its stdin (it exits, killing every sandbox), kill it after 5 s. Idempotent."""
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            async with asyncio.timeout(5):
                await self._process.wait()
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        await cancel_and_wait(self._reader)
        self._reader = None
        self._process = None

    async def spawn(
        self, sandbox_id: str, directory: Path, uid: int, settings: SandboxSettings
    ) -> int:
        """Fork one sandbox in ``directory``, confined as ``uid`` with ``settings``' limits.

        Returns:
            Its pid, from the zygote's ``spawned`` event (its supervisor may not serve yet).

        Raises:
            SandboxError: it exited before that event, or the zygote is not running.
            TimeoutError: no event within :data:`READY_TIMEOUT_S`.
        """
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._spawned[sandbox_id] = future
        try:
            await self.send(self._spawn_message(sandbox_id, directory, uid, settings))
            async with asyncio.timeout(READY_TIMEOUT_S):
                return await future
        finally:
            self._spawned.pop(sandbox_id, None)

    @staticmethod
    def _spawn_message(
        sandbox_id: str, directory: Path, uid: int, settings: SandboxSettings
    ) -> dict[str, Any]:
        return {
            "op": "spawn",
            "id": sandbox_id,
            "dir": str(directory),
            "uid": uid,
            "deadline_s": settings.limits.wall_clock_seconds,
            "limits": settings.limits.model_dump(),
            "supervisor": {
                "max_file_bytes": settings.max_file_bytes,
                "max_request_bytes": settings.max_request_bytes,
                "max_workspace_bytes": settings.max_workspace_bytes,
                "app_start_timeout_s": settings.app_start_timeout_s,
                "app_request_timeout_s": settings.app_request_timeout_s,
                "warm_standby": settings.warm_standby,
            },
        }

    async def kill(self, sandbox_id: str) -> None:
        """Kill one sandbox's process tree; its ``exited`` event follows."""
        await self.send({"op": "kill", "id": sandbox_id})

    async def send(self, message: dict[str, Any]) -> None:
        """Write one command line.

        Raises:
            SandboxError: the zygote is not running (the backend is closed).
        """
        if self._process is None or self._process.stdin is None:
            raise SandboxError("backend is closed")
        async with self._write_lock:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
            await self._process.stdin.drain()

    async def _read_events(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        while line := await self._process.stdout.readline():
            event = json.loads(line)
            future = self._spawned.get(event.get("id"))
            if event["event"] == "spawned":
                if future is not None and not future.done():
                    future.set_result(event["pid"])
            elif event["event"] == "exited":
                if future is not None and not future.done():
                    future.set_exception(
                        SandboxError("exited during start", sandbox_id=event.get("id"))
                    )
                self._on_exit(event)
        self._on_eof()
