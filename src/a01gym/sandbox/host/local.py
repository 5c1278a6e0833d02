"""The local sandbox backend: a warm pool of sandboxes forked by a zygote on this machine.

``acquire()`` pops a sandbox that is already running (its supervisor is up and answering), so
it never waits for a fork; a background task refills the pool. When the pool is empty, acquire
spawns one itself, through the backend's :class:`~a01gym.sandbox.host.admission.StartGate`
(shared with app starts), and when ``max_sandboxes`` are live it waits for a release; both
waits are bounded by ``acquire_timeout_s``. A burst larger than the pool therefore queues, and
no start's timeout runs while it waits its turn. Between bursts the pool grows towards the size
of the recent peak (:class:`~a01gym.sandbox.host.pool_target.PoolTarget`). ``release()`` kills
the sandbox's whole process tree (its PID namespace) and removes its directory. A sandbox that
dies on its own is noticed through the zygote's exit events, logged, counted and, if it was
idle, replaced. The zygote subprocess and the pipe protocol it speaks are
:mod:`~a01gym.sandbox.host.zygote_process`; this module is the pool.

    async with LocalBackend() as backend:
        sandbox = await backend.acquire()
        await sandbox.client.load_workspace(files, entrypoint="app.main:app")
        ...
        await backend.release(sandbox)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from a01gym.config import SandboxSettings, get_settings
from a01gym.errors import SandboxError, SandboxStartError
from a01gym.sandbox import isolation
from a01gym.sandbox.host import admission, readiness, zygote_process
from a01gym.sandbox.host.backend import BackgroundReleases, PoolStats
from a01gym.sandbox.host.client import SupervisorClient
from a01gym.sandbox.host.pool_target import PoolTarget
from a01gym.sandbox.layout import Layout
from a01gym.tasks import cancel_and_wait

__all__ = ["LocalBackend", "LocalSandbox"]

logger = logging.getLogger(__name__)


def _remove_stale(root: Path) -> None:
    """Remove the directories of backends whose process is gone (killed without cleanup).

    Each backend's directory is named ``<pid>-<random>``; the sandboxes under it died with
    their owner, but nothing else would free their files (on /dev/shm, that is memory).
    """
    for entry in root.iterdir():
        owner = entry.name.split("-", 1)[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            pass  # alive, owned by someone else


@dataclasses.dataclass(eq=False)
class LocalSandbox:
    """A sandbox owned by a :class:`LocalBackend`."""

    id: str
    layout: Layout
    slot: int
    client: SupervisorClient
    pid: int
    alive: bool = True
    exit_reason: str | None = None
    exited: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)


class LocalBackend:
    """Sandboxes as isolated local processes forked from a pre-warmed zygote."""

    def __init__(self, settings: SandboxSettings | None = None, **overrides: Any) -> None:
        base = settings or get_settings().sandbox
        self.settings = base.model_copy(update=overrides, deep=True) if overrides else base
        self.capabilities = isolation.probe(self.settings.filesystem)
        self._root: Path | None = None
        self._zygote = zygote_process.ZygoteProcess(self._on_exited, self._on_zygote_exit)
        self._refiller: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._idle: collections.deque[LocalSandbox] = collections.deque()
        self._in_use: set[LocalSandbox] = set()
        self._starting = 0
        self._closing = False
        self._exited_starting: dict[str, asyncio.Event] = {}  # until each one serves
        self._by_id: dict[str, LocalSandbox] = {}
        # Oldest-freed first: a uid (one per slot) rests as long as possible between sandboxes.
        self._free_slots = collections.deque(range(self.settings.max_sandboxes))
        # Each backend takes a random block of uids, so two backends on one machine (two
        # gateways, a test run beside a server) do not share RLIMIT_NPROC budgets.
        self._uid_offset = self.settings.uid_base + secrets.randbelow(4096) * len(self._free_slots)
        self._releasing: set[str] = set()
        self._crashed_total = 0
        self._spawned_total = 0
        self.gate = admission.StartGate(
            self.settings.start_concurrency, self.settings.acquire_timeout_s
        )
        self._vacancy = asyncio.Event()  # set when a sandbox goes idle or a slot frees
        self._waiting = 0  # acquire() calls waiting for a vacancy (the gate counts its own)
        self._shrinking = BackgroundReleases(self)
        self.pool_target = PoolTarget(
            self.settings.pool_size, self.settings.max_sandboxes, self.settings.pool_growth
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> LocalBackend:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def root(self) -> Path:
        if self._root is None:
            raise SandboxError("backend not started", hint="call `await backend.start()` first")
        return self._root

    async def start(self) -> None:
        if self._zygote.started:
            return
        isolation.check(self.capabilities, self.settings.isolation)
        self.settings.root.mkdir(parents=True, exist_ok=True)
        self.settings.root.chmod(0o711)
        _remove_stale(self.settings.root)
        self._root = self.settings.root / f"{os.getpid()}-{secrets.token_hex(3)}"
        self._root.mkdir(mode=0o711)
        await self._zygote.start(self._root, self.capabilities, self.settings.preload)
        self._closing = False
        self._refiller = asyncio.create_task(self._refill(), name="a01gym-pool-refill")
        self._wake.set()

    async def close(self) -> None:
        """Release every sandbox, stop the zygote, remove the backend's directory."""
        if self._refiller is not None:
            # The flag as well as the cancel: in Python 3.11 a cancellation can be lost
            # (asyncio.wait_for racing a completing future, anywhere below us).
            self._closing = True
            self._wake.set()
            await cancel_and_wait(self._refiller)
            self._refiller = None
        await self._shrinking.drain()
        sandboxes = [*self._idle, *self._in_use]
        self._idle.clear()
        await asyncio.gather(*(self.release(s) for s in sandboxes), return_exceptions=True)
        await self._zygote.stop()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    # -- acquire / release -------------------------------------------------------------------
    async def acquire(self) -> LocalSandbox:
        """A running sandbox with an empty workspace; from the warm pool when possible.

        Raises:
            SandboxCapacityError: none could be had within ``acquire_timeout_s`` (all
                ``max_sandboxes`` live, or the start gate's queue too long); names the setting.
            SandboxStartError: the sandbox spawned for this call did not start.
        """
        deadline = asyncio.get_running_loop().time() + self.settings.acquire_timeout_s
        self.pool_target.acquired()
        while (sandbox := self._pop_idle()) is None:
            if self._free_slots:
                async with self.gate.turn(deadline):
                    # The refill may have readied one while this call queued.
                    sandbox = self._pop_idle()
                    if sandbox is None and self._free_slots:
                        sandbox = await self._spawn()
                if sandbox is not None:
                    break
            else:
                await self._await_vacancy(deadline)
        self._in_use.add(sandbox)
        self._wake.set()
        return sandbox

    def _pop_idle(self) -> LocalSandbox | None:
        while self._idle:
            sandbox = self._idle.popleft()
            if sandbox.alive:
                return sandbox
        return None

    async def _await_vacancy(self, deadline: float) -> None:
        self._vacancy.clear()
        self._waiting += 1
        try:
            async with asyncio.timeout_at(deadline):
                await self._vacancy.wait()
        except TimeoutError:
            raise admission.deadline_error(
                self.settings.acquire_timeout_s,
                f"no sandbox came free: all {self.settings.max_sandboxes} are live "
                f"({len(self._in_use)} in use, {self._waiting - 1} more calls waiting)",
            ) from None
        finally:
            self._waiting -= 1

    async def release(self, sandbox: LocalSandbox) -> None:  # type: ignore[override]
        """Kill the sandbox's process tree and remove its directory. Idempotent."""
        self._in_use.discard(sandbox)
        with contextlib.suppress(ValueError):
            self._idle.remove(sandbox)
        if sandbox.id in self._releasing or sandbox.id not in self._by_id:
            return
        self._releasing.add(sandbox.id)
        try:
            await sandbox.client.aclose()
            if sandbox.alive:
                await self._zygote.kill(sandbox.id)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(10):
                        await sandbox.exited.wait()
            shutil.rmtree(sandbox.layout.root, ignore_errors=True)
        finally:
            self._by_id.pop(sandbox.id, None)
            self._free_slots.append(sandbox.slot)
            self._releasing.discard(sandbox.id)
        self._vacancy.set()
        self._wake.set()

    def uid_of(self, sandbox: LocalSandbox) -> int:
        """The uid the sandbox's processes run as (when the backend runs as root)."""
        return self._uid_offset + sandbox.slot

    def stats(self) -> PoolStats:
        return PoolStats(
            idle=len(self._idle),
            in_use=len(self._in_use),
            starting=self._starting,
            crashed_total=self._crashed_total,
            spawned_total=self._spawned_total,
            capacity=self.settings.max_sandboxes,
            waiting=self._waiting + self.gate.waiting,
            pool_target=self.pool_target.target(),
        )

    # -- internals ---------------------------------------------------------------------------
    async def _spawn(self) -> LocalSandbox:
        """Fork one sandbox and wait until it serves; the caller holds a gate turn and has
        checked that a slot is free."""
        slot = self._free_slots.popleft()
        self._starting += 1
        try:
            return await self._spawn_in(slot)
        except BaseException:
            self._vacancy.set()  # the slot is free again for whoever waits
            raise
        finally:
            self._starting -= 1

    async def _spawn_in(self, slot: int) -> LocalSandbox:
        sandbox_id = f"sbx-{slot}-{secrets.token_hex(3)}"
        layout = Layout(self.root / sandbox_id)
        uid = self._uid_offset + slot
        layout.root.mkdir(mode=0o700)
        if self.capabilities.root:
            os.chown(layout.root, uid, uid)
        exited = self._exited_starting[sandbox_id] = asyncio.Event()
        started = time.perf_counter()
        try:
            pid = await self._zygote.spawn(sandbox_id, layout.root, uid, self.settings)
            token = await readiness.wait_ready(
                layout, started + zygote_process.READY_TIMEOUT_S, exited
            )
        except BaseException as exc:
            log_file = layout.root / "supervisor.log"
            log = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
            with contextlib.suppress(SandboxError):
                await self._zygote.kill(sandbox_id)
            shutil.rmtree(layout.root, ignore_errors=True)
            self._free_slots.append(slot)
            if isinstance(exc, TimeoutError | SandboxError):
                raise SandboxStartError(
                    f"sandbox did not become ready: {log.strip() or exc!r}",
                    sandbox_id=sandbox_id,
                ) from exc
            raise
        finally:
            self._exited_starting.pop(sandbox_id, None)
        sandbox = LocalSandbox(
            id=sandbox_id,
            layout=layout,
            slot=slot,
            pid=pid,
            client=SupervisorClient(
                token=token,
                uds=str(layout.control_sock),
                sandbox_id=sandbox_id,
                start_gate=self.gate,
            ),
        )
        self._by_id[sandbox_id] = sandbox
        self._spawned_total += 1
        try:
            # One request now opens the keep-alive connection and warms the supervisor's
            # request path, off the acquire path (~5 ms saved on the first real call).
            await sandbox.client.health()
        except BaseException:
            await asyncio.shield(self.release(sandbox))  # also when the refill is cancelled
            raise
        return sandbox

    def _on_exited(self, event: dict[str, Any]) -> None:
        if (exited := self._exited_starting.get(event.get("id"))) is not None:
            exited.set()
        sandbox = self._by_id.get(event.get("id"))
        if sandbox is not None:
            self._on_exit(sandbox, event)

    def _on_zygote_exit(self) -> None:
        for sandbox in list(self._by_id.values()):
            self._on_exit(sandbox, {"reason": "zygote exited", "code": None})

    def _on_exit(self, sandbox: LocalSandbox, event: dict[str, Any]) -> None:
        sandbox.alive = False
        sandbox.exit_reason = event.get("reason")
        sandbox.exited.set()
        if sandbox.id in self._releasing:
            return
        self._crashed_total += 1
        logger.warning(
            "sandbox %s exited unexpectedly (%s, status %s)",
            sandbox.id,
            sandbox.exit_reason,
            event.get("code"),
        )
        if sandbox in self._idle:
            self._idle.remove(sandbox)  # never hand out a dead sandbox
            asyncio.get_running_loop().create_task(self.release(sandbox))

    async def _refill(self) -> None:
        """Keep ``pool_size`` sandboxes idle; between bursts, grow towards the recent peak."""
        backoff = 0.1
        while not self._closing:
            await self._refill_wanted()
            if self._idle and self.settings.refill_delay_s:
                await asyncio.sleep(self.settings.refill_delay_s)
            self._wake.clear()
            while (
                not self._closing
                and len(self._idle) + self._starting < self._refill_to()
                and self._free_slots
            ):
                try:
                    async with self.gate.turn():
                        if self._free_slots:
                            self._idle.append(await self._spawn())
                            self._vacancy.set()
                    backoff = 0.1
                except SandboxError as exc:
                    logger.warning("could not refill the sandbox pool: %s", exc)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
            while len(self._idle) > self.pool_target.keep() and not self._closing:
                self._shrinking.release_later(self._idle.popleft())  # the oldest first

    async def _refill_wanted(self) -> None:
        """Until woken; while the pool is (or may be) grown, also every so often: that a
        burst ended or the peak decayed is announced by no event."""
        timeout = None
        if max(self.pool_target.target(), len(self._idle)) > self.settings.pool_size:
            timeout = max(0.5, self.settings.pool_growth.quiet_s)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    def _refill_to(self) -> int:
        pooled = len(self._idle) + self._starting
        return self.pool_target.refill_to(
            occupied=len(self._in_use) + pooled,
            pooled=pooled,
            waiting=self._waiting + self.gate.waiting,
        )
