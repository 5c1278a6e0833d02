"""The Docker backend: one hardened container of the sandbox image per sandbox.

For users with a Docker engine and no cluster (SWE-bench-style harnesses run one container per
task). Each container runs exactly what a sandbox pod runs (:mod:`a01gym.sandbox.host.container`),
hardened as the pod spec says: the image's non-root uid, a read-only root, size-limited tmpfs
for the workspace and ``/tmp``, every capability dropped, no new privileges, the engine's
default seccomp profile, memory, CPU and process limits, and the supervisor's token
bind-mounted read-only. Containers join one internal bridge network: no route out, no traffic
between containers (``enable_icc`` off), and a host firewall rule drops new connections from
the bridge to the host itself, so the supervisor's port is reachable from the host and
nothing else is reachable from the container.

The engine is driven through its HTTP API on its Unix socket (httpx), not the ``docker``
CLI: no client binary to install, and errors come back as JSON. A warm pool keeps
``pool_size`` containers started, so an acquire takes one that already answers. What is asked
of the engine (the hardened container's body, the labels, the host firewall rule) is
:mod:`~a01gym.sandbox.host.docker_engine`; this module is the pool and its containers' lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from a01gym.backend_settings import DockerBackendSettings
from a01gym.errors import SandboxError, SandboxStartError
from a01gym.sandbox.host import container, docker_engine
from a01gym.sandbox.host.backend import PoolStats
from a01gym.sandbox.host.client import SupervisorClient

__all__ = ["DockerBackend", "DockerSandbox"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(eq=False)
class DockerSandbox:
    """A sandbox in one container; its supervisor answers on ``endpoint``."""

    id: str
    container_id: str
    endpoint: str
    token_dir: Path
    client: SupervisorClient
    released: bool = False
    died: bool = False

    @property
    def alive(self) -> bool:
        return not (self.released or self.died)


class DockerBackend:
    """Sandboxes as hardened containers on a local Docker engine, with a warm pool."""

    def __init__(self, settings: DockerBackendSettings | None = None, **overrides: Any) -> None:
        base = settings or DockerBackendSettings()
        self.settings = base.model_copy(update=overrides) if overrides else base
        self._id = secrets.token_hex(4)  # labels (and names) the containers this backend runs
        self._api: httpx.AsyncClient | None = None
        self._tokens: Path | None = None
        self._idle: list[DockerSandbox] = []
        self._in_use: dict[str, DockerSandbox] = {}
        self._refill: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._starting = 0
        self._spawned_total = 0
        self._crashed_total = 0
        self._started = False

    async def __aenter__(self) -> DockerBackend:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # -- engine --------------------------------------------------------------------------
    async def _call(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None
    ) -> httpx.Response:
        assert self._api is not None, "start() the backend first"
        try:
            response = await self._api.request(method, path, json=json, params=params)
        except httpx.TransportError as exc:
            raise docker_engine.EngineError(
                f"no Docker engine answers at {self.settings.socket} ({exc!r}): start dockerd, "
                "or set A01GYM_DOCKER__SOCKET"
            ) from exc
        if response.status_code >= 400:
            try:
                message = response.json().get("message", response.text)
            except ValueError:
                message = response.text
            raise docker_engine.EngineError(
                f"{method} {path}: {response.status_code}: {message[:300]}"
            )
        return response

    async def start(self) -> None:
        if self._started:
            return
        transport = httpx.AsyncHTTPTransport(uds=str(self.settings.socket))
        self._api = httpx.AsyncClient(
            transport=transport, base_url=f"http://docker/{docker_engine.API}", timeout=60.0
        )
        await self._call("GET", "/_ping")
        try:
            await self._call("GET", f"/images/{self.settings.image}/json")
        except docker_engine.EngineError as exc:
            raise docker_engine.EngineError(
                f"the sandbox image {self.settings.image} is not in the engine: build it with "
                "`make images` (or set A01GYM_DOCKER__IMAGE)"
            ) from exc
        await self._ensure_network()
        self._tokens = Path(tempfile.mkdtemp(prefix="a01gym-docker-"))
        self._started = True
        self._watch = asyncio.create_task(self._watch_deaths(), name="a01gym-docker-events")
        if self.settings.pool_size:
            self._refill = asyncio.create_task(self._fill(), name="a01gym-docker-pool")

    async def _ensure_network(self) -> None:
        name = self.settings.network
        try:
            await self._call("GET", f"/networks/{name}")
        except docker_engine.EngineError:
            await self._call(
                "POST",
                "/networks/create",
                json={
                    "Name": name,
                    "Driver": "bridge",
                    "Internal": True,  # no route out of the network
                    "CheckDuplicate": True,
                    "Options": {
                        "com.docker.network.bridge.enable_icc": "false",
                        "com.docker.network.bridge.name": self.settings.bridge,
                    },
                    "Labels": {docker_engine.LABEL: "network"},
                },
            )
        await asyncio.to_thread(docker_engine.deny_new_connections_to_host, self.settings.bridge)

    # -- containers ------------------------------------------------------------------------
    async def _run_one(self) -> DockerSandbox:
        assert self._tokens is not None
        self._starting += 1
        name = f"a01gym-sb-{self._id}-{self._spawned_total}"
        self._spawned_total += 1
        token = secrets.token_urlsafe(32)
        token_dir = self._tokens / name
        container_id = ""
        try:
            token_dir.mkdir(mode=0o755)
            path = token_dir / container.TOKEN_KEY
            path.write_text(token)
            path.chmod(0o444)  # the container's uid differs from ours; it is the only one there
            body = docker_engine.container_config(
                self.settings, token_dir=token_dir, labels={docker_engine.LABEL: self._id}
            )
            created = await self._call(
                "POST", "/containers/create", params={"name": name}, json=body
            )
            container_id = created.json()["Id"]
            await self._call("POST", f"/containers/{container_id}/start")
            details = (await self._call("GET", f"/containers/{container_id}/json")).json()
            address = details["NetworkSettings"]["Networks"][self.settings.network]["IPAddress"]
            endpoint = f"{address}:{container.PORT}"
            client = SupervisorClient(base_url=f"http://{endpoint}", token=token, sandbox_id=name)
            sandbox = DockerSandbox(name, container_id, endpoint, token_dir, client)
            await self._wait_healthy(sandbox)
            return sandbox
        except BaseException:
            self._crashed_total += 1
            if container_id:
                with contextlib.suppress(docker_engine.EngineError):
                    await self._remove(container_id)
            shutil.rmtree(token_dir, ignore_errors=True)
            raise
        finally:
            self._starting -= 1

    async def _watch_deaths(self) -> None:
        """Follow the engine's ``die`` events for this backend's containers: a sandbox whose
        container died is marked dead and its supervisor connections are closed, so a request
        waiting on it fails at once instead of waiting out its timeout."""
        assert self._api is not None
        filters = json.dumps(
            {
                "type": ["container"],
                "event": ["die"],
                "label": [f"{docker_engine.LABEL}={self._id}"],
            }
        )
        while self._started:
            try:
                async with self._api.stream(
                    "GET", "/events", params={"filters": filters}, timeout=None
                ) as events:
                    async for line in events.aiter_lines():
                        if line.strip():
                            self._died(json.loads(line).get("id", ""))
            except (httpx.HTTPError, ValueError) as exc:
                logger.warning("the engine's event stream broke (%s); following it again", exc)
                await asyncio.sleep(1.0)

    def _died(self, container_id: str) -> None:
        for sandbox in [*self._idle, *self._in_use.values()]:
            if sandbox.container_id == container_id and not sandbox.died:
                sandbox.died = True
                logger.warning("sandbox container %s died", sandbox.id)
                sandbox.client.mark_lost(f"its container {sandbox.id} died")

    async def _wait_healthy(self, sandbox: DockerSandbox) -> None:
        deadline = time.monotonic() + self.settings.start_timeout_s
        last: Exception | None = None
        for attempt in itertools.count():
            if time.monotonic() > deadline:
                break
            try:
                await sandbox.client.health()
                return
            except Exception as exc:  # connection refused while the supervisor imports
                last = exc
            await asyncio.sleep(0.02)
            if attempt % 25:  # ask the engine whether it still runs every ~0.5 s
                continue
            state = (await self._call("GET", f"/containers/{sandbox.container_id}/json")).json()
            if not state["State"]["Running"]:
                logs = await self._logs(sandbox.container_id)
                raise SandboxStartError(
                    f"sandbox container {sandbox.id} exited ({state['State']['ExitCode']}) "
                    f"before its supervisor answered: {logs[-500:]}"
                )
        raise SandboxStartError(
            f"sandbox container {sandbox.id} did not answer in {self.settings.start_timeout_s:.0f}"
            f" s ({last!r}): raise A01GYM_DOCKER__START_TIMEOUT_S on a busy machine"
        )

    async def _logs(self, container_id: str) -> str:
        response = await self._call(
            "GET", f"/containers/{container_id}/logs", params={"stdout": 1, "stderr": 1}
        )
        # the multiplexed stream: 8-byte frame headers before each chunk
        data, text = response.content, []
        while len(data) >= 8:
            size = int.from_bytes(data[4:8], "big")
            text.append(data[8 : 8 + size].decode(errors="replace"))
            data = data[8 + size :]
        return "".join(text)

    async def _remove(self, container_id: str) -> None:
        with contextlib.suppress(docker_engine.EngineError):  # already gone
            await self._call("DELETE", f"/containers/{container_id}", params={"force": 1, "v": 1})

    async def _fill(self) -> None:
        while self._started and len(self._idle) + self._starting < self.settings.pool_size:
            try:
                self._idle.append(await self._run_one())
            except (SandboxError, OSError) as exc:
                logger.warning("warm container failed to start: %s", exc)
                await asyncio.sleep(1.0)

    def _refill_later(self) -> None:
        if self._started and (self._refill is None or self._refill.done()):
            self._refill = asyncio.create_task(self._fill(), name="a01gym-docker-pool")

    async def acquire(self) -> DockerSandbox:
        await self.start()
        while self._idle:
            sandbox = self._idle.pop(0)
            if not sandbox.died:  # the engine's die events mark the dead (no call per acquire)
                break
            self._crashed_total += 1
            await self._destroy(sandbox)
        else:
            sandbox = await self._run_one()
        self._in_use[sandbox.id] = sandbox
        self._refill_later()
        return sandbox

    async def _destroy(self, sandbox: DockerSandbox) -> None:
        sandbox.released = True
        await sandbox.client.aclose()
        await self._remove(sandbox.container_id)
        shutil.rmtree(sandbox.token_dir, ignore_errors=True)

    async def release(self, sandbox: DockerSandbox) -> None:  # type: ignore[override]
        if sandbox.released:
            return
        self._in_use.pop(sandbox.id, None)
        await self._destroy(sandbox)

    async def close(self) -> None:
        if not self._started:
            return
        self._started = False
        for task in (self._refill, self._watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for sandbox in [*self._idle, *self._in_use.values()]:
            await self._destroy(sandbox)
        self._idle.clear()
        self._in_use.clear()
        # containers a crashed start left behind, by this backend's label
        listed = await self._call(
            "GET",
            "/containers/json",
            params={"all": 1, "filters": f'{{"label": ["{docker_engine.LABEL}={self._id}"]}}'},
        )
        for leftover in listed.json():
            await self._remove(leftover["Id"])
        if self._tokens is not None:
            shutil.rmtree(self._tokens, ignore_errors=True)
        if self._api is not None:
            await self._api.aclose()

    def stats(self) -> PoolStats:
        return PoolStats(
            idle=len(self._idle),
            in_use=len(self._in_use),
            starting=self._starting,
            crashed_total=self._crashed_total,
            spawned_total=self._spawned_total,
            pool_target=self.settings.pool_size,
        )
