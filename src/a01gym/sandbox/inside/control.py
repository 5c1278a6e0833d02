"""The supervisor's control API: JSON over HTTP/1.1 on a Unix socket or TCP.

Served by :class:`~a01gym.sandbox.http11.Http11Server` (h11) rather than uvicorn and Starlette:
hundreds of supervisors run at once and each one that way is ~3 MB smaller and a little faster
per call (measured; see ``bench/sandbox.py``). Every handler is ``async`` and the supervisor
stays single-threaded; it never forks once its loop runs (see
:mod:`~a01gym.sandbox.inside.app_launcher`).

Run standalone (the Kubernetes pod entrypoint)::

    python -m a01gym.sandbox.inside.control --dir /sandbox --port 8080 --token-file /run/token
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import secrets
import signal
import socket
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from a01gym.sandbox import isolation, protocol
from a01gym.sandbox.http11 import Http11Server, ServerRequest
from a01gym.sandbox.inside import app_launcher
from a01gym.sandbox.inside.app_process import MAX_ENTRYPOINT_BYTES
from a01gym.sandbox.inside.supervisor import Supervisor, SupervisorError, SupervisorLimits
from a01gym.sandbox.layout import Layout
from a01gym.sandbox.protocol import ErrorCode

__all__ = ["ControlApi", "load_or_create_token", "main", "serve"]

_M = TypeVar("_M", bound=BaseModel)
_Route = Callable[[ServerRequest], Awaitable[Any]]
_STATUS = {ErrorCode.TOO_LARGE: 413, ErrorCode.NOT_FOUND: 404, ErrorCode.UNAUTHORIZED: 401}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class ControlApi:
    """Routes, authentication and error mapping for one supervisor's control API."""

    def __init__(self, supervisor: Supervisor, token: str) -> None:
        self.supervisor = supervisor
        self._expected = f"Bearer {token}".encode()
        self._routes: dict[tuple[str, str], _Route] = {
            ("GET", "/healthz"): self.healthz,
            ("PUT", "/workspace"): self.put_workspace,
            ("GET", "/files"): self.list_files,
            ("GET", "/file"): self.read_file,
            ("PUT", "/file"): self.write_file,
            ("POST", "/edit"): self.edit_file,
            ("POST", "/search"): self.search,
            ("GET", "/diff"): self.diff,
            ("GET", "/changes"): self.changes,
            ("POST", "/app/restart"): self.restart,
            ("POST", "/app/stop"): self.stop,
            ("POST", "/proxy"): self.proxy,
            ("POST", "/db/seed"): self.seed,
            ("POST", "/db/query"): self.query,
        }
        self._public = {("GET", "/healthz")}
        self._paths = {path for _, path in self._routes}

    def server(self) -> Http11Server:
        limits = self.supervisor.limits
        largest = max(limits.max_upload_bytes, limits.max_request_bytes)
        return Http11Server(self.handle, max_body=largest, error=_error)

    async def handle(self, request: ServerRequest) -> tuple[int, Any]:
        key = (request.method, request.path)
        route = self._routes.get(key)
        if route is None:
            if request.path in self._paths:
                return 405, _error(ErrorCode.BAD_REQUEST, f"{request.method} not allowed here")
            return 404, _error(ErrorCode.NOT_FOUND, f"no such endpoint {request.path!r}")
        if key not in self._public:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, self._expected):
                return 401, _error(ErrorCode.UNAUTHORIZED, "missing or wrong bearer token")
        try:
            result = await route(request)
        except SupervisorError as exc:
            return _STATUS.get(exc.code, 400), _error(exc.code, exc.message)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            return 400, _error(ErrorCode.BAD_REQUEST, f"{where}: {first['msg']}")
        except ValueError as exc:
            return 400, _error(ErrorCode.BAD_REQUEST, str(exc))
        except Exception as exc:  # a bug of ours: keep serving, say where to look
            traceback.print_exc()  # stderr is supervisor.log
            return 500, _error(ErrorCode.BAD_REQUEST, f"supervisor error: {exc!r}")
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json")
        return 200, result

    def _body(self, request: ServerRequest, limit: int) -> bytes:
        if len(request.body) > limit:
            raise SupervisorError(ErrorCode.TOO_LARGE, f"request body exceeds {limit} bytes")
        return request.body

    def _parse(self, request: ServerRequest, model: type[_M]) -> _M:
        body = self._body(request, self.supervisor.limits.max_request_bytes)
        return model.model_validate_json(body or b"{}")

    # -- routes ------------------------------------------------------------------------------
    async def healthz(self, _: ServerRequest) -> Any:
        return self.supervisor.health()

    async def put_workspace(self, request: ServerRequest) -> Any:
        entrypoint = request.query.get("entrypoint", "")
        if ":" not in entrypoint:
            raise SupervisorError(ErrorCode.BAD_REQUEST, "entrypoint must be 'module:attribute'")
        if len(entrypoint.encode()) > MAX_ENTRYPOINT_BYTES:
            message = f"entrypoint longer than {MAX_ENTRYPOINT_BYTES} bytes"
            raise SupervisorError(ErrorCode.BAD_REQUEST, message)
        upload = self._body(request, self.supervisor.limits.max_upload_bytes)
        await self.supervisor.load_workspace(upload, entrypoint)
        if request.query.get("start") == "true":
            return await self.supervisor.restart_app()
        return self.supervisor.app.status()

    async def list_files(self, _: ServerRequest) -> Any:
        entries = self.supervisor.files("list")
        return [protocol.FileEntry(path=p, size=s).model_dump() for p, s in entries]

    async def read_file(self, request: ServerRequest) -> Any:
        return {"content": self.supervisor.files("read", request.query.get("path", ""))}

    async def write_file(self, request: ServerRequest) -> Any:
        body = self._parse(request, protocol.WriteRequest)
        self.supervisor.files("write", request.query.get("path", ""), body.content)
        return {"ok": True}

    async def edit_file(self, request: ServerRequest) -> Any:
        body = self._parse(request, protocol.EditRequest)
        self.supervisor.files("edit", body.path, body.old, body.new, body.line)
        return {"ok": True}

    async def search(self, request: ServerRequest) -> Any:
        body = self._parse(request, protocol.SearchRequest)
        matches = self.supervisor.files(
            "search", body.pattern, body.path, body.max_matches, body.ignore_case, body.regex
        )
        return [protocol.SearchMatch(path=p, line=n, text=t).model_dump() for p, n, t in matches]

    async def diff(self, _: ServerRequest) -> Any:
        return {"diff": self.supervisor.files("diff")}

    async def changes(self, _: ServerRequest) -> Any:
        return {"files": self.supervisor.files("changes")}

    async def restart(self, _: ServerRequest) -> Any:
        return await self.supervisor.restart_app()

    async def stop(self, _: ServerRequest) -> Any:
        return await self.supervisor.stop_app()

    async def proxy(self, request: ServerRequest) -> Any:
        return await self.supervisor.proxy(self._parse(request, protocol.ProxyRequest))

    async def seed(self, request: ServerRequest) -> Any:
        reseeded = self.supervisor.seed(self._parse(request, protocol.SeedRequest))
        return {"ok": True, "reseeded": reseeded}

    async def query(self, request: ServerRequest) -> Any:
        return self.supervisor.query(self._parse(request, protocol.QueryRequest))


