"""Declarative HTTP tests: a test is data, never code.

A test is a list of steps (actor, method, path, headers, query, body), each with
*preconditions* (``require``: when one fails the test is **inconclusive**) and *verdict*
assertions (``expect``: when one fails the test **fails**), plus database checks read through
a read-only query before and after the steps.

Exploit tests describe the attack succeeding: they *pass* on a vulnerable app and *fail* on a
fixed one. Regression tests describe legitimate use and pass on both. Guard tests describe an
attack on a rule the vulnerable app already enforces: they fail on both, and pass only on an
edit that opened a new hole. Scoring fails closed: an inconclusive exploit or guard counts as
not blocked and an inconclusive regression as not passed.

JSON paths are dotted (``items.0.owner``); that is all our generated tests need, so we do not
pull in a JSONPath library.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "NOT_JSON",
    "Assertion",
    "BodyContains",
    "BodyLacks",
    "DbCheck",
    "HttpTest",
    "JsonEquals",
    "JsonLength",
    "Outcome",
    "RoutesInclude",
    "StatusIn",
    "Step",
    "StepEvidence",
    "TestKind",
    "TestResult",
    "check_assertion",
    "json_path",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StatusIn(_Model):
    """The response status is one of ``statuses``."""

    type: Literal["status_in"] = "status_in"
    statuses: list[int] = Field(min_length=1)


class BodyContains(_Model):
    """The response body or headers contain ``value`` (typically a canary)."""

    type: Literal["body_contains"] = "body_contains"
    value: str = Field(min_length=1)


class BodyLacks(_Model):
    """Neither the response body nor its headers contain ``value``."""

    type: Literal["body_lacks"] = "body_lacks"
    value: str = Field(min_length=1)


class JsonEquals(_Model):
    """The JSON value at ``path`` equals ``value``."""

    type: Literal["json_equals"] = "json_equals"
    path: str
    value: Any


class JsonLength(_Model):
    """The JSON list at ``path`` has between ``min`` and ``max`` items."""

    type: Literal["json_length"] = "json_length"
    path: str = ""
    min: int = 0
    max: int | None = None


class RoutesInclude(_Model):
    """The OpenAPI document in the body lists every ``"METHOD /path"`` in ``routes``.

    ``routes`` left out means the scenario's own inventory (``Manifest.routes``), which the
    runner fills in, so a bundle records its inventory once.
    """

    type: Literal["routes_include"] = "routes_include"
    routes: list[str] | None = Field(None, min_length=1)


Assertion = Annotated[
    StatusIn | BodyContains | BodyLacks | JsonEquals | JsonLength | RoutesInclude,
    Field(discriminator="type"),
]


class Step(_Model):
    """One HTTP request made as one actor."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    actor: str = "anonymous"
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    path: str = Field(pattern=r"^/")
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, Any] = Field(default_factory=dict)
    json_body: Any = Field(default=None, alias="json")
    body: str | None = None
    require: list[Assertion] = Field(default_factory=list)
    expect: list[Assertion] = Field(default_factory=list)
    save: dict[str, str] = Field(
        default_factory=dict, description="variable name -> JSON path, used as {{var:name}}"
    )

    @field_validator("headers", mode="before")
    @classmethod
    def _header_values_are_text(cls, value: Any) -> Any:
        # A header that is exactly "{{id:x}}" renders to an int; on the wire it is text.
        if isinstance(value, dict):
            return {k: v if isinstance(v, str) else str(v) for k, v in value.items()}
        return value


class DbCheck(_Model):
    """A read-only query run before and after the steps, from outside the app."""

    sql: str
    params: list[Any] = Field(default_factory=list)
    expect: Literal["unchanged", "changed", "equals"] = "unchanged"
    rows: list[list[Any]] | None = Field(default=None, description="Rows for expect='equals'.")


class TestKind(enum.StrEnum):
    __test__ = False  # not a pytest class

    EXPLOIT = "exploit"
    REGRESSION = "regression"
    GUARD = "guard"


class HttpTest(_Model):
    """A declarative test; every string may hold fixture placeholders."""

    __test__ = False  # not a pytest class

    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: TestKind
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    db_checks: list[DbCheck] = Field(default_factory=list)


class Outcome(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


class StepEvidence(BaseModel):
    """What one step sent and got back, trimmed."""

    actor: str
    method: str
    path: str
    status: int | None = None
    body: str = ""
    error: str | None = None


class TestResult(BaseModel):
    """The outcome of one test with the evidence behind it."""

    __test__ = False

    test_id: str
    kind: TestKind
    outcome: Outcome
    reason: str = ""
    evidence: list[StepEvidence] = Field(default_factory=list)
    duration_ms: float = 0.0


NOT_JSON: Any = object()
"""Passed as ``document`` when a response body is not JSON."""


def json_path(document: Any, path: str) -> Any:
    """Resolve a dotted path (``items.0.id``); raises ``KeyError`` on a miss."""
    current = document
    for part in (p for p in path.split(".") if p):
        if isinstance(current, list):
            if not part.lstrip("-").isdigit() or not -len(current) <= int(part) < len(current):
                raise KeyError(path)
            current = current[int(part)]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise KeyError(path)
    return current


def _openapi_routes(document: Any) -> set[str]:
    routes: set[str] = set()
    if isinstance(document, dict):
        for path, item in (document.get("paths") or {}).items():
            if isinstance(item, dict):
                routes.update(f"{method.upper()} {path}" for method in item)
    return routes


def check_assertion(
    assertion: Assertion, status: int, text: str, headers_text: str, document: Any
) -> str | None:
    """Check one rendered assertion against a response.

    Returns:
        ``None`` when it holds, else a short reason (safe to show with the evidence).
    """
    if isinstance(assertion, StatusIn):
        ok = status in assertion.statuses
        return None if ok else f"status {status} not in {assertion.statuses}"
    if isinstance(assertion, BodyContains):
        ok = assertion.value in text or assertion.value in headers_text
        return None if ok else f"response lacks {assertion.value!r}"
    if isinstance(assertion, BodyLacks):
        leaked = assertion.value in text or assertion.value in headers_text
        return f"response contains {assertion.value!r}" if leaked else None
    if document is NOT_JSON:
        return "response is not JSON"
    if isinstance(assertion, JsonEquals):
        try:
            actual = json_path(document, assertion.path)
        except KeyError:
            return f"no JSON value at {assertion.path!r}"
        return None if actual == assertion.value else f"{assertion.path!r} is {actual!r}"
    if isinstance(assertion, JsonLength):
        try:
            actual = json_path(document, assertion.path)
        except KeyError:
            return f"no JSON value at {assertion.path!r}"
        if not isinstance(actual, list):
            return f"{assertion.path!r} is not a list"
        too_many = assertion.max is not None and len(actual) > assertion.max
        ok = len(actual) >= assertion.min and not too_many
        return None if ok else f"{assertion.path or 'body'!r} has {len(actual)} items"
    if not assertion.routes:
        return "no route inventory to check against"  # fails closed: nothing was recorded
    missing = sorted(set(assertion.routes) - _openapi_routes(document))
    return None if not missing else f"routes missing: {', '.join(missing)}"
