"""The gateway's one error-translation table: exception → protocol code and HTTP status.

Errors are translated exactly once, here, at the edge: WebSocket replies use the OpenEnv codes
(``VALIDATION_ERROR``, ``EXECUTION_ERROR``, …), HTTP replies the matching status, JSON-RPC the
matching error code. Agent mistakes never get here: the environment turns them into
observations.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pydantic import ValidationError

from a01gym.errors import (
    A01GymError,
    EpisodeError,
    SandboxCapacityError,
    SandboxError,
    ScenarioError,
)

__all__ = [
    "CAPACITY_REACHED",
    "EXECUTION_ERROR",
    "FACTORY_ERROR",
    "INVALID_JSON",
    "SESSION_ERROR",
    "UNKNOWN_TYPE",
    "VALIDATION_ERROR",
    "Fault",
    "translate",
]

logger = logging.getLogger(__name__)

INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"


@dataclasses.dataclass(frozen=True)
class Fault:
    """A translated error."""

    code: str
    status: int
    message: str
    rpc_code: int
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def ws(self) -> dict[str, Any]:
        """The ``{"type":"error"}`` frame."""
        return {"type": "error", "data": {"message": self.message, "code": self.code, **self.extra}}


_TABLE: tuple[tuple[type[BaseException], str, int, int], ...] = (
    (ValidationError, VALIDATION_ERROR, 422, -32602),
    (ScenarioError, VALIDATION_ERROR, 400, -32602),
    (SandboxCapacityError, EXECUTION_ERROR, 503, -32000),
    (SandboxError, EXECUTION_ERROR, 503, -32000),
    (EpisodeError, SESSION_ERROR, 409, -32000),
    (A01GymError, EXECUTION_ERROR, 500, -32603),
)


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    return [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()[:20]]


def translate(exc: BaseException) -> Fault:
    """The protocol error for ``exc``; unexpected exceptions are logged with a traceback."""
    for kind, code, status, rpc in _TABLE:
        if isinstance(exc, kind):
            if isinstance(exc, ValidationError):
                errors = _errors(exc)
                first = errors[0] if errors else {"loc": [], "msg": "invalid"}
                where = ".".join(str(p) for p in first["loc"]) or "(message)"
                message = f"Invalid message: {where}: {first['msg']}"
                return Fault(code, status, message, rpc, {"errors": errors})
            return Fault(code, status, str(exc), rpc)
    logger.error("unexpected error", exc_info=exc)
    return Fault(EXECUTION_ERROR, 500, f"internal error: {type(exc).__name__}", -32603)
