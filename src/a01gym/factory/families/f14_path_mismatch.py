"""F14: a path-prefix guard that misses the legacy aliases the admin router is mounted at."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R, public_guide
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "LEGACY_PREFIXES"]

LEGACY_PREFIXES = {"guard.v1": "/api/v1/admin", "guard.legacy": "/v1/admin"}
"""Site -> the alias prefix the admin router is also mounted at."""


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    adm = cast.admin
    tests = public_guide(cast)
    tests.append(
        testkit.read_test(
            "regression.admin_audit",
            R,
            adm,
            "/admin/audit",
            "audit",
            description="an administrator reads the audit log",
        )
    )
    for site, prefix in LEGACY_PREFIXES.items():
        tests.append(
            testkit.read_test(
                f"regression.admin_alias.{site}",
                R,
                adm,
                f"{prefix}/audit",
                "audit",
                description=f"documented clients still use {prefix}",
            )
        )
    return tests


FAMILY = Family(
    "F14",
    "Guard/route path mismatch (legacy alias prefix)",
    "CWE-425",
    ("CWE-425", "CWE-706", "CWE-288"),
    OWASP_A01,
    tuple(LEGACY_PREFIXES),
    ("deny_all", "delete_route", "over_block"),
    indirections=("middleware",),
    regressions=_regressions,
)
