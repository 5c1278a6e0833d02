"""F08: export and report endpoints that return every record."""

from __future__ import annotations

from a01gym.factory.families.base import OWASP_A01, Family

__all__ = ["FAMILY"]

FAMILY = Family(
    "F08",
    "Missing owner filter on export/report endpoints",
    "CWE-200",
    ("CWE-200", "CWE-359", "CWE-862"),
    OWASP_A01,
    ("record.export", "record.digest"),
    ("deny_all", "over_filter", "delete_route"),
)
