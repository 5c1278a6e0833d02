"""One error tree for the whole package.

Each edge translates these exactly once: the gateway into protocol error codes, the operator
into kopf errors, the CLI into exit code 1 and a single readable line. An agent's mistake is an
observation, never one of these.

    A01GymError
    ├── ConfigError
    ├── ScenarioError
    │   └── BundleError
    ├── SandboxError
    │   ├── SandboxStartError
    │   ├── SandboxTimeoutError
    │   ├── SandboxCapacityError
    │   ├── SandboxLostError
    │   └── IsolationError
    ├── EpisodeError
    └── UnreachableError
"""

from __future__ import annotations

import re

__all__ = [
    "A01GymError",
    "BundleError",
    "ConfigError",
    "EpisodeError",
    "IsolationError",
    "SandboxCapacityError",
    "SandboxError",
    "SandboxLostError",
    "SandboxStartError",
    "SandboxTimeoutError",
    "ScenarioError",
    "UnreachableError",
]


class A01GymError(Exception):
    """Base of every error this package raises on purpose.

    Subclasses build their own message from structured fields, and ``hint`` says what to do next.
    """

    hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        if hint is not None:
            self.hint = hint
        super().__init__(message)

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base} ({self.hint})" if self.hint else base


class ConfigError(A01GymError):
    """A setting or config file is invalid; the message names the field."""

    def __init__(self, field: str, problem: str, *, hint: str | None = None) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"invalid config field {field!r}: {problem}", hint=hint)


class ScenarioError(A01GymError):
    """A scenario, spec or test definition is malformed."""


class BundleError(ScenarioError):
    """A bundle cannot be loaded, or its content does not match its hash."""

    def __init__(self, source: str, problem: str, *, hint: str | None = None) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"bundle {source}: {problem}", hint=hint)


class SandboxError(A01GymError):
    """Something went wrong with a sandbox (not with the agent's code inside it)."""

    def __init__(self, message: str, *, sandbox_id: str | None = None, hint: str | None = None):
        self.sandbox_id = sandbox_id
        prefix = f"sandbox {sandbox_id}: " if sandbox_id else ""
        super().__init__(prefix + message, hint=hint)


class SandboxStartError(SandboxError):
    """A sandbox could not be started."""


class SandboxTimeoutError(SandboxError):
    """A sandbox did not answer in time."""


class SandboxCapacityError(SandboxError):
    """No more sandboxes can be created on this backend."""


class SandboxLostError(SandboxError):
    """A sandbox died or vanished while in use."""


class IsolationError(SandboxError):
    """The required isolation is not available and the config refuses to run without it."""


class EpisodeError(A01GymError):
    """An episode was used in a way its state does not allow (e.g. reset never called)."""


_TOKEN_PATH = re.compile(r"/t/[^/?#\s]+")


class UnreachableError(A01GymError):
    """A gateway or model endpoint does not answer; nothing useful can run until it does."""

    def __init__(self, endpoint: str, problem: str, *, hint: str | None = None) -> None:
        # a gateway token leading the path (``/t/<token>``) never reaches a message or a log
        self.endpoint = _TOKEN_PATH.sub("/t/***", endpoint)
        self.problem = _TOKEN_PATH.sub("/t/***", problem)
        super().__init__(f"cannot reach {self.endpoint}: {self.problem}", hint=hint)
