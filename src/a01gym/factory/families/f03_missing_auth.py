"""F03: one route lacks the authentication dependency its siblings have."""

from __future__ import annotations

from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import public_guide

__all__ = ["FAMILY"]

FAMILY = Family(
    "F03",
    "Missing authentication dependency on one route",
    "CWE-862",
    ("CWE-862", "CWE-306"),
    OWASP_A01,
    ("record.print", "record.export"),
    ("deny_all", "delete_route", "auth_only", "global_auth"),
    regressions=public_guide,
    unauthenticated=("record.print", "record.export"),
)
