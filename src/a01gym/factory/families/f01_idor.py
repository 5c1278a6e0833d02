"""F01 (IDOR on a path parameter): an authenticated read that never compares the owner."""

from __future__ import annotations

from a01gym.factory.families.base import OWASP_A01, Family

__all__ = ["FAMILY"]

FAMILY = Family(
    "F01",
    "IDOR on a path parameter (read)",
    "CWE-639",
    ("CWE-639", "CWE-566", "CWE-862"),
    OWASP_A01,
    ("record.read", "record.print"),
    ("deny_all", "delete_route", "status_only", "client_trust", "hardcode", "admin_break"),
)
