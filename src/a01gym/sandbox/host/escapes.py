"""Escape payloads: hostile app code that tries to leave a sandbox, judged payload by payload.

One list for the container tests and ``bench/containers.py``, so both report the same
payloads: writing outside the workspace and ``/tmp``, reading the supervisor's token and the
files of other users, raising privileges, and reaching the network (the host, a neighbouring
sandbox, the outside). The app is loaded into a sandbox and only ever runs there; the host
only sends it requests.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from a01gym.sandbox import protocol
from a01gym.sandbox.host import container
from a01gym.sandbox.host.backend import Sandbox

__all__ = ["HOSTILE_APP", "EscapeResult", "Payload", "load", "payloads", "run"]

HOSTILE_APP = """
import ctypes, os, socket
from fastapi import FastAPI

app = FastAPI()


def _try(action):
    try:
        return {"result": "done", "detail": str(action())[:200]}
    except Exception as exc:
        return {"result": "blocked", "detail": repr(exc)[:200]}


@app.get("/connect")
def connect(host: str, port: int):
    return _try(lambda: socket.create_connection((host, port), timeout=3).close())


@app.get("/resolve")
def resolve(name: str):
    return _try(lambda: socket.getaddrinfo(name, 80))


@app.get("/read")
def read(path: str):
    return _try(lambda: open(path, "rb").read(64))


@app.get("/write")
def write(path: str):
    def attempt():
        with open(path, "w") as handle:
            handle.write("escaped")
        return path
    return _try(attempt)


@app.get("/setuid")
def setuid():
    return _try(lambda: os.setuid(0))


@app.get("/unshare")
def unshare():
    libc = ctypes.CDLL(None, use_errno=True)
    def attempt():
        if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER: a namespace where we are root
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return "unshared"
    return _try(attempt)
"""


class Payload(BaseModel):
    """One attempt: a request to the hostile app, and what it means for it to succeed."""

    name: str
    path: str
    query: dict[str, str] = {}


class EscapeResult(BaseModel):
    name: str
    denied: bool
    detail: str


def payloads(*, host: str, host_port: int, neighbour: str | None = None) -> list[Payload]:
    """The payloads for a sandbox whose host listens on ``host:host_port`` (an address the
    sandbox could route to, such as its network's gateway); ``neighbour``: another sandbox's
    supervisor, ``address:port``."""
    found = [
        Payload(name="write /etc", path="/write", query={"path": "/etc/escaped"}),
        Payload(name="write the app's code", path="/write", query={"path": "/opt/a01gym/x"}),
        Payload(
            name="write the token directory",
            path="/write",
            query={"path": f"{container.TOKEN_DIR}/x"},
        ),
        Payload(name="replace the token", path="/write", query={"path": container.token_path()}),
        Payload(name="read the token", path="/read", query={"path": container.token_path()}),
        Payload(name="read /etc/shadow", path="/read", query={"path": "/etc/shadow"}),
        Payload(
            name="read the supervisor's environment",
            path="/read",
            query={"path": "/proc/1/environ"},
        ),
        Payload(name="setuid root", path="/setuid"),
        Payload(name="user namespace", path="/unshare"),
        Payload(
            name="connect to the host",
            path="/connect",
            query={"host": host, "port": str(host_port)},
        ),
        Payload(name="connect outside", path="/connect", query={"host": "1.1.1.1", "port": "443"}),
        Payload(name="resolve a name", path="/resolve", query={"name": "pypi.org"}),
    ]
    if neighbour is not None:
        address, _, port = neighbour.rpartition(":")
        found.append(
            Payload(
                name="connect to another sandbox",
                path="/connect",
                query={"host": address, "port": port},
            )
        )
    return found


async def load(sandbox: Sandbox) -> None:
    """Install and start the hostile app in ``sandbox``."""
    await sandbox.client.load_workspace({"main.py": HOSTILE_APP.encode()}, entrypoint="main:app")
    status = await sandbox.client.restart_app()
    if status.state is not protocol.AppState.RUNNING:
        raise RuntimeError(f"the hostile app did not start: {status.error}")


async def run(sandbox: Sandbox, attempts: list[Payload]) -> list[EscapeResult]:
    """Each payload's outcome in ``sandbox`` (the hostile app :func:`load` ed there)."""
    results = []
    for payload in attempts:
        response = await sandbox.client.request(
            protocol.ProxyRequest(path=payload.path, query=payload.query, timeout_s=20)
        )
        body = _json(response.body) if response.status == 200 else None
        denied = isinstance(body, dict) and body.get("result") == "blocked"
        detail = body.get("detail", "") if isinstance(body, dict) else response.body[:200]
        results.append(EscapeResult(name=payload.name, denied=denied, detail=str(detail)))
    return results


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
