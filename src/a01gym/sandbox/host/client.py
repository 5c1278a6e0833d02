"""Async client for one supervisor's control API, over a Unix socket or TCP.

Agent-level failures (bad path, non-unique edit, app start failure) come back as
:class:`ControlError` with a stable :class:`~a01gym.sandbox.protocol.ErrorCode`, so callers can
turn them into observations. Transport failures (the sandbox died) raise
:class:`~a01gym.errors.SandboxLostError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from a01gym.errors import SandboxError, SandboxLostError, SandboxTimeoutError
from a01gym.sandbox import protocol
from a01gym.sandbox.host import admission
from a01gym.sandbox.http11 import BadResponseError, Http11Client

__all__ = ["ControlError", "SupervisorClient"]

# Whole workspaces and diffs come back through here; the supervisor bounds them far lower.
_MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class ControlError(Exception):
    """The supervisor refused a request; ``code`` says why."""

    def __init__(self, code: protocol.ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class SupervisorClient:
    """Talks to one supervisor over keep-alive HTTP/1.1 (see :mod:`a01gym.sandbox.http11`)."""

    def __init__(
        self,
        *,
        token: str,
        uds: str | None = None,
        base_url: str = "http://sandbox",
        sandbox_id: str | None = None,
        timeout_s: float = 30.0,
        start_gate: admission.StartGate | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        if uds is not None:
            self._http = Http11Client(uds=uds, max_body=_MAX_RESPONSE_BYTES, headers=headers)
        else:
            url = urllib.parse.urlsplit(base_url)
            if url.scheme != "http" or not url.hostname:
                raise ValueError(f"the control API is plain http://host:port, not {base_url!r}")
            self._http = Http11Client(
                host=url.hostname,
                port=url.port or 80,
                max_body=_MAX_RESPONSE_BYTES,
                headers=headers,
            )
        self.sandbox_id = sandbox_id
        self._lost: str | None = None
        self._waiting: set[asyncio.Task[Any]] = set()  # calls waiting on the supervisor
        self._cut: set[asyncio.Task[Any]] = set()  # of those, the ones mark_lost cancelled
        self._timeout_s = timeout_s
        # App starts queue here, so the supervisor's start timeout counts only once admitted.
        self._start_gate = start_gate

    async def aclose(self) -> None:
        self._http.close()

    def mark_lost(self, reason: str) -> None:
        """The backend saw the sandbox die: a call waiting on it fails now, and every later
        call at once, instead of each waiting out its timeout on an address nothing answers
        any more (a dead container's address drops packets; it does not refuse them)."""
        self._lost = reason
        for task in self._waiting:
            self._cut.add(task)
            task.cancel()
        self._http.close()

    def _lost_error(self) -> SandboxLostError:
        return SandboxLostError(
            self._lost or "lost",
            sandbox_id=self.sandbox_id,
            hint="the sandbox died; release it and acquire a new one",
        )

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        content_type: str = "application/octet-stream",
    ) -> Any:
        if self._lost is not None:
            raise self._lost_error()
        headers = {}
        body = b""
        if json_body is not None:
            body, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
        elif content is not None:
            body, headers["Content-Type"] = content, content_type
        task = asyncio.current_task()
        if task is not None:
            self._waiting.add(task)
        try:
            response = await self._http.request(
                method,
                path,
                query=params or {},
                headers=headers,
                body=body,
                timeout=self._timeout_s,
            )
        except asyncio.CancelledError:
            if task not in self._cut:
                raise
            self._cut.discard(task)
            task.uncancel()  # type: ignore[union-attr]
            raise self._lost_error() from None
        except TimeoutError as exc:
            raise SandboxTimeoutError(
                f"{method} {path} timed out", sandbox_id=self.sandbox_id
            ) from exc
        except (OSError, BadResponseError) as exc:
            raise SandboxLostError(
                f"supervisor unreachable ({exc.__class__.__name__})",
                sandbox_id=self.sandbox_id,
                hint="the sandbox died; release it and acquire a new one",
            ) from exc
        finally:
            self._waiting.discard(task)  # type: ignore[arg-type]
        try:
            payload = json.loads(response.body) if response.body else None
            if response.status < 400:
                return payload
            error = protocol.ErrorBody.model_validate((payload or {}).get("error"))
        except ValueError as exc:
            raise SandboxError(
                f"supervisor failed on {method} {path} (HTTP {response.status})",
                sandbox_id=self.sandbox_id,
                hint="see supervisor.log in the sandbox directory",
            ) from exc
        raise ControlError(error.code, error.message)

    # -- lifecycle ---------------------------------------------------------------------------
    async def health(self) -> protocol.Health:
        return protocol.Health.model_validate(await self._call("GET", "/healthz"))

    async def load_workspace(
        self, files: Mapping[str, bytes], *, entrypoint: str, start: bool = False
    ) -> protocol.AppStatus:
        """Replace the workspace with ``files`` (the new diff baseline) and empty the database.

        Args:
            files: path -> bytes of the whole workspace.
            entrypoint: the app's ``module:attribute`` (``manifest.entrypoint``).
            start: also start the app, saving the round trip of :meth:`restart_app`.

        Returns:
            The app's status: ``stopped``, or with ``start`` what :meth:`restart_app` returns.
        """
        params = {"entrypoint": entrypoint, "start": "true" if start else "false"}
        upload = protocol.WorkspaceUpload.of(files).model_dump_json().encode()
        async with self._starting(start):
            status = await self._call(
                "PUT", "/workspace", params=params, content=upload, content_type="application/json"
            )
        return protocol.AppStatus.model_validate(status)

    async def restart_app(self) -> protocol.AppStatus:
        """Restart the app; a failed start is returned (state ``crashed``), not raised.

        Raises:
            SandboxCapacityError: no turn at the start gate within its deadline.
        """
        async with self._starting(True):
            return protocol.AppStatus.model_validate(await self._call("POST", "/app/restart"))

    def _starting(self, start: bool) -> contextlib.AbstractAsyncContextManager[None]:
        if start and self._start_gate is not None:
            return self._start_gate.turn()
        return contextlib.nullcontext()

    async def stop_app(self) -> protocol.AppStatus:
        return protocol.AppStatus.model_validate(await self._call("POST", "/app/stop"))

    # -- files -------------------------------------------------------------------------------
    async def list_files(self) -> list[protocol.FileEntry]:
        return [protocol.FileEntry.model_validate(f) for f in await self._call("GET", "/files")]

    async def read_file(self, path: str) -> str:
        return (await self._call("GET", "/file", params={"path": path}))["content"]

    async def write_file(self, path: str, content: str) -> None:
        await self._call("PUT", "/file", params={"path": path}, json_body={"content": content})

    async def edit_file(self, path: str, old: str, new: str, line: int | None = None) -> None:
        body = {"path": path, "old": old, "new": new, "line": line}
        await self._call("POST", "/edit", json_body=body)

    async def search(
        self,
        pattern: str,
        path: str | None = None,
        *,
        ignore_case: bool = False,
        regex: bool = False,
    ) -> list[protocol.SearchMatch]:
        request = protocol.SearchRequest(
            pattern=pattern, path=path, ignore_case=ignore_case, regex=regex
        )
        body = await self._call("POST", "/search", json_body=request.model_dump())
        return [protocol.SearchMatch.model_validate(m) for m in body]

    async def diff(self) -> str:
        return (await self._call("GET", "/diff"))["diff"]

    async def changes(self) -> dict[str, str | None]:
        """Changed files against the baseline: path -> new content, ``None`` when deleted."""
        return (await self._call("GET", "/changes"))["files"]

    # -- app and database --------------------------------------------------------------------
    async def request(self, request: protocol.ProxyRequest) -> protocol.ProxyResponse:
        body = request.model_dump(by_alias=True, exclude_none=True)
        return protocol.ProxyResponse.model_validate(
            await self._call("POST", "/proxy", json_body=body)
        )

    async def seed(self, request: protocol.SeedRequest) -> bool:
        """Seed the database; False when it already held exactly this seed, untouched."""
        body = await self._call("POST", "/db/seed", json_body=request.model_dump())
        return bool(body.get("reseeded", True))

    async def query(
        self, sql: str, params: list[Any] | None = None, *, reseed: bool = False
    ) -> protocol.QueryResult:
        body = await self._call(
            "POST", "/db/query", json_body={"sql": sql, "params": params or [], "reseed": reseed}
        )
        return protocol.QueryResult.model_validate(body)
