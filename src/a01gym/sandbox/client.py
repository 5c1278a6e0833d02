"""Async client for one supervisor's control API, over a Unix socket or TCP.

Agent-level failures (bad path, non-unique edit, app start failure) come back as
:class:`ControlError` with a stable :class:`~a01gym.sandbox.protocol.ErrorCode`, so callers can
turn them into observations. Transport failures (the sandbox died) raise
:class:`~a01gym.errors.SandboxLostError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from a01gym.errors import SandboxError, SandboxLostError, SandboxTimeoutError
from a01gym.sandbox import protocol
from a01gym.scenario.bundle import pack_files

__all__ = ["ControlError", "SupervisorClient"]


class ControlError(Exception):
    """The supervisor refused a request; ``code`` says why."""

    def __init__(self, code: protocol.ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class SupervisorClient:
    """Talks to one supervisor. Reuses one keep-alive connection pool."""

    def __init__(
        self,
        *,
        token: str,
        uds: str | None = None,
        base_url: str = "http://sandbox",
        sandbox_id: str | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        # The control API is plain HTTP (a Unix socket, or a pod IP inside the cluster).
        # verify=False skips building an SSL context: ~56 ms of CPU per client otherwise.
        transport = httpx.AsyncHTTPTransport(uds=uds, verify=False) if uds else None
        self.sandbox_id = sandbox_id
        self._http = httpx.AsyncClient(
            transport=transport,
            verify=False,
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout_s,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, url: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise SandboxTimeoutError(
                f"{method} {url} timed out", sandbox_id=self.sandbox_id
            ) from exc
        except httpx.TransportError as exc:
            raise SandboxLostError(
                f"supervisor unreachable ({exc.__class__.__name__})",
                sandbox_id=self.sandbox_id,
                hint="the sandbox died; release it and acquire a new one",
            ) from exc
        try:
            body = response.json() if response.content else None
            if response.status_code < 400:
                return body
            error = protocol.ErrorBody.model_validate((body or {}).get("error"))
        except ValueError as exc:
            raise SandboxError(
                f"supervisor failed on {method} {url} (HTTP {response.status_code})",
                sandbox_id=self.sandbox_id,
                hint="see supervisor.log in the sandbox directory",
            ) from exc
        raise ControlError(error.code, error.message)

    # -- lifecycle ---------------------------------------------------------------------------
    async def health(self) -> protocol.Health:
        return protocol.Health.model_validate(await self._call("GET", "/healthz"))

    async def load_workspace(self, files: Mapping[str, bytes], *, entrypoint: str) -> None:
        """Replace the workspace with ``files`` (the new diff baseline) and empty the database.

        Args:
            files: path -> bytes of the whole workspace.
            entrypoint: the app's ``module:attribute`` (``manifest.entrypoint``).
        """
        await self._call(
            "PUT",
            "/workspace",
            params={"entrypoint": entrypoint},
            content=pack_files(files),
            headers={"Content-Type": "application/x-tar"},
        )

    async def restart_app(self) -> protocol.AppStatus:
        """Restart the app; a failed start is returned (state ``crashed``), not raised."""
        return protocol.AppStatus.model_validate(await self._call("POST", "/app/restart"))

    async def stop_app(self) -> protocol.AppStatus:
        return protocol.AppStatus.model_validate(await self._call("POST", "/app/stop"))

    # -- files -------------------------------------------------------------------------------
    async def list_files(self) -> list[protocol.FileEntry]:
        return [protocol.FileEntry.model_validate(f) for f in await self._call("GET", "/files")]

    async def read_file(self, path: str) -> str:
        return (await self._call("GET", "/file", params={"path": path}))["content"]

    async def write_file(self, path: str, content: str) -> None:
        await self._call("PUT", "/file", params={"path": path}, json={"content": content})

    async def edit_file(self, path: str, old: str, new: str) -> None:
        await self._call("POST", "/edit", json={"path": path, "old": old, "new": new})

    async def search(self, pattern: str, path: str | None = None) -> list[protocol.SearchMatch]:
        body = await self._call("POST", "/search", json={"pattern": pattern, "path": path})
        return [protocol.SearchMatch.model_validate(m) for m in body]

    async def diff(self) -> str:
        return (await self._call("GET", "/diff"))["diff"]

    async def changes(self) -> dict[str, str | None]:
        """Changed files against the baseline: path -> new content, ``None`` when deleted."""
        return (await self._call("GET", "/changes"))["files"]

    # -- app and database --------------------------------------------------------------------
    async def request(self, request: protocol.ProxyRequest) -> protocol.ProxyResponse:
        body = request.model_dump(by_alias=True, exclude_none=True)
        return protocol.ProxyResponse.model_validate(await self._call("POST", "/proxy", json=body))

    async def seed(self, request: protocol.SeedRequest) -> None:
        await self._call("POST", "/db/seed", json=request.model_dump())

    async def query(self, sql: str, params: list[Any] | None = None) -> protocol.QueryResult:
        body = await self._call("POST", "/db/query", json={"sql": sql, "params": params or []})
        return protocol.QueryResult.model_validate(body)
