"""F13: a multi-verb route whose guard checks only one of its verbs."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    settings_sql = "SELECT retention_days FROM tenant_settings WHERE tenant_id = ?"
    tests = [
        testkit.write_test(
            f"regression.admin_settings_{method.lower()}",
            R,
            cast.admin,
            method,
            "/tenant/settings",
            settings_sql,
            [testkit.id_of("tenant_a")],
            body={"retention_days": days},
            statuses=[200],
            description=f"an administrator changes settings with {method}",
        )
        for method, days in (("PUT", 30), ("PATCH", 60))
    ]
    tests.append(
        testkit.read_test(
            "regression.member_settings",
            R,
            cast.peer,
            "/tenant/settings",
            "webhook_a",
            description="members read their tenant's settings",
        )
    )
    return tests


FAMILY = Family(
    "F13",
    "HTTP method confusion (guard checks one verb of a multi-verb route)",
    "CWE-650",
    ("CWE-650", "CWE-285", "CWE-862"),
    OWASP_A01,
    ("settings.update",),
    ("deny_all", "delete_route", "client_trust", "hardcode"),
    regressions=_regressions,
)
