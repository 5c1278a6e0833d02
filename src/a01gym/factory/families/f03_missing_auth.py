"""F03: one route lacks the authentication dependency its siblings have."""

from __future__ import annotations

from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import public_guide

__all__ = ["FAMILY"]

FAMILY = Family(
    id="F03",
    title="Missing authentication dependency on one route",
    cwes=("CWE-862", "CWE-306"),
    sites=("record.print", "record.export"),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.DELETE_ROUTE,
        vocabulary.AUTH_ONLY,
        vocabulary.GLOBAL_AUTH,
    ),
    regressions=public_guide,
    unauthenticated=("record.print", "record.export"),
)
