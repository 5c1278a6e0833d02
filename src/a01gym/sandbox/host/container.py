"""The supervisor's container: what every engine that runs one must start, and where.

One source for the pod the operator builds (:mod:`a01gym.operator.builders`), the container
the Docker backend runs (:mod:`a01gym.sandbox.host.docker`) and the image that serves both
(``sandbox-image/Dockerfile``, checked against this module by ``tests/unit/operator``): the
same command and arguments, the same non-root uid, a read-only root with only the workspace
and ``/tmp`` writable, and the supervisor's token mounted read-only beside them.
"""

from __future__ import annotations

__all__ = [
    "COMMAND",
    "PORT",
    "TMP_DIR",
    "TMP_SIZE",
    "TOKEN_DIR",
    "TOKEN_KEY",
    "UID",
    "WORKSPACE_DIR",
    "WORKSPACE_SIZE",
    "args",
    "token_path",
]

COMMAND = ("python", "-m", "a01gym.sandbox.inside.control")
PORT = 8080
"""The supervisor's TCP port inside the container."""
UID = 10001
"""The non-root uid and gid everything in the container runs as."""
WORKSPACE_DIR = "/sandbox"
"""Writable, size-limited: the supervisor's directory (workspace, app data)."""
WORKSPACE_SIZE = "256Mi"
TMP_DIR = "/tmp"
TMP_SIZE = "64Mi"
TOKEN_DIR = "/var/run/a01gym"
"""Read-only: the directory the supervisor's token is mounted in."""
TOKEN_KEY = "token"
"""The token's file name there (and its key in a pod's Secret)."""


def token_path() -> str:
    return f"{TOKEN_DIR}/{TOKEN_KEY}"


def args(port: int = PORT) -> list[str]:
    """The supervisor's arguments (the image's ``CMD``)."""
    return ["--dir", f"{WORKSPACE_DIR}/root", "--port", str(port), "--token-file", token_path()]
