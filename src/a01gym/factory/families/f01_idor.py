"""F01 (IDOR on a path parameter): an authenticated read that never compares the owner."""

from __future__ import annotations

from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family

__all__ = ["FAMILY"]

FAMILY = Family(
    id="F01",
    title="IDOR on a path parameter (read)",
    cwes=("CWE-639", "CWE-566", "CWE-862"),
    sites=("record.read", "record.print"),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.DELETE_ROUTE,
        vocabulary.STATUS_ONLY,
        vocabulary.CLIENT_TRUST,
        vocabulary.HARDCODE,
        vocabulary.ADMIN_BREAK,
    ),
)
