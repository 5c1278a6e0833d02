"""The supervisor's control API: HTTP transport over a Unix socket or TCP.

Starlette rather than FastAPI: every handler is ``async`` (FastAPI would push sync
dependencies onto threads, and the supervisor must stay single-threaded so the app zygote
can be forked safely), and the smaller router costs less per proxied request.

Run standalone (the Kubernetes pod entrypoint)::

    python -m a01gym.sandbox.control --dir /sandbox --port 8080 --token-file /run/token
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a01gym.sandbox import app_process, isolation, protocol, server
from a01gym.sandbox.layout import Layout
from a01gym.sandbox.protocol import ErrorCode
from a01gym.sandbox.supervisor import Supervisor, SupervisorError, SupervisorLimits

__all__ = ["create_control_app", "load_or_create_token", "main", "serve"]

Handler = Callable[[Request], Awaitable[Any]]
_M = TypeVar("_M", bound=BaseModel)


def _error(status: int, code: ErrorCode, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and int(declared) > limit:
        raise SupervisorError(ErrorCode.TOO_LARGE, f"request body exceeds {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise SupervisorError(ErrorCode.TOO_LARGE, f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_control_app(supervisor: Supervisor, token: str) -> Starlette:
    """The control API for one supervisor, authenticated with ``token``."""
    limits = supervisor.limits
    expected = f"Bearer {token}".encode()

    async def parse(request: Request, model: type[_M]) -> _M:
        body = await _read_body(request, limits.max_request_bytes)
        return model.model_validate_json(body or b"{}")

    def endpoint(handler: Handler, *, public: bool = False) -> Handler:
        async def wrapped(request: Request) -> Response:
            if not public:
                given = request.headers.get("authorization", "").encode()
                if not hmac.compare_digest(given, expected):
                    return _error(401, ErrorCode.UNAUTHORIZED, "missing or wrong bearer token")
            try:
                result = await handler(request)
            except SupervisorError as exc:
                status = 413 if exc.code is ErrorCode.TOO_LARGE else 400
                status = 404 if exc.code is ErrorCode.NOT_FOUND else status
                return _error(status, exc.code, exc.message)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "body"
                return _error(400, ErrorCode.BAD_REQUEST, f"{where}: {first['msg']}")
            except ValueError as exc:
                return _error(400, ErrorCode.BAD_REQUEST, str(exc))
            if isinstance(result, Response):
                return result
            if isinstance(result, BaseModel):
                result = result.model_dump(mode="json")
            return JSONResponse(result)

        return wrapped

    async def healthz(_: Request) -> Any:
        return supervisor.health()

    async def put_workspace(request: Request) -> Any:
        entrypoint = request.query_params.get("entrypoint", "")
        if ":" not in entrypoint:
            raise SupervisorError(ErrorCode.BAD_REQUEST, "entrypoint must be 'module:attribute'")
        archive = await _read_body(request, limits.max_workspace_bytes)
        await supervisor.load_workspace(archive, entrypoint)
        if request.query_params.get("start") == "true":
            return await supervisor.restart_app()
        return supervisor.app.status()

    async def list_files(_: Request) -> Any:
        entries = supervisor.files("list")
        return [protocol.FileEntry(path=p, size=s).model_dump() for p, s in entries]

    async def read_file(request: Request) -> Any:
        return {"content": supervisor.files("read", request.query_params.get("path", ""))}

    async def write_file(request: Request) -> Any:
        body = await parse(request, protocol.WriteRequest)
        supervisor.files("write", request.query_params.get("path", ""), body.content)
        return {"ok": True}

    async def edit_file(request: Request) -> Any:
        body = await parse(request, protocol.EditRequest)
        supervisor.files("edit", body.path, body.old, body.new)
        return {"ok": True}

    async def search(request: Request) -> Any:
        body = await parse(request, protocol.SearchRequest)
        matches = supervisor.files("search", body.pattern, body.path, body.max_matches)
        return [protocol.SearchMatch(path=p, line=n, text=t).model_dump() for p, n, t in matches]

    async def diff(_: Request) -> Any:
        return {"diff": supervisor.files("diff")}

    async def changes(_: Request) -> Any:
        return {"files": supervisor.files("changes")}

    async def restart(_: Request) -> Any:
        return await supervisor.restart_app()

    async def stop(_: Request) -> Any:
        return await supervisor.stop_app()

    async def proxy(request: Request) -> Any:
        return await supervisor.proxy(await parse(request, protocol.ProxyRequest))

    async def seed(request: Request) -> Any:
        supervisor.seed(await parse(request, protocol.SeedRequest))
        return {"ok": True}

    async def query(request: Request) -> Any:
        return supervisor.query(await parse(request, protocol.QueryRequest))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        supervisor.attach(asyncio.get_running_loop())
        yield
        await supervisor.close()

    routes = [
        Route("/healthz", endpoint(healthz, public=True), methods=["GET"]),
        Route("/workspace", endpoint(put_workspace), methods=["PUT"]),
        Route("/files", endpoint(list_files), methods=["GET"]),
        Route("/file", endpoint(read_file), methods=["GET"]),
        Route("/file", endpoint(write_file), methods=["PUT"]),
        Route("/edit", endpoint(edit_file), methods=["POST"]),
        Route("/search", endpoint(search), methods=["POST"]),
        Route("/diff", endpoint(diff), methods=["GET"]),
        Route("/changes", endpoint(changes), methods=["GET"]),
        Route("/app/restart", endpoint(restart), methods=["POST"]),
        Route("/app/stop", endpoint(stop), methods=["POST"]),
        Route("/proxy", endpoint(proxy), methods=["POST"]),
        Route("/db/seed", endpoint(seed), methods=["POST"]),
        Route("/db/query", endpoint(query), methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


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
) -> None:
    """Run a supervisor until it is killed. Forks the app zygote first, then the token is
    read or made, so the app zygote's memory never holds it."""
    layout.create()
    zygote_socket = app_process.spawn_app_zygote(layout, capabilities)
    token = load_or_create_token(token_file or layout.token)
    supervisor = Supervisor(layout, zygote_socket, limits, lifeline=lifeline)
    where: dict[str, Any] = (
        {"host": host, "port": port} if port is not None else {"uds": str(layout.control_sock)}
    )
    config = uvicorn.Config(
        create_control_app(supervisor, token),
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws="none",
        http="h11",
        loop="asyncio",
        # Clients hold keep-alive connections across idle periods (a session thinking); a
        # server-side close racing a new request would surface as a lost sandbox.
        timeout_keep_alive=3600,
        **where,
    )
    server.QuietServer(config).run()


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