def load_or_create_token(path: Path) -> str:
    """Read the token at ``path``, or create one there (mode 0600) if there is none."""
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token)
    return token


def serve(
    layout: Layout,
    limits: SupervisorLimits,
    capabilities: isolation.Capabilities,
    *,
    token_file: Path | None = None,
    host: str | None = None,
    port: int | None = None,
    lifeline: int | None = None,
    launcher: int | None = None,
) -> None:
    """Run a supervisor until it is killed.

    Args:
        launcher: a socket to the machine zygote, which launches this sandbox's apps. Without
            it, the supervisor forks its own app zygote first, before the token is read or
            made, so that process's memory never holds it.
    """
    layout.create()
    if launcher is None:
        app_socket = app_launcher.spawn_app_zygote(layout, capabilities, limits.warm_standby)
    else:
        app_socket = socket.socket(fileno=launcher)
    token = load_or_create_token(token_file or layout.token)
    supervisor = Supervisor(layout, app_socket, limits, lifeline=lifeline)
    api = ControlApi(supervisor, token)
    if port is None:
        where: dict[str, Any] = {"uds": str(layout.control_sock)}
    else:
        where = {"host": host or "0.0.0.0", "port": port}
    asyncio.run(_run(api, where))


async def _run(api: ControlApi, where: dict[str, Any]) -> None:
    """Serve until SIGTERM or SIGINT (a pod being stopped), then stop the app."""
    loop = asyncio.get_running_loop()
    api.supervisor.attach(loop)
    serving = asyncio.ensure_future(api.server().serve(**where))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    try:
        await serving
    except asyncio.CancelledError:
        pass
    finally:
        await api.supervisor.close()
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> None:
    """Standalone entrypoint (a Kubernetes pod, or debugging)."""
    parser = argparse.ArgumentParser(description="a01gym sandbox supervisor")
    parser.add_argument("--dir", type=Path, required=True, help="sandbox directory")
    parser.add_argument("--host", default="0.0.0.0", help="TCP host (with --port)")
    parser.add_argument("--port", type=int, default=None, help="serve TCP instead of a socket")
    parser.add_argument("--token-file", type=Path, default=None, help="read or create token")
    args = parser.parse_args(argv)
    serve(
        Layout(args.dir),
        SupervisorLimits(),
        isolation.probe(),
        token_file=args.token_file,
        host=args.host,
        port=args.port,
    )


if __name__ == "__main__":
    main()
